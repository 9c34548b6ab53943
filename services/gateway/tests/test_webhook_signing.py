"""Webhook bodies, signatures, retry delays and the targets deliveries may go to."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from mnemo_gateway.webhooks import signing, targets
from mnemo_gateway.webhooks.dispatcher import retryable


def test_the_signature_is_hex_hmac_sha256_of_the_body():
    # RFC 4231, test case 2.
    key, data = SecretStr("Jefe"), b"what do ya want for nothing?"
    expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert signing.signature(data, key) == expected
    assert signing.verify(data, expected, key)
    assert not signing.verify(data + b" ", expected, key)
    assert not signing.verify(data, expected, SecretStr("jefe"))


def test_the_body_is_compact_json_with_sorted_keys():
    at = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    raw = signing.body("test.event", {"workspace_id": "w", "a": None}, at)
    assert raw == (
        b'{"data":{"a":null,"workspace_id":"w"},'
        b'"timestamp":"2026-01-02T03:04:05.678901+00:00","type":"test.event"}'
    )
    parsed = json.loads(raw)
    assert json.dumps(parsed, separators=(",", ":"), sort_keys=True).encode() == raw
    secret = SecretStr("s3cret")
    assert signing.signature(raw, secret) == hmac.new(b"s3cret", raw, hashlib.sha256).hexdigest()


def test_backoff_doubles_up_to_the_cap_with_jitter_in_the_upper_half():
    low = [signing.backoff_s(n, 1.0, 10.0, rand=lambda: 0.0) for n in range(1, 7)]
    high = [signing.backoff_s(n, 1.0, 10.0, rand=lambda: 1.0) for n in range(1, 7)]
    assert high == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert low == [h / 2 for h in high]
    assert signing.backoff_s(3, 1.0, 10.0, rand=lambda: 0.5) == 3.0


def test_network_errors_5xx_and_429_are_retried_other_answers_not():
    assert retryable(None) and retryable(500) and retryable(503) and retryable(429)
    assert not retryable(400) and not retryable(404) and not retryable(410)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/x",
        "http://metadata.google.internal/computeMetadata/v1/",
    ],
)
def test_link_local_and_metadata_targets_are_refused_unless_allowed(url):
    with pytest.raises(targets.UnsafeTarget):
        asyncio.run(targets.check(url, allow_link_local=False))
    asyncio.run(targets.check(url, allow_link_local=True))


def test_ordinary_targets_pass():
    asyncio.run(targets.check("http://127.0.0.1:9/hook", allow_link_local=False))
    asyncio.run(targets.check("https://10.1.2.3/hook", allow_link_local=False))

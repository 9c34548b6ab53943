"""The body of a delivery and its signature, as the Honcho API makes them.

The body is ``{"data", "timestamp", "type"}`` as compact JSON with sorted keys; the signature is
the hex HMAC-SHA256 of exactly those bytes with the webhook secret, sent as
``X-Honcho-Signature``. A receiver verifies the raw bytes it received (``verify``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pydantic import SecretStr

SIGNATURE_HEADER = "X-Honcho-Signature"


def body(event_type: str, data: dict[str, Any], timestamp: datetime) -> bytes:
    """The delivery's bytes."""
    payload = {"type": event_type, "data": data, "timestamp": timestamp.isoformat()}
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def signature(raw: bytes, secret: SecretStr) -> str:
    """Hex HMAC-SHA256 of ``raw`` with ``secret``."""
    return hmac.new(secret.get_secret_value().encode(), raw, hashlib.sha256).hexdigest()


def verify(raw: bytes, given: str, secret: SecretStr) -> bool:
    """Whether ``given`` is the signature of ``raw`` (constant-time)."""
    return hmac.compare_digest(signature(raw, secret), given)


def backoff_s(
    attempt: int, base: float, cap: float, rand: Callable[[], float] = random.random
) -> float:
    """The wait before retrying after failed ``attempt`` (1, 2, ...): exponential, capped, with
    equal jitter (between half and all of ``base * 2**(attempt-1)``), so that receivers that
    failed together are not retried together."""
    step = min(cap, base * 2.0 ** max(0, attempt - 1))
    return float(step / 2 + rand() * step / 2)

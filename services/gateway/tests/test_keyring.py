"""Keys are minted and verified with pyjwt: what a gateway accepts, and why it refuses the rest."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from nats.aio.client import Client as NATS
from pydantic import SecretStr
from structlog.testing import capture_logs

from mnemo_gateway.auth.authority import Authority, bearer
from mnemo_gateway.auth.keyring import Keyring, generate_keys
from mnemo_gateway.auth.revocations import Revocations
from mnemo_gateway.auth.settings import AuthSettings
from mnemo_schema.errors import Refusal
from mnemo_schema.keys import KeyRevoked, KeyScope, RevokeKey

SECRET = SecretStr("s" * 40)


def _refused(keyring: Keyring, token: str) -> str:
    with pytest.raises(Refusal) as err:
        keyring.verify(token)
    assert err.value.status == 401 and err.value.field == "authorization"
    return err.value.detail


def test_a_minted_key_verifies_to_its_claims() -> None:
    ring = Keyring(Ed25519PrivateKey.generate())
    until = datetime.now(UTC) + timedelta(hours=1)
    token, claims = ring.mint(KeyScope.PEER, "w", peer="alice", expires_at=until)
    assert ring.verify(token) == claims
    assert (claims.scope, claims.workspace, claims.peer, claims.session) == (
        KeyScope.PEER,
        "w",
        "alice",
        None,
    )
    assert claims.expires_at == int(until.timestamp())
    assert jwt.get_unverified_header(token)["alg"] == "EdDSA"
    # The reference server's claim names.
    assert {"w", "p", "jti", "iat", "exp"} <= set(
        jwt.decode(token, options={"verify_signature": False})
    )


def test_a_gateway_holding_only_the_public_key_verifies_but_cannot_mint(tmp_path: Path) -> None:
    generate_keys(tmp_path)
    assert (tmp_path / "signing.pem").stat().st_mode & 0o777 == 0o600
    minter = Keyring.load(AuthSettings(MNEMO_AUTH="on", keys_dir=tmp_path))
    token, claims = minter.mint(KeyScope.ADMIN)
    (tmp_path / "signing.pem").unlink()
    verifier = Keyring.load(AuthSettings(MNEMO_AUTH="on", keys_dir=tmp_path))
    assert verifier.can_verify and not verifier.can_sign
    assert verifier.verify(token) == claims
    with pytest.raises(Refusal) as err:
        verifier.mint(KeyScope.WORKSPACE, "w")
    assert err.value.status == 501


def test_hs256_with_a_shared_secret() -> None:
    ring = Keyring(secret=SECRET)
    token, claims = ring.mint(KeyScope.SESSION, "w", session="s")
    assert jwt.get_unverified_header(token)["alg"] == "HS256"
    assert ring.verify(token) == claims
    assert "wrongly signed" in _refused(Keyring(secret=SecretStr("t" * 40)), token)
    with pytest.raises(ValueError, match="at least 32 bytes"):
        Keyring(secret=SecretStr("short"))


def test_wrongly_signed_malformed_unsigned_and_foreign_keys_are_401() -> None:
    ring = Keyring(Ed25519PrivateKey.generate())
    other = Keyring(Ed25519PrivateKey.generate())
    token, _ = other.mint(KeyScope.ADMIN)
    assert "does not know" in _refused(ring, token)  # another key's kid
    header, payload, _sig = ring.mint(KeyScope.ADMIN)[0].split(".")
    assert "wrongly signed" in _refused(ring, f"{header}.{payload}.{_sig[:-4]}AAAA")
    assert "malformed" in _refused(ring, "not-a-key")
    unsigned = jwt.encode({"jti": "k", "iat": int(time.time()), "ad": True}, None, algorithm="none")
    assert "'none' are not accepted" in _refused(ring, unsigned)
    # A public key is never taken for an HMAC secret, and HS256 is refused without one.
    forged = jwt.encode({"jti": "k", "iat": int(time.time()), "ad": True}, "x" * 40, "HS256")
    assert "'HS256' are not accepted" in _refused(ring, forged)


def test_expired_keys_and_keys_without_mnemo_claims_are_401() -> None:
    key = Ed25519PrivateKey.generate()
    ring = Keyring(key)
    now = int(time.time())
    expired = jwt.encode({"jti": "k", "iat": now - 10, "exp": now - 1, "ad": True}, key, "EdDSA")
    assert "expired" in _refused(ring, expired)
    for claims in (
        {"jti": "k", "iat": now},  # neither admin nor a workspace
        {"jti": "k", "iat": now, "ad": True, "w": "w"},
        {"jti": "k", "iat": now, "w": "w", "p": "a", "s": "s"},
        {"jti": "k", "iat": now, "w": "bad id"},
        {"iat": now, "ad": True},  # no key id to revoke it by
    ):
        assert "not" in _refused(ring, jwt.encode(claims, key, "EdDSA")), claims


def test_the_authority_caches_verification_but_checks_expiry_every_time() -> None:
    ring = Keyring(Ed25519PrivateKey.generate())
    now = [time.time()]
    authority = Authority(ring, None, clock=lambda: now[0])
    soon = datetime.now(UTC) + timedelta(seconds=60)
    token, claims = ring.mint(KeyScope.WORKSPACE, "w", expires_at=soon)
    assert authority.authenticate(token) == claims
    assert authority.authenticate(token) is authority.authenticate(token)  # remembered
    now[0] += 61  # the remembered key expires all the same
    with pytest.raises(Refusal, match="expired"):
        authority.authenticate(token)
    with pytest.raises(Refusal, match="a key is required"):
        authority.authenticate(None)


def test_bearer_headers() -> None:
    assert bearer("Bearer abc") == "abc" and bearer("bearer  abc ") == "abc"
    assert bearer(None) is None
    for bad in ("Basic abc", "Bearer", "abc"):
        with pytest.raises(Refusal):
            bearer(bad)


def test_auth_is_on_unless_turned_off_and_then_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMO_AUTH", raising=False)
    assert AuthSettings().enabled
    monkeypatch.setenv("MNEMO_AUTH", "OFF")
    assert not AuthSettings().enabled
    with pytest.raises(RuntimeError, match="no key to verify with"):
        Authority(Keyring(), None)


def test_with_auth_off_every_start_warns_and_every_caller_is_let_in() -> None:
    with capture_logs() as logs:
        authority = Authority.build(AuthSettings(MNEMO_AUTH="off"), NATS().jetstream())
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["gateway.auth_off"]
    chat = ("POST", "/v3/workspaces/{workspace_id}/peers/{peer_id}/chat")
    assert authority.authorise(None, chat, {"workspace_id": "w", "peer_id": "p"}).scope is None
    with pytest.raises(Refusal) as err:
        authority.signer()
    assert err.value.status == 501


def test_a_revocation_is_kept_until_the_key_would_have_expired() -> None:
    revoked = Revocations(NATS().jetstream())
    now = datetime.now(UTC)
    for key_id, expires in (
        ("past", now - timedelta(seconds=1)),
        ("soon", now + timedelta(hours=1)),
        ("never", None),
    ):
        revoked.add(KeyRevoked.of(RevokeKey(key_id=key_id, expires_at=expires)))
    assert "past" not in revoked and "soon" in revoked and "never" in revoked
    ring = Keyring(Ed25519PrivateKey.generate())
    authority = Authority(ring, revoked)
    token, claims = ring.mint(KeyScope.WORKSPACE, "w")
    revoked.add(KeyRevoked.of(RevokeKey(key_id=claims.key_id)))
    with pytest.raises(Refusal, match="revoked"):
        authority.authenticate(token)

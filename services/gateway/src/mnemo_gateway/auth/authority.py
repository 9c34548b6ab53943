"""Keys to principals: verification (cached), expiry, revocation, then the policy.

``Authority.authorise(token, operation, ids)`` is the one call every edge makes. A verified key's
claims are remembered by its text (a signature's verdict never changes), so a request pays a
dictionary lookup rather than an Ed25519 verification (about 125 µs); expiry and revocation are
checked on every request all the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from nats.js import JetStreamContext

from mnemo_gateway.auth import policy
from mnemo_gateway.auth.keyring import Claims, Keyring, unauthorised
from mnemo_gateway.auth.policy import ANYONE, Operation, Principal
from mnemo_gateway.auth.revocations import Revocations
from mnemo_gateway.auth.settings import AuthSettings
from mnemo_runtime.logging import get_logger
from mnemo_schema.errors import Refusal

log = get_logger("mnemo.gateway")

MAX_TOKEN_CHARS = 4096
_CACHE_SIZE = 4096


def bearer(header: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header (None without the header)."""
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorised("expected 'Bearer <key>'")
    return token.strip()


class Authority:
    """Decides, for every request, who is calling and whether it may."""

    def __init__(
        self,
        keyring: Keyring | None,
        revocations: Revocations | None,
        enabled: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if enabled and (keyring is None or not keyring.can_verify):
            raise RuntimeError(
                "authentication is on (MNEMO_AUTH) but no key to verify with was found: set"
                " MNEMO_AUTH_KEYS_DIR to a folder holding verify.pem (or signing.pem, or secret),"
                " or MNEMO_AUTH_SECRET; `mnemo up` makes them. MNEMO_AUTH=off turns it off."
            )
        self.enabled = enabled
        self.keyring = keyring
        self.revocations = revocations
        self._verified: dict[str, Claims] = {}
        self._clock = clock

    @classmethod
    def build(cls, settings: AuthSettings, js: JetStreamContext) -> Authority:
        """From the settings; without authentication, warns that every caller may do anything."""
        if not settings.enabled:
            log.warning(
                "gateway.auth_off",
                detail="MNEMO_AUTH=off: no key is asked for; every caller may read, write and"
                " delete every workspace",
            )
            return cls(None, None, enabled=False)
        return cls(Keyring.load(settings), Revocations(js))

    async def start(self) -> None:
        """Read the revocations before the first request is answered."""
        if self.revocations is not None:
            await self.revocations.start()

    async def stop(self) -> None:
        if self.revocations is not None:
            await self.revocations.stop()

    def authenticate(self, token: str | None) -> Claims:
        """The claims of a valid key; a 401 for a missing, malformed, expired or revoked one."""
        if token is None:
            raise unauthorised("a key is required: send 'Authorization: Bearer <key>'")
        claims = self._verified.get(token)
        if claims is None:
            if len(token) > MAX_TOKEN_CHARS:
                raise unauthorised("not a valid key (too long)")
            assert self.keyring is not None  # enabled implies a keyring
            claims = self.keyring.verify(token)
            if len(self._verified) >= _CACHE_SIZE:
                del self._verified[next(iter(self._verified))]
            self._verified[token] = claims
        if claims.expired(self._clock()):
            raise unauthorised("the key has expired")
        if self.revocations is not None and claims.key_id in self.revocations:
            raise unauthorised("the key has been revoked")
        return claims

    def authorise(
        self, token: str | None, operation: Operation, ids: Mapping[str, str | None]
    ) -> Principal:
        """Who calls ``operation`` on ``ids`` with ``token``; a 401 or 403 refusal if nobody."""
        if not self.enabled:
            return ANYONE
        rule = policy.rule_of(operation)
        if rule is not None and rule.public:
            return ANYONE
        return policy.authorise(self.authenticate(token), operation, ids)

    def signer(self) -> Keyring:
        """The keyring that mints keys here (a 501 refusal where none can be minted)."""
        if self.keyring is None:
            raise Refusal(501, "authentication is off here (MNEMO_AUTH=off): it mints no keys")
        return self.keyring

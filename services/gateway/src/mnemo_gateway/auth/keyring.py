"""Signing and verifying bearer keys (JWTs, with pyjwt).

A key's claims use the reference server's names, so its keys read the same: ``ad`` (admin),
``w`` (workspace), ``p`` (peer), ``s`` (session), with the standard ``jti`` (the key id, which
revocation names), ``iat`` and ``exp`` (seconds since the epoch; absent: no expiry).

Ed25519 (``EdDSA``) signatures let a gateway verify keys with a public key alone; only whoever
mints keys holds the private one. An HS256 shared secret is accepted too. The algorithm is taken
from the token's header, but only one this keyring holds a key for is ever tried (never
``none``), each with its own key, so a public key can never be used as an HMAC secret.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError, model_validator

from mnemo_gateway.auth.settings import AuthSettings
from mnemo_runtime.private_files import write_private
from mnemo_schema.errors import Refusal
from mnemo_schema.ids import EntityId
from mnemo_schema.keys import KeyScope

SIGNING_FILE = "signing.pem"
VERIFY_FILE = "verify.pem"
SECRET_FILE = "secret"
MIN_SECRET_BYTES = 32
FIELD = "authorization"


def unauthorised(reason: str) -> Refusal:
    """A 401 naming the Authorization header."""
    return Refusal(401, f"{FIELD}: {reason}", FIELD)


@dataclass(frozen=True)
class Claims:
    """What a verified key says of itself."""

    key_id: str
    scope: KeyScope
    workspace: str | None = None
    peer: str | None = None
    session: str | None = None
    expires_at: int | None = None  # seconds since the epoch

    def expired(self, now: float) -> bool:
        """Whether the key's expiry has passed at ``now`` (seconds since the epoch)."""
        return self.expires_at is not None and now >= self.expires_at


class _Payload(BaseModel):
    """The claims a Mnemo key carries; anything else a token holds is ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    jti: EntityId
    iat: int
    exp: int | None = None
    ad: bool = False
    w: EntityId | None = None
    p: EntityId | None = None
    s: EntityId | None = None

    @model_validator(mode="after")
    def _one_scope(self) -> _Payload:
        if self.ad and (self.w or self.p or self.s):
            raise ValueError("an admin key names no workspace, peer or session")
        if not self.ad and self.w is None:
            raise ValueError("a key names a workspace unless it is an admin key")
        if self.p is not None and self.s is not None:
            raise ValueError("a key names a peer or a session, not both")
        return self

    def claims(self) -> Claims:
        scope = (
            KeyScope.ADMIN
            if self.ad
            else KeyScope.PEER
            if self.p is not None
            else KeyScope.SESSION
            if self.s is not None
            else KeyScope.WORKSPACE
        )
        return Claims(self.jti, scope, self.w, self.p, self.s, self.exp)


def key_id_of(public: Ed25519PublicKey) -> str:
    """A short, stable id of a public key (the ``kid`` header of what it verifies)."""
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class Keyring:
    """The keys one process signs with (optional) and verifies with."""

    def __init__(
        self,
        signing: Ed25519PrivateKey | None = None,
        verifying: list[Ed25519PublicKey] | None = None,
        secret: SecretStr | None = None,
    ) -> None:
        self._signing = signing
        self._public = {key_id_of(k): k for k in verifying or []}
        if signing is not None:
            self._public[key_id_of(signing.public_key())] = signing.public_key()
        if secret is not None and len(secret.get_secret_value().encode()) < MIN_SECRET_BYTES:
            raise ValueError(f"the HS256 secret must be at least {MIN_SECRET_BYTES} bytes")
        self._secret = secret

    @classmethod
    def load(cls, settings: AuthSettings) -> Keyring:
        """The keys of ``settings`` (the keys folder, then ``MNEMO_AUTH_SECRET``)."""
        signing = None
        verifying: list[Ed25519PublicKey] = []
        secret = settings.secret
        folder = settings.keys_dir
        if folder is not None:
            if not folder.is_dir():
                raise RuntimeError(f"MNEMO_AUTH_KEYS_DIR {folder} is not a folder")
            if (folder / SIGNING_FILE).exists():
                key = serialization.load_pem_private_key(
                    (folder / SIGNING_FILE).read_bytes(), password=None
                )
                if not isinstance(key, Ed25519PrivateKey):
                    raise RuntimeError(f"{folder / SIGNING_FILE}: not an Ed25519 private key")
                signing = key
            for path in sorted(folder.glob("verify*.pem")):
                public = serialization.load_pem_public_key(path.read_bytes())
                if not isinstance(public, Ed25519PublicKey):
                    raise RuntimeError(f"{path}: not an Ed25519 public key")
                verifying.append(public)
            if secret is None and (folder / SECRET_FILE).exists():
                secret = SecretStr((folder / SECRET_FILE).read_text().strip())
        return cls(signing, verifying, secret)

    @property
    def can_verify(self) -> bool:
        """Whether this keyring holds any key to verify with."""
        return bool(self._public) or self._secret is not None

    @property
    def can_sign(self) -> bool:
        """Whether this keyring can mint keys."""
        return self._signing is not None or self._secret is not None

    def mint(
        self,
        scope: KeyScope,
        workspace: str | None = None,
        peer: str | None = None,
        session: str | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[str, Claims]:
        """A new key and its claims; Ed25519-signed when this keyring holds that key."""
        payload: dict[str, object] = {"jti": secrets.token_urlsafe(16), "iat": int(time.time())}
        if expires_at is not None:
            payload["exp"] = int(expires_at.timestamp())
        if scope is KeyScope.ADMIN:
            payload["ad"] = True
        else:
            payload |= {k: v for k, v in (("w", workspace), ("p", peer), ("s", session)) if v}
        claims = _Payload.model_validate(payload).claims()  # the same rules as verify()
        if self._signing is not None:
            kid = key_id_of(self._signing.public_key())
            token = jwt.encode(payload, self._signing, algorithm="EdDSA", headers={"kid": kid})
        elif self._secret is not None:
            token = jwt.encode(payload, self._secret.get_secret_value(), algorithm="HS256")
        else:
            raise Refusal(501, "this gateway holds no signing key, so it cannot mint keys")
        return token, claims

    def verify(self, token: str) -> Claims:
        """The claims of a well-signed, unexpired Mnemo key; else a 401 saying why."""
        try:
            header = jwt.get_unverified_header(token)
            algorithm = header.get("alg")
            key: Ed25519PublicKey | str
            if algorithm == "EdDSA" and self._public:
                kid = header.get("kid")
                if kid is None and len(self._public) == 1:
                    kid = next(iter(self._public))
                if not isinstance(kid, str) or kid not in self._public:
                    raise unauthorised("the key was signed by a key this server does not know")
                key = self._public[kid]
            elif algorithm == "HS256" and self._secret is not None:
                key = self._secret.get_secret_value()
            else:
                raise unauthorised(f"keys signed with {algorithm!r} are not accepted")
            decoded = jwt.decode(
                token, key, algorithms=[algorithm], options={"require": ["jti", "iat"]}
            )
        except jwt.ExpiredSignatureError as err:
            raise unauthorised("the key has expired") from err
        except jwt.InvalidTokenError as err:
            raise unauthorised("not a valid key (malformed, or wrongly signed)") from err
        try:
            return _Payload.model_validate(decoded).claims()
        except ValidationError as err:
            raise unauthorised("the key's claims are not those of a Mnemo key") from err


def generate_keys(folder: Path) -> None:
    """An Ed25519 signing key and its public key in ``folder``, unless it holds them already."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    if (folder / SIGNING_FILE).exists():
        return
    key = Ed25519PrivateKey.generate()
    write_private(
        folder / SIGNING_FILE,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    (folder / VERIFY_FILE).write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )

"""Authentication settings (``MNEMO_AUTH``, and the ``MNEMO_AUTH_`` prefix)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class AuthSettings(BaseSettings):
    """Whether keys are required, and where the signing and verification keys are.

    ``keys_dir`` holds ``signing.pem`` (an Ed25519 private key: this gateway mints keys),
    ``verify*.pem`` (Ed25519 public keys: it verifies them) and ``secret`` (an HS256 shared
    secret), any of them; ``MNEMO_AUTH_SECRET`` may give the secret instead of the file.
    """

    model_config = SettingsConfigDict(env_prefix="MNEMO_AUTH_", extra="ignore")

    mode: Literal["on", "off"] = Field(default="on", validation_alias="MNEMO_AUTH")
    keys_dir: Path | None = None
    secret: SecretStr | None = None

    @field_validator("mode", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @property
    def enabled(self) -> bool:
        """Whether every request must carry a key."""
        return self.mode == "on"

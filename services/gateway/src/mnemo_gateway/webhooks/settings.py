"""Webhook delivery settings (env prefix ``MNEMO_WEBHOOK_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

SECRET_FILE = "webhook.secret"


class WebhookSettings(BaseSettings):
    """How deliveries are signed, timed, retried and where they may go.

    ``secret`` signs every delivery (``X-Honcho-Signature``); without it (and without the file
    ``mnemo up`` writes under ``$MNEMO_STATE_DIR``) nothing is delivered: the work waits in the
    stream until a dispatcher with a secret runs.
    """

    model_config = SettingsConfigDict(env_prefix="MNEMO_WEBHOOK_", extra="ignore")

    secret: SecretStr | None = None
    timeout_s: float = 10.0
    max_attempts: int = 6
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 300.0
    # Link-local addresses (169.254.0.0/16, fe80::/10), where clouds answer with instance
    # credentials, are refused unless this is on.
    allow_link_local: bool = False
    concurrency: int = 16

    def signing_secret(self, state_dir: Path) -> SecretStr | None:
        """The secret given, else the one ``mnemo up`` made under ``state_dir``; None."""
        if self.secret is not None and self.secret.get_secret_value():
            return self.secret
        path = state_dir.resolve() / SECRET_FILE
        if path.exists():
            text = path.read_text().strip()
            return SecretStr(text) if text else None
        return None

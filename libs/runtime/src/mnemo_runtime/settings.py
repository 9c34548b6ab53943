"""Settings shared by every service; each service subclasses with its own env prefix."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class InfraSettings(BaseSettings):
    """Where the bus and the database are. Unprefixed: NATS_URL, DATABASE_URL, MNEMO_STATE_DIR."""

    model_config = SettingsConfigDict(extra="ignore")

    nats_url: str | None = Field(default=None, alias="NATS_URL")
    database_url: str | None = Field(default=None, alias="DATABASE_URL")
    state_dir: Path = Field(default=Path(".local"), alias="MNEMO_STATE_DIR")
    log_level: str = Field(default="info", alias="MNEMO_LOG_LEVEL")
    log_format: str = Field(default="json", alias="MNEMO_LOG_FORMAT")
    # Each process brings the schema up to date before it starts (serialised by one lock);
    # off where a deployment runs ``mnemo migrate`` as a step of its own.
    migrate_on_start: bool = Field(default=True, alias="MNEMO_MIGRATE_ON_START")
    # How many partitions the event stream has (see ``mnemo_schema.subjects``): used when the
    # stream is created; afterwards every process checks it against the stream. Unset: the
    # stream's count (or the default, for a new stream).
    partitions: int | None = Field(default=None, alias="MNEMO_PARTITIONS", ge=1, le=1024)

    def require_urls(self) -> tuple[str, str]:
        """Both URLs, or an error naming the missing one."""
        if not self.nats_url:
            raise RuntimeError("NATS_URL is not set and no local NATS was started")
        if not self.database_url:
            raise RuntimeError("DATABASE_URL is not set and no local Postgres was started")
        return self.nats_url, self.database_url

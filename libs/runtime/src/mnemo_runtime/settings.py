"""Settings shared by every service; each service subclasses with its own env prefix."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import quote, urlsplit, urlunsplit

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class InfraSettings(BaseSettings):
    """Where the bus and the database are. Unprefixed: NATS_URL, DATABASE_URL, MNEMO_STATE_DIR."""

    model_config = SettingsConfigDict(extra="ignore")

    nats_url: str | None = Field(default=None, alias="NATS_URL")
    # The service user's credentials, apart from the URL (a Secret gives the password); a URL
    # that carries credentials of its own keeps them.
    nats_user: str | None = Field(default=None, alias="MNEMO_NATS_USER")
    nats_password: SecretStr | None = Field(default=None, alias="MNEMO_NATS_PASSWORD")
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
    # The niceness this process gives its scheduling group once it has started (``mnemo up``
    # sets it for the memory process; see ``priority.group_niceness``). Unset: left alone.
    group_niceness: int | None = Field(default=None, alias="MNEMO_GROUP_NICENESS", ge=0, le=19)
    # The niceness this process gives the Postgres backends serving it, from when it has started,
    # on a Postgres running on this host (``mnemo up`` sets it for the memory process when it
    # started Postgres itself; see ``priority.BackendPriority``). Unset: left alone.
    pg_backend_niceness: int | None = Field(
        default=None, alias="MNEMO_PG_BACKEND_NICENESS", ge=0, le=19
    )
    # And runs them under SCHED_IDLE, where the kernel has it (``mnemo up`` sets it for a memory
    # process at the idle priority; see ``priority.BackendPriority``).
    pg_backend_idle: bool = Field(default=False, alias="MNEMO_PG_BACKEND_IDLE")
    # The host's reads signal (``mnemo_runtime.reads_signal``): the process answering queries
    # marks them in this file and a process yielding to reads (``yield_to_reads``) waits on it
    # between background steps. ``mnemo up`` sets both, for processes that share one host.
    reads_signal: Path | None = Field(default=None, alias="MNEMO_READS_SIGNAL")
    yield_to_reads: bool = Field(default=False, alias="MNEMO_YIELD_TO_READS")
    # Under reads that never stop, one background step goes ahead this often (seconds).
    reads_max_wait_s: float = Field(default=2.0, alias="MNEMO_READS_MAX_WAIT_S", gt=0, le=60)
    # How Postgres plans this process's prepared statements (``plan_cache_mode``; see
    # ``pg.literal_cursor``): ``mnemo up`` and the chart set ``force_generic_plan`` for the
    # processes that only read. Unset: the server's setting.
    pg_plan_cache_mode: Literal["auto", "force_generic_plan", "force_custom_plan"] | None = Field(
        default=None, alias="MNEMO_PG_PLAN_CACHE_MODE"
    )

    def pg_session(self) -> dict[str, str]:
        """The session settings this process's pool connections take."""
        mode = self.pg_plan_cache_mode
        return {"plan_cache_mode": mode} if mode else {}

    def nats(self) -> str | None:
        """The NATS URL to connect to, with the service user's credentials when they are given
        apart (``MNEMO_NATS_USER`` / ``MNEMO_NATS_PASSWORD``)."""
        if not self.nats_url or self.nats_user is None:
            return self.nats_url
        parts = urlsplit(self.nats_url)
        if "@" in parts.netloc:
            return self.nats_url
        secret = self.nats_password.get_secret_value() if self.nats_password else ""
        userinfo = quote(self.nats_user, safe="") + (f":{quote(secret, safe='')}" if secret else "")
        return urlunsplit(parts._replace(netloc=f"{userinfo}@{parts.netloc}"))

    def require_urls(self) -> tuple[str, str]:
        """Both URLs (NATS's with its credentials), or an error naming the missing one."""
        nats_url = self.nats()
        if not nats_url:
            raise RuntimeError("NATS_URL is not set and no local NATS was started")
        if not self.database_url:
            raise RuntimeError("DATABASE_URL is not set and no local Postgres was started")
        return nats_url, self.database_url

"""Gateway settings (env prefix MNEMO_GATEWAY_)."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class GatewaySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_GATEWAY_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    command_timeout_s: float = 10.0
    # How long a write waits for its projection before answering anyway (the event is stored).
    read_your_writes_timeout_s: float = 10.0
    ready_max_lag: int = 1000
    # The oldest event a projection has not applied may be this old before /ready says 503:
    # the entity and message tables answer reads right away; memory forms in the background.
    ready_max_lag_s: float = 30.0
    ready_max_memory_lag_s: float = 600.0
    max_body_bytes: int = 8 * 1024 * 1024

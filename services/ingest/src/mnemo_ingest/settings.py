"""Ingest settings (env prefix MNEMO_INGEST_)."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class IngestSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_INGEST_", extra="ignore")

    pool_size: int = 4

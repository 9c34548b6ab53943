"""Projector settings (env prefix MNEMO_PROJECTOR_)."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class ProjectorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_PROJECTOR_", extra="ignore")

    batch_size: int = 1000
    memory_batch_size: int = 256
    memory: bool = True

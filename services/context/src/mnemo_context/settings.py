"""Context settings (env prefix MNEMO_CONTEXT_)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class ContextSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_CONTEXT_", extra="ignore")

    # A reranking server (the `POST /rerank` of text-embeddings-inference and alike): the
    # engine's best candidates are reordered by it. None offline: no reranker weights ship here.
    rerank_url: str | None = None
    rerank_api_key: SecretStr | None = None
    rerank_timeout_s: float = Field(default=5.0, gt=0)
    # Query vectors the engine remembers, per workspace and text, and for how long
    # (``EngineConfig.query_cache``); 0: every query is embedded.
    query_cache: int = Field(default=256, ge=0)
    query_cache_s: float = Field(default=60.0, ge=0)

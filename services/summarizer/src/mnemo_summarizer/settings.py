"""Summarizer settings (env prefix MNEMO_SUMMARIZER_)."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class SummarizerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_SUMMARIZER_", extra="ignore")

    # A session gets a new short summary every this many messages, and a long one every that
    # many; a session's ``summary`` configuration overrides both.
    messages_per_short_summary: int = Field(default=20, ge=1)
    messages_per_long_summary: int = Field(default=60, ge=1)
    # Soft limits given to the model in the prompt; the local reasoner keeps them exactly.
    short_word_limit: int = Field(default=150, ge=10)
    long_word_limit: int = Field(default=600, ge=10)
    max_output_tokens: int = Field(default=2048, gt=0)
    # Empty or refused answers are asked for again this many times before the work is parked.
    attempts: int = Field(default=3, ge=1)
    fetch_batch: int = Field(default=256, ge=1)
    # Redelivery delay after a model outage: the work waits, it is never dropped.
    retry_delay_s: float = Field(default=5.0, ge=0)
    # Deliveries of a message that fails for a reason of its own before it is parked as a dead
    # letter (a model, database or bus outage does not count).
    max_attempts: int = Field(default=5, ge=1)
    # Summaries written at once, the sessions (of all workspaces, in turns) sharing them; a
    # session's own are written one at a time, in order.
    max_concurrent_summaries: int = Field(default=2, ge=1)
    # The bus delivers again a message not acknowledged within this long. One whose count
    # completed a summary waits for it in its session's line; a delivery of it meanwhile is
    # ignored, so this only needs to outlast a backlog.
    ack_wait_s: float = Field(default=600.0, gt=0)

    @model_validator(mode="after")
    def _long_not_shorter(self) -> SummarizerSettings:
        if self.long_word_limit < self.short_word_limit:
            raise ValueError("long_word_limit must be at least short_word_limit")
        return self

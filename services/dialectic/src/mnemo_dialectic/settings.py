"""Dialectic settings (env prefix MNEMO_DIALECTIC_)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo_schema.dialectic_queries import ReasoningLevel


class DialecticSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_DIALECTIC_", extra="ignore")

    # Tool-calling turns each reasoning level may take before it must answer.
    budget_minimal: int = Field(default=1, ge=0)
    budget_low: int = Field(default=3, ge=0)
    budget_medium: int = Field(default=5, ge=0)
    budget_high: int = Field(default=8, ge=0)
    budget_max: int = Field(default=12, ge=0)
    # Observations fetched by similarity before the first model turn.
    prefetch_k: int = Field(default=12, ge=1, le=100)
    # Prefetch hits farther than this cosine distance are noise, not evidence.
    prefetch_max_distance: float | None = Field(default=0.9, ge=0.0, le=2.0)
    # Rows one tool call may return; keeps a single grep from flooding the context.
    tool_row_limit: int = Field(default=20, ge=1, le=200)
    max_output_tokens: int = Field(default=2048, gt=0)
    queue_group: str = "dialectic"

    def budget(self, level: ReasoningLevel) -> int:
        """The tool-iteration budget of ``level``."""
        budget: int = getattr(self, f"budget_{level}")
        return budget

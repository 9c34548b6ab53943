"""Settings of the dreamer (env prefix MNEMO_DREAMER_)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class DreamerSettings(BaseSettings):
    """When a representation dreams, and how much a dream may spend."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_DREAMER_", extra="ignore")

    # A dream is due once this many explicit observations arrived since the last one ...
    min_new_observations: int = Field(default=10, ge=1)
    # ... at least this long after the last dream ...
    min_interval_s: float = Field(default=300.0, ge=0.0)
    # ... and once the representation has been quiet this long (new activity postpones it).
    idle_s: float = Field(default=30.0, ge=0.0)
    tick_s: float = Field(default=1.0, gt=0.0)
    # Model turns per specialist per dream: the budget that bounds a dream's cost.
    deduction_max_calls: int = Field(default=12, ge=1)
    induction_max_calls: int = Field(default=8, ge=1)
    max_tokens: int = Field(default=4096, ge=256)
    recent_limit: int = Field(default=200, ge=1)
    max_concurrent_dreams: int = Field(default=2, ge=1)
    ack_wait_s: float = Field(default=60.0, gt=0.0)
    # Deliveries of a dream that fails for a reason of its own before it is parked as a dead
    # letter (a model, database or bus outage does not count).
    max_attempts: int = Field(default=5, ge=1)
    # How long induction waits for deduction's edits to reach the memory projection.
    projection_wait_s: float = Field(default=20.0, gt=0.0)

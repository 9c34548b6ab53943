"""Projector settings (env prefix MNEMO_PROJECTOR_)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ProjectorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_PROJECTOR_", extra="ignore")

    batch_size: int = 1000
    memory_batch_size: int = 256
    # Messages per passage batch: each is embedded before its transaction commits, and a long
    # message is many passages.
    passage_batch_size: int = 64
    # The memory and passage projections take a partition's workspaces in turns: a batch holds
    # about as many events as they apply in this long, by the pace of the last batches (and at
    # most the batch size), which bounds how long another workspace waits for its turn.
    turn_s: float = 0.25
    # Events a partition's projector holds received and not yet applied, at most: far behind
    # (an import, a burst the embedding cannot keep up with), it stops receiving until half of
    # them are applied, so its memory stays bounded. Below it, the workspaces of a partition take
    # turns as described above; past it, events are received in log order as room frees.
    held_events: int = 20_000
    # Which projections this process keeps: the entity and message tables, the memory (observations
    # into Postgres and the vector index) and the message passages (embedded and indexed by word,
    # for retrieval). Each can run in a process of its own.
    entities: bool = True
    memory: bool = True
    passages: bool = True
    # The vector index builds its search structures (graphs for large representations) after
    # this many new points, once no observation has arrived for this long.
    optimize_after_points: int = 20_000
    optimize_quiet_s: float = 30.0
    # A sender with this many passages gets a vector graph of its own, which a representation's
    # read searches instead of the partition's (``sender_graphs``); 0: never.
    sender_graph_passages: int = Field(default=2_000, ge=0)

    @model_validator(mode="after")
    def _holds_a_batch(self) -> Self:
        largest = max(self.batch_size, self.memory_batch_size, self.passage_batch_size)
        if self.held_events < largest:
            raise ValueError(f"held_events must be at least the largest batch size ({largest})")
        return self

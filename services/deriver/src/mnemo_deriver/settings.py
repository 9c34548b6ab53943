"""Deriver settings (env prefix MNEMO_DERIVER_)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class DeriverSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MNEMO_DERIVER_", extra="ignore")

    # A batch is flushed when its messages reach this many tokens...
    token_target: int = Field(default=1024, ge=1)
    # ...or when no message joined it for this long: the messages of one POST, or of a chat's
    # posts in quick succession, share a batch, and a lone message waits no longer than this...
    idle_s: float = Field(default=0.1, gt=0)
    # ...or when its first message has waited this long, however busy the conversation is.
    max_age_s: float = Field(default=2.0, gt=0)
    # Messages a fetch takes at most (what is waiting; a lone message is not held back). Each
    # fetch is a turn of an event loop the deriver shares with the other stages of its process,
    # so a backlog let go past its workspace's share is read through at this many a turn: with
    # 256, 30,000 messages let go took 12-16 s to pass under a 40,000-message burst; with 2,048,
    # 2.8 s. The held limits bound what is fetched either way.
    fetch_batch: int = Field(default=2048, ge=1)
    max_output_tokens: int = 4096
    structured_attempts: int = Field(default=3, ge=1)
    # How long a batch waits before it is tried again after a model outage or a failure of its
    # own: the work waits at the head of its line, it is never dropped.
    retry_delay_s: float = 5.0
    # Deliveries of a message that fails for a reason of its own before it is parked as a dead
    # letter (a model, database or bus outage does not count).
    max_attempts: int = Field(default=5, ge=1)
    # The bus redelivers a message not acknowledged within this long. A message waits its turn
    # in its representation's line unacknowledged, and a replica that dies has its partitions'
    # work delivered again by the replica taking them over, so this only needs to outlast a
    # backlog; a delivery of a message still waiting or running is ignored.
    ack_wait_s: float = 600.0
    # Messages a partition's durable delivers unacknowledged, at most: the deriver holds each
    # until it is derived, and the rest of the partition waits in the bus.
    max_ack_pending: int = Field(default=20_000, ge=2)
    # Of those, one workspace's at most (unset: half of them). Past it, the workspace's later
    # messages are acknowledged without being held and read again from the log as its held
    # ones are derived (``mnemo_deriver.gaps``): a backlog larger than the durable's limit does
    # not keep the partition's other workspaces from being delivered.
    workspace_share: int | None = Field(default=None, ge=1)
    # Messages a replica holds delivered and not yet derived, over all its partitions, at most
    # (about: a fetch may take a batch past it). Each partition's durable holds its own share
    # back at ``max_ack_pending``; this bounds the replica's memory when many partitions are far behind at
    # once: it fetches again as work completes, and the rest waits in the bus.
    held_messages: int = Field(default=50_000, ge=1)
    # Batches processed at once; more would only queue on the model and the database pool.
    max_concurrent_batches: int = Field(default=4, ge=1)
    # Slots beyond those, kept for a workspace with nothing running: while a backlog holds
    # every shared slot, a new conversation's batch starts at once instead of waiting for one
    # of the backlog's to finish.
    reserved_slots: int = Field(default=1, ge=0)

    @property
    def share(self) -> int:
        """One workspace's share of a partition's hold."""
        return self.workspace_share or max(1, self.max_ack_pending // 2)

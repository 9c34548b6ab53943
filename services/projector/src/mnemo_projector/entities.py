"""The entity and message read models (workspaces, peers, sessions, members, messages), and the
stages' progress for the queue status (``work_lines``, ``work_sessions``)."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_projector.domain import Statement, apply_batch, messages_only
from mnemo_projector.tables import PROJECTION
from mnemo_runtime.pg import Connection
from mnemo_schema import subjects
from mnemo_schema.events import Event


class EntityProjection:
    """The entity, message and progress events of each partition."""

    name = PROJECTION
    applied_subject = subjects.PROJECTOR_APPLIED
    pipelined = True  # apply() only writes
    fair = False

    def filters(self, partition: int) -> list[str]:
        return [
            subjects.entity_filter("*", partition),
            subjects.message_filter(partition),
            subjects.work_filter(partition),
        ]

    async def setup(self, conn: Connection) -> None:
        """Nothing beyond the migrations."""

    async def apply(self, conn: Connection, batch: Sequence[tuple[int, Event]]) -> None:
        await apply_batch(conn, batch)

    def guarded(self, batch: Sequence[tuple[int, Event]]) -> Statement | None:
        """Batches of posted messages only (nearly all of them) go in as one statement."""
        return messages_only(batch)

    async def idle(self) -> None:
        """Nothing to maintain between batches."""

"""The representation as the dreamer reads it: observations from the retrieval engine (by key
and by similarity), source messages, cards and configuration from the projections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from mnemo_dreamer.ports import Observation, SourceMessage
from mnemo_runtime import positions
from mnemo_runtime.pg import Pool
from mnemo_runtime.positions import wait_applied
from mnemo_runtime.retrieval import RetrievalClient
from mnemo_runtime.vectors.ports import Level, Scope
from mnemo_schema.config import WorkspaceConfiguration, effective
from mnemo_schema.grounding import CitedMessage, Rejected, RepresentationKey, verdicts
from mnemo_schema.observations import ObservationWritten
from mnemo_schema.retrieval import (
    MAX_NEWEST,
    RetrievalQuery,
    StoredObservation,
    StoredQuery,
)
from mnemo_schema.subjects import partition_of


def _obs(o: StoredObservation) -> Observation:
    return Observation(
        id=o.id,
        level=o.level,
        content=o.content,
        created_at=o.observed_at or o.created_at,
        premise_ids=tuple(o.premise_ids),
        source_message_ids=tuple(o.source_message_ids),
        needs_review=o.needs_review,
        confidence=o.confidence,
        pattern_type=o.pattern_type,
    )


async def store_check(
    retrieval: RetrievalClient, events: Sequence[ObservationWritten]
) -> list[Rejected | None]:
    """For each observation, None if the memory projection will accept it, else why not: the
    grounding rule (``mnemo_schema.grounding``) against the projections as they stand (cited
    messages and premises read through the retrieval engine), run before an observation is
    published so that the model is told what it got wrong. The projection's own check, in its
    transaction, is the verdict that counts."""
    # A batch may hold several workspaces' events: each message by (workspace, id).
    wanted: dict[str, list[str]] = {}
    for e in events:
        wanted.setdefault(e.workspace, []).extend(e.source_message_ids)
    cited: dict[tuple[str, str], CitedMessage] = {}
    for workspace, ids in sorted(wanted.items()):
        for m in (await retrieval.messages_by_ids(workspace, ids)).messages:
            pairs = [r.model_dump() for r in m.representations]
            cited[(workspace, m.id)] = CitedMessage(m.content, pairs)

    async def resolve(key: RepresentationKey, ids: Sequence[str]) -> dict[str, str]:
        workspace, observer, observed = key
        found = await retrieval.stored_ids(workspace, ids, observer=observer, observed=observed)
        return found.resolved

    reasons = await verdicts(events, cited, resolve)
    return [None if r is None else Rejected(r) for r in reasons]


class PgMemory:
    """Observations from the retrieval engine, always keyed by their representation: by id and
    newest (``StoredQuery``), by similarity (``RetrievalQuery``)."""

    def __init__(self, pool: Pool, retrieval: RetrievalClient, partitions: int) -> None:
        self._pool = pool
        self._partitions = partitions
        self._retrieval = retrieval

    async def recent(
        self, scope: Scope, limit: int, levels: Sequence[str] = ()
    ) -> list[Observation]:
        found = await self._retrieval.stored(
            scope.workspace,
            StoredQuery(
                observer=scope.observer,
                observed=scope.observed,
                newest=max(1, min(limit, MAX_NEWEST)),
                levels=cast(list[Level], list(levels)) or None,
            ),
        )
        return [_obs(o) for o in found.observations]

    async def get(self, scope: Scope, ids: Sequence[str]) -> list[Observation]:
        found = await self._retrieval.stored_ids(
            scope.workspace, ids, observer=scope.observer, observed=scope.observed
        )
        return [_obs(o) for o in found.observations]

    async def similar(
        self, scope: Scope, query: str, limit: int, levels: Sequence[str] = ()
    ) -> list[Observation]:
        found = await self._retrieval.retrieve(
            scope.workspace,
            RetrievalQuery(
                query=query,
                observer=scope.observer,
                observed=scope.observed,
                messages=0,
                observations=limit,
                levels=cast(list[Level], list(levels)) or None,
            ),
        )
        # Read back through the store, which gives the specialists every field they weigh.
        return await self.get(scope, [o.id for o in found.observations])

    async def sources(self, scope: Scope, message_ids: Sequence[str]) -> list[SourceMessage]:
        found = await self._retrieval.messages_by_ids(scope.workspace, message_ids)
        return [SourceMessage(m.id, m.peer_id, m.content, m.created_at) for m in found.messages]

    async def card(self, scope: Scope) -> list[str] | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT card FROM peer_cards WHERE workspace = %s AND observer = %s"
                " AND observed = %s",
                (scope.workspace, scope.observer, scope.observed),
            )
            row: dict[str, Any] | None = await cur.fetchone()
        return None if row is None else list(row["card"])

    async def configuration(
        self, workspace: str, session_id: str | None = None
    ) -> WorkspaceConfiguration:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT w.configuration AS workspace, s.configuration AS session FROM workspaces w"
                " LEFT JOIN sessions s ON s.workspace = w.id AND s.id = %s WHERE w.id = %s",
                (session_id, workspace),
            )
            row: dict[str, Any] | None = await cur.fetchone()
        if row is None:
            return WorkspaceConfiguration()
        levels = [row["workspace"], row["session"]]
        return effective(*(WorkspaceConfiguration.model_validate(c) for c in levels if c))

    async def check(self, events: Sequence[ObservationWritten]) -> list[Rejected | None]:
        return await store_check(self._retrieval, events)

    async def wait_applied(self, workspace: str, seq: int, timeout: float) -> bool:
        partition = partition_of(workspace, self._partitions)
        return await wait_applied(self._pool, positions.MEMORY, partition, seq, timeout, workspace)

"""The representation store's write-time check, run in the memory projection's transaction.

- A derived observation (deductive, inductive, contradiction) must cite the observations it
  rests on, and they must exist, live, in its representation: as this transaction sees the
  tables, or accepted earlier in the same batch.
- An explicit observation (except one an API caller states directly) must cite a message that
  fed its representation, and a span found in that message. The message is read from the log,
  at the position the observation gives for it (``source_message_seqs``): the verdict depends on
  the log alone, never on whether another projection has caught up. An observation without
  positions (written by an earlier version) is checked against the message table instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from mnemo_runtime.pg import Connection
from mnemo_runtime.vectors.ports import Scope, require_scope
from mnemo_schema import grounding
from mnemo_schema.events import MessagePosted
from mnemo_schema.grounding import CitedMessage
from mnemo_schema.observations import DERIVED_LEVELS, ObservationWritten


class CitedMessages(Protocol):
    async def at(self, seqs: Sequence[int]) -> Mapping[int, MessagePosted | None]:
        """The message posted at each position (None: the log holds no message there)."""
        ...


async def resolve(conn: Connection, scope: Scope, ids: Sequence[str]) -> dict[str, str]:
    """Each id (or alias) that names a live observation of ``scope`` -> its canonical id."""
    require_scope(scope)
    cur = await conn.execute(
        "SELECT q.id AS asked, o.id AS canonical FROM unnest(%s::text[]) AS q(id)"
        " LEFT JOIN observation_aliases a ON a.workspace = %s AND a.alias_id = q.id"
        " JOIN observations o ON o.workspace = %s AND o.id = COALESCE(a.canonical_id, q.id)"
        " AND o.observer = %s AND o.observed = %s AND o.deleted_at IS NULL",
        (list(ids), scope.workspace, scope.workspace, scope.observer, scope.observed),
    )
    return {r["asked"]: r["canonical"] for r in await cur.fetchall()}


async def verdicts(
    conn: Connection, events: Sequence[ObservationWritten], log: CitedMessages
) -> list[str | None]:
    """For each observation, None if the store accepts it, else why not (see
    ``grounding.verdicts``)."""

    async def resolved(key: grounding.RepresentationKey, ids: Sequence[str]) -> dict[str, str]:
        return await resolve(conn, Scope(*key), ids)

    return await grounding.verdicts(events, await _cited(conn, events, log), resolved)


async def _cited(
    conn: Connection, events: Sequence[ObservationWritten], log: CitedMessages
) -> dict[tuple[str, str], CitedMessage]:
    """The messages the explicit observations cite, by (workspace, id)."""
    explicit = [e for e in events if e.level not in DERIVED_LEVELS and e.origin != "api"]
    by_seq = await log.at(sorted({s for e in explicit for s in e.source_message_seqs}))
    out: dict[tuple[str, str], CitedMessage] = {}
    table: set[tuple[str, str]] = set()
    for e in explicit:
        if not e.source_message_seqs:
            table.update((e.workspace, mid) for mid in e.source_message_ids)
            continue
        for mid, seq in zip(e.source_message_ids, e.source_message_seqs, strict=False):
            m = by_seq.get(seq)
            # The position must hold this very message of this workspace.
            if m is not None and m.workspace == e.workspace and m.message_id == mid:
                reps = [{"observer": r.observer, "observed": r.observed} for r in m.representations]
                out[(e.workspace, mid)] = CitedMessage(m.content, reps)
    if table:
        workspaces, ids = zip(*sorted(table), strict=True)
        cur = await conn.execute(
            "SELECT m.workspace, m.id, m.content, m.representations"
            " FROM unnest(%s::text[], %s::text[]) AS k(workspace, id)"
            " JOIN messages m ON m.workspace = k.workspace AND m.id = k.id",
            (list(workspaces), list(ids)),
        )
        for r in await cur.fetchall():
            row: Any = r
            out.setdefault(
                (row["workspace"], row["id"]), CitedMessage(row["content"], row["representations"])
            )
    return out

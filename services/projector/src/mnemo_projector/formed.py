"""What the memory projection keeps of memory formation's other output, and what erasures take.

Summaries and dreams go in as their events arrive, and so does how far each representation's
messages are formed (``formed_lines``, for the queue status). A deleted workspace, session or peer takes its
summaries and dreams along; the summaries an erasure of a message or a peer reaches are named by
the eraser (``SummariesErased``, by the positions of their events), since which summaries cover
a message is known from the log, not from this projection; so are the dreams due for an erased
peer that were scheduled after its erasure (``DreamsErased``). ``ObservationsErased`` leaves nothing
of the observations it names: rows, aliases, provenance, rejections (the caller drops their
vectors and postings) and, when the erasure takes it, the card.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo_runtime.pg import Connection
from mnemo_schema.dreams import DreamCompleted, DreamDue, DreamsErased
from mnemo_schema.events import Event, PeerDeleted, SessionDeleted, WorkspaceDeleted
from mnemo_schema.observations import ObservationsErased, ObservationWritten
from mnemo_schema.summaries import SummariesErased, SummaryUpdated


async def apply_formed(conn: Connection, seq: int, event: Event) -> None:
    """Apply a summary or dream event at ``seq``, or what a deletion takes of them."""
    match event:
        case SummaryUpdated():
            await conn.execute(
                "INSERT INTO summaries (workspace, session_id, summary_type, seq, content,"
                " message_id, message_seq, messages_covered, token_count, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (
                    event.workspace,
                    event.session_id,
                    event.summary_type,
                    seq,
                    event.content,
                    event.message_id,
                    event.message_seq,
                    event.messages_covered,
                    event.token_count,
                    event.occurred_at,
                ),
            )
        case SummariesErased():
            await conn.execute(
                "DELETE FROM summaries WHERE workspace = %s AND session_id = %s AND seq = ANY(%s)",
                (event.workspace, event.session_id, event.summary_seqs),
            )
        case DreamDue():
            await conn.execute(
                "INSERT INTO dreams (workspace, due_event_id, observer, observed, session_id,"
                " reason, due_seq) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (workspace, due_event_id) DO NOTHING",
                (
                    event.workspace,
                    event.event_id,
                    event.observer,
                    event.observed,
                    event.session_id,
                    event.reason,
                    seq,
                ),
            )
        case DreamCompleted():
            await conn.execute(
                "UPDATE dreams SET completed_seq = %s WHERE workspace = %s AND due_event_id = %s",
                (seq, event.workspace, event.due_event_id),
            )
        case DreamsErased():
            await conn.execute(
                "DELETE FROM dreams WHERE workspace = %s AND due_event_id = ANY(%s)",
                (event.workspace, event.due_event_ids),
            )
        case SessionDeleted():
            await conn.execute(
                "DELETE FROM summaries WHERE workspace = %s AND session_id = %s",
                (event.workspace, event.session_id),
            )
        case PeerDeleted():
            for table in ("dreams", "formed_lines"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE workspace = %s AND %s IN (observer, observed)",
                    (event.workspace, event.peer_id),
                )
        case WorkspaceDeleted():
            for table in ("summaries", "dreams", "formed_lines"):
                await conn.execute(f"DELETE FROM {table} WHERE workspace = %s", (event.workspace,))


async def mark_formed(conn: Connection, events: Sequence[ObservationWritten]) -> None:
    """Move each representation's formed line to the newest ``formed_through`` among
    ``events`` (applied or rejected: the batch they close is through either way)."""
    through: dict[tuple[str, str, str], int] = {}
    for e in events:
        if e.formed_through is not None:
            key = (e.workspace, e.observer, e.observed)
            through[key] = max(through.get(key, 0), e.formed_through)
    for (ws, observer, observed), seq in sorted(through.items()):
        await conn.execute(
            "INSERT INTO formed_lines (workspace, observer, observed, through_seq)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (workspace, observer, observed)"
            " DO UPDATE SET through_seq = GREATEST(formed_lines.through_seq, EXCLUDED.through_seq)",
            (ws, observer, observed, seq),
        )


async def erase_observations(conn: Connection, e: ObservationsErased) -> list[str]:
    """Drop every row of the observations ``e`` names (and the card, when it goes too); the
    ids whose observation rows were there, for the vectors and postings."""
    ws, ids = e.workspace, list(e.observation_ids)
    gone: list[str] = []
    if ids:
        cur = await conn.execute(
            "DELETE FROM observations WHERE workspace = %s AND observer = %s"
            " AND observed = %s AND id = ANY(%s) RETURNING id",
            (ws, e.observer, e.observed, ids),
        )
        gone = [str(r["id"]) for r in await cur.fetchall()]
        await conn.execute(
            "DELETE FROM observation_aliases WHERE workspace = %s"
            " AND (alias_id = ANY(%s) OR canonical_id = ANY(%s))",
            (ws, ids, ids),
        )
        for table, column in (
            ("observation_sources", "observation_id"),
            ("observation_rejections", "id"),
        ):
            await conn.execute(
                f"DELETE FROM {table} WHERE workspace = %s AND {column} = ANY(%s)", (ws, ids)
            )
    if e.card:
        await conn.execute(
            "DELETE FROM peer_cards WHERE workspace = %s AND observer = %s AND observed = %s",
            (ws, e.observer, e.observed),
        )
    return gone

"""How far the summarizer has counted each session, on the log (``SummarizationProgressed``),
which the entity projection keeps for the queue status; and a note on
``mnemo.progress.<workspace>`` for whoever watches queues drain (``queue.empty``)."""

from __future__ import annotations

from typing import Any

from mnemo_runtime.pg import Pool
from mnemo_runtime.progress import Announce, announce_sessions
from mnemo_schema.progress import SummarizationProgressed
from mnemo_summarizer.ports import SummaryLog


class LogProgress:
    """The sessions' progress events, in one pipelined publish; with ``announce``, a progress
    note per workspace after them. A publish that fails raises: the caller retries, and the
    messages are not acknowledged before their progress is on the log."""

    def __init__(self, log: SummaryLog, announce: Announce | None = None) -> None:
        self._log = log
        self._announce = announce

    async def done(self, sessions: dict[tuple[str, str], tuple[int, int]]) -> None:
        events = [
            SummarizationProgressed(workspace=ws, session_id=sid, done_seq=seq, summary_seq=summary)
            for (ws, sid), (seq, summary) in sorted(sessions.items())
        ]
        await self._log.publish(events)
        by_workspace: dict[str, list[str]] = {}
        for ws, sid in sessions:
            by_workspace.setdefault(ws, []).append(sid)
        for ws, ids in sorted(by_workspace.items()):
            await announce_sessions(self._announce, ws, ids)


async def hand_over(pool: Pool, log: SummaryLog) -> int:
    """Put the sessions kept in Postgres (``summarizer_sessions``, where progress was recorded
    before it went on the log) on the log as progress events, then empty the table; how many.

    Run at start-up, for the same reasons and in the same way as the deriver's
    (``mnemo_deriver.adapters.progress.hand_over``)."""
    async with pool.connection() as conn, conn.transaction():
        cur = await conn.execute("DELETE FROM summarizer_sessions RETURNING *")
        rows: list[Any] = await cur.fetchall()
        if rows:
            await log.publish(
                [
                    SummarizationProgressed(
                        workspace=r["workspace"],
                        session_id=r["session_id"],
                        done_seq=r["done_seq"],
                        summary_seq=r["summary_seq"],
                    )
                    for r in rows
                ]
            )
    return len(rows)

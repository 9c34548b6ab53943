"""How far each representation's line has come, on the log (``DerivationProgressed``), which the
entity projection keeps for the queue status; and a note on ``mnemo.progress.<workspace>`` for
whoever watches queues drain (the gateway's ``queue.empty``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mnemo_deriver.batching import RepKey
from mnemo_deriver.ports import ObservationLog
from mnemo_runtime.pg import Pool
from mnemo_runtime.progress import Announce, announce_sessions
from mnemo_schema.progress import DerivationProgressed


class LogProgress:
    """The lines' progress events; with ``announce``, a progress note naming the sessions after
    each. A publish that fails raises: the caller retries, and the work is not acknowledged
    before its progress is on the log."""

    def __init__(self, log: ObservationLog, announce: Announce | None = None) -> None:
        self._log = log
        self._announce = announce

    async def _publish(self, event: DerivationProgressed, sessions: Sequence[str]) -> None:
        await self._log.publish([event])
        await announce_sessions(self._announce, event.workspace, sessions)

    async def taken(self, key: RepKey, seq: int, sessions: Sequence[str] = ()) -> None:
        event = DerivationProgressed(
            workspace=key.workspace, observer=key.observer, observed=key.observed, taken_seq=seq
        )
        await self._publish(event, sessions)

    async def done(
        self, key: RepKey, seq: int, observation_seq: int, sessions: Sequence[str] = ()
    ) -> None:
        event = DerivationProgressed(
            workspace=key.workspace,
            observer=key.observer,
            observed=key.observed,
            taken_seq=seq,
            done_seq=seq,
            observation_seq=observation_seq,
        )
        await self._publish(event, sessions)


async def hand_over(pool: Pool, log: ObservationLog) -> int:
    """Put the lines kept in Postgres (``deriver_lines``, where progress was recorded before it
    went on the log) on the log as progress events, then empty the table; how many.

    Run at start-up: a deployment that formed memory before progress went on the log keeps the
    queue status of that work, and a rebuild of the entity projection finds it on the log. The
    rows are deleted in the transaction that publishes them: a failed publish leaves them, and
    another replica handing over at once waits and finds them gone. A crash after the publish
    only publishes them again (the projection keeps the greatest positions)."""
    async with pool.connection() as conn, conn.transaction():
        cur = await conn.execute("DELETE FROM deriver_lines RETURNING *")
        rows: list[Any] = await cur.fetchall()
        if rows:
            await log.publish(
                [
                    DerivationProgressed(
                        workspace=r["workspace"],
                        observer=r["observer"],
                        observed=r["observed"],
                        taken_seq=r["taken_seq"],
                        done_seq=r["done_seq"],
                        observation_seq=r["observation_seq"],
                    )
                    for r in rows
                ]
            )
    return len(rows)

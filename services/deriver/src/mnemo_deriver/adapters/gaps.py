"""Gap records in Postgres (``deriver_gaps``, the deriver's own table)."""

from __future__ import annotations

from mnemo_runtime.pg import Pool


class PgGapRecords:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def load(self, partition: int) -> dict[str, int]:
        async with self._pool.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT workspace, position FROM deriver_gaps WHERE partition = %s",
                    (partition,),
                )
            ).fetchall()
        return {r["workspace"]: int(r["position"]) for r in rows}

    async def keep(self, workspace: str, partition: int, position: int) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO deriver_gaps (workspace, partition, position) VALUES (%s, %s, %s)"
                " ON CONFLICT (workspace) DO UPDATE"
                " SET partition = EXCLUDED.partition, position = EXCLUDED.position",
                (workspace, partition, position),
            )

    async def drop(self, workspace: str) -> None:
        async with self._pool.connection() as conn:
            await conn.execute("DELETE FROM deriver_gaps WHERE workspace = %s", (workspace,))

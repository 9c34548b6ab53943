"""The endpoints deliveries go to (the projector's ``webhook_endpoints``) and the delivery log
(``webhook_deliveries``, this component's own table: one row per event and endpoint)."""

from __future__ import annotations

from typing import Any

from mnemo_gateway.webhooks.work import Delivery
from mnemo_runtime.deadletters import sanitised
from mnemo_runtime.migrate import package_migrations
from mnemo_runtime.pg import Pool

MIGRATIONS = package_migrations("mnemo_gateway")

_RECORD = """
INSERT INTO webhook_deliveries (workspace, event_id, endpoint_id, event_type, url, status,
    attempts, last_error, last_status_code, latency_ms)
VALUES (%(workspace)s, %(event_id)s, %(endpoint_id)s, %(event_type)s, %(url)s, %(status)s,
    %(attempts)s, %(error)s, %(code)s, %(latency_ms)s)
ON CONFLICT (event_id, endpoint_id) DO UPDATE SET
    status = EXCLUDED.status, attempts = GREATEST(webhook_deliveries.attempts, EXCLUDED.attempts),
    last_error = EXCLUDED.last_error, last_status_code = EXCLUDED.last_status_code,
    latency_ms = EXCLUDED.latency_ms, updated_at = now()
"""


class DeliveryLog:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def endpoints(self, workspace: str) -> list[tuple[str, str]]:
        """(id, url) of every endpoint ``workspace`` has now."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT id, url FROM webhook_endpoints WHERE workspace = %s ORDER BY created_at",
                (workspace,),
            )
            rows: list[Any] = await cur.fetchall()
        return [(r["id"], r["url"]) for r in rows]

    async def endpoint_exists(self, workspace: str, endpoint_id: str) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT 1 FROM webhook_endpoints WHERE workspace = %s AND id = %s",
                (workspace, endpoint_id),
            )
            return await cur.fetchone() is not None

    async def record(
        self,
        d: Delivery,
        status: str,
        attempts: int,
        error: str | None = None,
        code: int | None = None,
        latency_ms: float | None = None,
    ) -> None:
        """How the delivery ``d`` stands after ``attempts`` attempts."""
        async with self._pool.connection() as conn:
            await conn.execute(
                _RECORD,
                {
                    "workspace": d.event.workspace,
                    "event_id": d.event.event_id,
                    "endpoint_id": d.endpoint_id,
                    "event_type": d.event.type,
                    "url": d.url,
                    "status": status,
                    "attempts": attempts,
                    "error": None if error is None else sanitised(error),
                    "code": code,
                    "latency_ms": latency_ms,
                },
            )

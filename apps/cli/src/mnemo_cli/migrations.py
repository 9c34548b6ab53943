"""Every owner's schema migrations, applied together: ``mnemo migrate`` and each ``serve`` start."""

from __future__ import annotations

from mnemo_context.app import MIGRATIONS as CONTEXT
from mnemo_deriver.app import MIGRATIONS as DERIVER
from mnemo_dreamer.app import MIGRATIONS as DREAMER
from mnemo_gateway.webhooks.log import MIGRATIONS as GATEWAY
from mnemo_projector.tables import MIGRATIONS as PROJECTOR
from mnemo_runtime.migrate import RUNTIME_MIGRATIONS, migrate, migrate_blocking
from mnemo_summarizer.app import MIGRATIONS as SUMMARIZER

SOURCES = (RUNTIME_MIGRATIONS, PROJECTOR, DERIVER, SUMMARIZER, DREAMER, CONTEXT, GATEWAY)


async def migrate_all(database_url: str) -> list[str]:
    """Bring the database's schema up to date; the migrations applied."""
    return await migrate(database_url, SOURCES)


def migrate_all_blocking(database_url: str) -> list[str]:
    """``migrate_all`` for a caller without an event loop (test fixtures)."""
    return migrate_blocking(database_url, SOURCES)

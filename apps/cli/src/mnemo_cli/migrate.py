"""``mnemo migrate``: bring the database schema and the bus up to what this release expects.

It creates the event and dead-letter streams, creates (or updates, on an upgrade) every stage's
durable consumer with the configuration that stage binds to, and creates every service's tables
and indexes. Each step is idempotent, so it runs before every install or upgrade (the chart's
pre-install / pre-upgrade Job) and again by hand without harm. The services still create what they
need at start-up; this only makes sure it exists before any of them starts, under one command.
"""

from __future__ import annotations

from nats.js.api import ConsumerConfig

from mnemo_context.adapters.postgres import PostgresReads
from mnemo_deriver.adapters.bus import consumers as deriver_consumers
from mnemo_deriver.adapters.progress import create_progress_table
from mnemo_deriver.settings import DeriverSettings
from mnemo_dreamer.adapters.bus import consumers as dreamer_consumers
from mnemo_dreamer.adapters.schedule import create_schedule_table
from mnemo_dreamer.settings import DreamerSettings
from mnemo_projector.tables import create_tables
from mnemo_runtime.bus import connect, ensure_stream
from mnemo_runtime.logging import configure_logging, get_logger
from mnemo_runtime.memory.tables import create_memory_tables
from mnemo_runtime.pg import open_pool
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.work import DeadLetters
from mnemo_schema import subjects
from mnemo_summarizer.adapters.bus import consumers as summarizer_consumers
from mnemo_summarizer.settings import SummarizerSettings

log = get_logger("mnemo.migrate")


def stage_consumers() -> list[ConsumerConfig]:
    """Every durable consumer the stages read, configured from the same settings they use."""
    return [
        *deriver_consumers(DeriverSettings()),
        *summarizer_consumers(SummarizerSettings()),
        *dreamer_consumers(DreamerSettings()),
    ]


async def migrate(settings: InfraSettings) -> None:
    """Create or update the streams, the stage consumers and every table; print what it did."""
    configure_logging(settings.log_level, settings.log_format)
    nats_url, db_url = settings.require_urls()
    nc = await connect(nats_url, "mnemo-migrate")
    try:
        js = nc.jetstream(timeout=10)
        await ensure_stream(js)
        await DeadLetters(js, "migrate").ensure()
        print(f"stream   {subjects.STREAM}, {subjects.DEAD_LETTER_STREAM}")
        for config in stage_consumers():
            # Create, or update the editable fields (ack wait, pending limit) of an existing one.
            await js.add_consumer(subjects.STREAM, config)
            print(f"consumer {config.durable_name} ({config.filter_subject})")
    finally:
        await nc.drain()
    pool = await open_pool(db_url)
    try:
        async with pool.connection() as conn:
            await create_tables(conn)
            await create_memory_tables(conn)
            await create_progress_table(conn)
            await create_schedule_table(conn)
        await PostgresReads(pool).setup()
    finally:
        await pool.close()
    print("tables   entities and messages, memory, deriver progress, dream schedule, indexes")
    log.info("migrate.done")

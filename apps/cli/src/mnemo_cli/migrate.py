"""``mnemo migrate``: bring the database schema and the bus up to what this release expects.

It creates the event stream (with ``MNEMO_PARTITIONS`` partitions when it is new; refusing when
an existing stream has another count) and the dead-letter stream, creates (or updates, on an
upgrade) every stage's durable consumers, one per partition, with the configuration that stage
binds to, and applies the schema migrations of every service (``mnemo_cli.migrations``). Each step is idempotent, so it runs before every
install or upgrade (the chart's pre-install / pre-upgrade Job) and again by hand without harm.
Each ``mnemo serve`` applies pending migrations too, unless ``MNEMO_MIGRATE_ON_START=false``.
"""

from __future__ import annotations

from nats.js.api import ConsumerConfig

from mnemo_cli.migrations import migrate_all
from mnemo_deriver.adapters.bus import consumers as deriver_consumers
from mnemo_deriver.settings import DeriverSettings
from mnemo_dreamer.adapters.bus import consumers as dreamer_consumers
from mnemo_dreamer.settings import DreamerSettings
from mnemo_runtime.bus import connect, ensure_stream
from mnemo_runtime.deadletters import ensure_dead_letter_stream
from mnemo_runtime.logging import configure_logging, get_logger
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.work import ensure_consumer
from mnemo_schema import subjects
from mnemo_summarizer.adapters.bus import consumers as summarizer_consumers
from mnemo_summarizer.settings import SummarizerSettings

log = get_logger("mnemo.migrate")


def stage_consumers(partitions: int) -> list[ConsumerConfig]:
    """Every durable consumer the stages read, configured from the same settings they use."""
    return [
        *deriver_consumers(DeriverSettings(), partitions),
        *summarizer_consumers(SummarizerSettings(), partitions),
        *dreamer_consumers(DreamerSettings()),
    ]


async def migrate(settings: InfraSettings) -> None:
    """Create or update the streams and the stage consumers, migrate the schema; print it."""
    configure_logging(settings.log_level, settings.log_format)
    nats_url, db_url = settings.require_urls()
    nc = await connect(nats_url, "mnemo-migrate")
    try:
        js = nc.jetstream(timeout=10)
        partitions = await ensure_stream(js, settings.partitions)
        await ensure_dead_letter_stream(js)
        print(
            f"stream   {subjects.STREAM} ({partitions} partitions), {subjects.DEAD_LETTER_STREAM}"
        )
        for config in stage_consumers(partitions):
            # Create, or update the editable fields (ack wait, pending limit) of an existing one.
            await ensure_consumer(js, config)
            print(f"consumer {config.durable_name} ({config.filter_subject})")
    finally:
        await nc.drain()
    applied = await migrate_all(db_url)
    print(
        f"schema   {len(applied)} migrations applied"
        + (f": {', '.join(applied)}" if applied else "")
    )
    log.info("migrate.done")

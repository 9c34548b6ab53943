"""Sending the stages' progress notes (``mnemo_schema.progress``) on core NATS."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from mnemo_runtime.logging import get_logger
from mnemo_schema.progress import encode_note
from mnemo_schema.subjects import progress_subject

log = get_logger("mnemo.progress")

# Publishes one core NATS message (subject, body): at most once, never blocking the work.
Announce = Callable[[str, bytes], Awaitable[None]]


async def announce_sessions(
    announce: Announce | None, workspace: str, sessions: Iterable[str]
) -> None:
    """Note that work of ``workspace`` in ``sessions`` moved on; a lost note is no error (the
    watcher re-checks what it knows to be busy)."""
    if announce is None:
        return
    try:
        await announce(progress_subject(workspace), encode_note(sessions))
    except Exception as err:
        log.warning("progress.note_failed", workspace=workspace, error=repr(err))

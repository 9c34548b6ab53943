"""Loading a case into a running Mnemo through the honcho-ai SDK, and waiting for memory to form."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Collection
from typing import Any

from honcho import Honcho
from honcho.api_types import MessageCreateParams

from mnemo_bench.cases import Case
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import local_api_key

BATCH = 100
# The Honcho API's limit on one message's content, in characters.
MAX_CHARS = 50_000


def split_text(text: str, limit: int = MAX_CHARS) -> list[str]:
    """``text`` in parts of at most ``limit`` characters, cut at whitespace where possible."""
    parts: list[str] = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit)
        cut = cut if cut > 0 else limit
        parts.append(text[:cut])
        text = text[cut:].lstrip()
    return [*parts, text]


def slug(text: str) -> str:
    """An id the API accepts, derived from a dataset name."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", text).strip("-").lower() or "x"


def workspace_id(benchmark: str, case: Case) -> str:
    """One workspace per conversation, so cases never see each other's memory."""
    return f"bench-{benchmark}-{slug(case.id)}"


def client(url: str, benchmark: str, case: Case) -> Honcho:
    """An SDK client on the case's workspace."""
    key = local_api_key(InfraSettings().state_dir)  # HONCHO_API_KEY, else `mnemo up`'s admin key
    return Honcho(
        base_url=url, workspace_id=workspace_id(benchmark, case), timeout=300.0, api_key=key
    )


def ingest(
    honcho: Honcho,
    case: Case,
    done: Collection[str] = (),
    on_session: Callable[[str], None] = lambda _id: None,
) -> dict[str, Any]:
    """Peers per speaker, one session per dated session, messages with their own timestamps.

    Sessions in ``done`` are skipped and ``on_session`` is told of each one finished, so an
    interrupted ingest resumes at the session it was in rather than duplicating messages.
    """
    peers = {s: honcho.peer(slug(s)) for s in case.speakers}
    count = 0
    for s in case.sessions:
        if s.id in done:
            continue
        session = honcho.session(
            slug(s.id), metadata={"started_at": s.at.isoformat()} if s.at else None
        )
        session.add_peers(list(peers.values()))
        msgs = [
            MessageCreateParams(
                peer_id=peers[t.speaker].id if t.speaker in peers else slug(t.speaker),
                content=part,
                created_at=t.at,
                # The dataset's id travels with the message so provenance maps back to evidence;
                # a message over the API's size limit is posted in parts that share the id.
                metadata={"turn_id": t.id},
            )
            for t in s.turns
            for part in split_text(t.text)
        ]
        for i in range(0, len(msgs), BATCH):
            session.add_messages(msgs[i : i + BATCH])
        count += len(msgs)
        on_session(s.id)
    return {"workspace": honcho.workspace_id, "messages": count, "sessions": len(case.sessions)}


def drain(honcho: Honcho, *, timeout_s: float, stall_s: float = 180.0, label: str = "") -> bool:
    """Wait until the workspace's queue is empty; False when ``timeout_s`` ran out first, or
    when no work unit completed for ``stall_s`` (a lost unit must not hang the whole run)."""
    deadline = time.monotonic() + timeout_s
    last_done, last_change = -1, time.monotonic()
    while True:
        status = honcho.queue_status()
        left = status.pending_work_units + status.in_progress_work_units
        if status.completed_work_units != last_done:
            last_done, last_change = status.completed_work_units, time.monotonic()
        print(
            f"\r  {label} memory: {status.completed_work_units}/{status.total_work_units} work units",
            end="",
            file=sys.stderr,
            flush=True,
        )
        if left == 0:
            print(file=sys.stderr)
            return True
        if time.monotonic() > deadline or time.monotonic() - last_change > stall_s:
            print(f"  (gave up waiting, {left} work units left)", file=sys.stderr)
            return False
        time.sleep(1.0)

"""Direct reads of the event log (JetStream's direct get, which the stream allows).

One request answers each: the event at a position; the newest event on a subject filter, or the
newest at or before a position (what a stage needs to find the turn before a message, from the
log rather than from a projection that may be behind); and the first event after a position,
with how many more match (how far a projection is behind, and since when).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from mnemo_schema import subjects

_API = f"$JS.API.DIRECT.GET.{subjects.STREAM}"
_TIMEOUT_S = 5.0


class DirectGetError(RuntimeError):
    """The stream answered a direct read with an error status."""


@dataclass(frozen=True)
class Stored:
    """One event as the stream holds it."""

    seq: int
    subject: str
    data: bytes
    time: datetime | None
    # In a batch answer: events matching the filter after this one.
    pending: int = 0


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    # RFC 3339 with nanoseconds: Python keeps microseconds.
    head, _, rest = value.rstrip("Z").partition(".")
    micros = (rest + "000000")[:6]
    return datetime.fromisoformat(f"{head}.{micros}").replace(tzinfo=UTC)


def _stored(m: Msg) -> Stored | None:
    headers = m.headers or {}
    status = headers.get("Status")
    if status == "404" or status == "204":
        return None
    if status:
        raise DirectGetError(f"direct get failed: {status} {headers.get('Description', '')}")
    return Stored(
        seq=int(headers["Nats-Sequence"]),
        subject=headers["Nats-Subject"],
        data=m.data,
        time=_time(headers.get("Nats-Time-Stamp")),
        pending=int(headers.get("Nats-Num-Pending") or 0),
    )


async def _one(nc: NATS, body: dict[str, object]) -> Stored | None:
    m = await nc.request(_API, json.dumps(body).encode(), timeout=_TIMEOUT_S)
    return _stored(m)


async def _first_of_batch(nc: NATS, body: dict[str, object]) -> Stored | None:
    """The first answer of a batch request (``batch`` 1), then its end-of-batch marker."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    try:
        await nc.publish(_API, json.dumps({**body, "batch": 1}).encode(), reply=inbox)
        return _stored(await sub.next_msg(timeout=_TIMEOUT_S))
    finally:
        await sub.unsubscribe()


async def at(nc: NATS, seq: int) -> Stored | None:
    """The event at position ``seq``, if the stream holds it."""
    return await _one(nc, {"seq": seq})


async def last(nc: NATS, subject_filter: str) -> Stored | None:
    """The newest event matching ``subject_filter`` (wildcards allowed)."""
    return await _one(nc, {"last_by_subj": subject_filter})


async def last_up_to(nc: NATS, subject: str, up_to_seq: int) -> Stored | None:
    """The newest event on ``subject`` at or before position ``up_to_seq``.

    ``subject`` must name one stored subject (a wildcard may stand for the partition token):
    for a filter matching several, the stream answers with the newest of each.
    """
    if up_to_seq < 1:
        return None
    return await _first_of_batch(nc, {"multi_last": [subject], "up_to_seq": up_to_seq})


async def next_from(nc: NATS, subject_filter: str, seq: int) -> Stored | None:
    """The first event matching ``subject_filter`` at or after ``seq``, with ``pending`` the
    number of matching events after it."""
    return await _first_of_batch(nc, {"seq": max(seq, 1), "next_by_subj": subject_filter})

"""Dead letters: work a stage could not complete, kept with the reason until an operator acts.

Every stage (the projections and the background stages) records its dead letters in one
Postgres table, ``dead_letters``: a projection in the same transaction that moves its position
past the event, so the two never disagree. A copy of each letter goes to
``mnemo.dlq.<stage>`` in the ``MNEMO_DEAD_LETTERS`` stream, for alerting consumers on the bus.

A letter is ``open`` until ``mnemo dlq redrive`` asks its stage to try again (``redrive``: the
stage picks it up when idle, with a corrected event if one was given) or ``mnemo dlq discard``
closes it. A redriven letter is ``redriven``; one that fails again is ``open`` again, with the
new reason. Each letter has a ``key`` unique within its stage (the stream position of an event,
or what identifies a batch), so recording the same failure twice updates one letter.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import nats.errors
import psycopg
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError
from psycopg.types.json import Jsonb
from psycopg_pool import PoolTimeout
from pydantic import ValidationError

from mnemo_runtime import metrics
from mnemo_runtime.logging import get_logger
from mnemo_runtime.models.ports import ModelUnavailable
from mnemo_runtime.pg import Connection, Pool
from mnemo_schema import subjects
from mnemo_schema.errors import Refusal, refusal

log = get_logger("mnemo.deadletters")

MAX_DATA_BYTES = 1 << 20
OPEN_STATES = ("open", "redrive")


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` is the infrastructure failing (retry without limit) rather than the work.

    A model provider that stays unavailable, Postgres, NATS or a vector store that cannot be
    reached, or a service the work asks (the retrieval engine) refusing with 503 (unreachable,
    stopping, or its own store away): the same work succeeds once they are back. Anything else
    counts against the work's attempts.
    """
    if isinstance(exc, Refusal):
        return exc.status == 503
    return isinstance(
        exc,
        ModelUnavailable
        | psycopg.OperationalError
        | psycopg.InterfaceError
        | PoolTimeout
        | nats.errors.Error
        | httpx.TransportError
        | ConnectionError
        | TimeoutError,
    )


def sanitised(reason: str) -> str:
    """A reason that Postgres can store whatever the failing text held, at most 4,000 chars."""
    text = reason.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\x00", "\\x00")[:4000]


def undecodable(err: ValidationError) -> str:
    """The reason an event does not decode, naming the field at fault."""
    return f"undecodable event: {refusal(err).detail}"


def scope_of_subject(subject: str) -> dict[str, str | None]:
    """Workspace, session and representation named by an event subject (see ``subjects``), in
    the form publishers send or the stored one (with the partition after the workspace)."""
    parts = subject.split(".")
    if subjects.partition_of_subject(subject) is not None:
        del parts[3]
    out: dict[str, str | None] = {
        "workspace": parts[2] if len(parts) > 2 else None,
        "session_id": None,
        "observer": None,
        "observed": None,
    }
    if len(parts) >= 5 and parts[3] in ("msg", "sum"):
        out["session_id"] = parts[4]
    elif len(parts) >= 6 and parts[3] in ("obs", "dream"):
        out["observer"], out["observed"] = parts[4], parts[5]
    return out


@dataclass
class Letter:
    """One piece of failed work and what it touched."""

    key: str
    reason: str
    stream_seq: int | None = None
    subject: str | None = None
    event_id: str | None = None
    event_type: str | None = None
    workspace: str | None = None
    session_id: str | None = None
    observer: str | None = None
    observed: str | None = None
    attempts: int = 1
    data: bytes | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_event(
        cls,
        seq: int,
        subject: str,
        data: bytes,
        reason: str,
        event: Any = None,
        attempts: int = 1,
    ) -> Letter:
        """The letter of the event at stream position ``seq`` (decoded or not)."""
        scope = scope_of_subject(subject)
        for name in ("workspace", "session_id", "observer", "observed"):
            value = getattr(event, name, None)
            if isinstance(value, str):
                scope[name] = value
        return cls(
            key=str(seq),
            reason=sanitised(reason),
            stream_seq=seq,
            subject=subject,
            event_id=getattr(event, "event_id", None),
            event_type=getattr(event, "type", None),
            attempts=attempts,
            data=data[:MAX_DATA_BYTES],
            workspace=scope["workspace"],
            session_id=scope["session_id"],
            observer=scope["observer"],
            observed=scope["observed"],
        )


_RECORD = """
INSERT INTO dead_letters (stage, key, reason, stream_seq, subject, event_id, event_type,
    workspace, session_id, observer, observed, attempts, data, detail)
VALUES (%(stage)s, %(key)s, %(reason)s, %(stream_seq)s, %(subject)s, %(event_id)s,
    %(event_type)s, %(workspace)s, %(session_id)s, %(observer)s, %(observed)s, %(attempts)s,
    %(data)s, %(detail)s)
ON CONFLICT (stage, key) DO UPDATE SET
    reason = EXCLUDED.reason, status = 'open', attempts = dead_letters.attempts + EXCLUDED.attempts,
    updated_at = now(), resolved_at = NULL
RETURNING id
"""


async def ensure_dead_letter_stream(js: JetStreamContext) -> None:
    """Create ``MNEMO_DEAD_LETTERS`` if missing (idempotent, safe from every stage)."""
    try:
        await js.stream_info(subjects.DEAD_LETTER_STREAM)
    except NotFoundError:
        # Another stage may create it at the same moment; either creation is the same stream.
        with contextlib.suppress(Exception):
            await js.add_stream(
                StreamConfig(
                    name=subjects.DEAD_LETTER_STREAM,
                    subjects=[subjects.DEAD_LETTER_SUBJECTS],
                    storage=StorageType.FILE,
                )
            )


class DeadLetters:
    """Records one stage's dead letters (and announces them on the bus)."""

    def __init__(self, js: JetStreamContext, pool: Pool, stage: str) -> None:
        self._js = js
        self._pool = pool
        self.stage = stage

    async def ensure(self) -> None:
        """Create the announcement stream if missing (the table comes from the migrations)."""
        await ensure_dead_letter_stream(self._js)

    async def record(self, conn: Connection, letter: Letter) -> int:
        """Record ``letter`` inside the caller's transaction; its id. Announce it after commit."""
        values = {
            **letter.__dict__,
            "stage": self.stage,
            "detail": Jsonb(letter.detail),
        }
        cur = await conn.execute(_RECORD, values)
        row: Any = await cur.fetchone()
        return int(row["id"] if isinstance(row, Mapping) else row[0])

    async def park(self, letter: Letter) -> int:
        """Record ``letter`` on its own and announce it; its id."""
        async with self._pool.connection() as conn:
            letter_id = await self.record(conn, letter)
        await self.announce(letter_id, letter)
        return letter_id

    async def announce(self, letter_id: int, letter: Letter) -> None:
        """The alert-worthy part: an error log line and a copy on ``mnemo.dlq.<stage>``."""
        metrics.DEAD_LETTERS_RECORDED.labels(self.stage).inc()
        log.error(
            "dead_letter.recorded",
            stage=self.stage,
            letter=letter_id,
            reason=letter.reason,
            stream_seq=letter.stream_seq,
            workspace=letter.workspace,
            session=letter.session_id,
        )
        body = {
            "id": letter_id,
            "stage": self.stage,
            "key": letter.key,
            "reason": letter.reason,
            "stream_seq": letter.stream_seq,
            "subject": letter.subject,
            "workspace": letter.workspace,
            "session_id": letter.session_id,
            "observer": letter.observer,
            "observed": letter.observed,
            "detail": letter.detail,
        }
        try:
            await self._js.publish(
                subjects.dead_letter_subject(self.stage), json.dumps(body, default=str).encode()
            )
        except Exception as err:  # the table holds the letter; the copy is a courtesy
            log.warning("dead_letter.announce_failed", stage=self.stage, error=repr(err))

    async def redrives(self, limit: int = 20) -> list[dict[str, Any]]:
        """Letters of this stage an operator asked to redrive, oldest first."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT * FROM dead_letters WHERE stage = %s AND status = 'redrive'"
                " ORDER BY id LIMIT %s",
                (self.stage, limit),
            )
            return [dict(r) for r in await cur.fetchall()]

    async def resolve(self, conn: Connection, letter_id: int) -> None:
        """Mark a letter redriven inside the caller's transaction."""
        await conn.execute(
            "UPDATE dead_letters SET status = 'redriven', resolved_at = now(), updated_at = now()"
            " WHERE id = %s",
            (letter_id,),
        )

    async def mark_redriven(self, letter_id: int) -> None:
        """Mark a letter redriven on its own."""
        async with self._pool.connection() as conn:
            await self.resolve(conn, letter_id)
        log.info("dead_letter.redriven", stage=self.stage, letter=letter_id)

    async def reopen(self, letter_id: int) -> None:
        """A letter asked for redrive whose work failed again (and was recorded again)."""
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE dead_letters SET status = 'open', updated_at = now()"
                " WHERE id = %s AND status = 'redrive'",
                (letter_id,),
            )

    async def fail_redrive(self, letter_id: int, reason: str) -> None:
        """A redrive that failed: the letter is open again, with the new reason."""
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE dead_letters SET status = 'open', reason = %s, attempts = attempts + 1,"
                " updated_at = now() WHERE id = %s",
                (sanitised(reason), letter_id),
            )
        log.error("dead_letter.redrive_failed", stage=self.stage, letter=letter_id, reason=reason)

    async def resolution(self, conn: Connection, key: str) -> dict[str, Any] | None:
        """How an operator settled the letter ``key`` (replays meet the same event again)."""
        cur = await conn.execute(
            "SELECT id, status, fixed_data FROM dead_letters WHERE stage = %s AND key = %s",
            (self.stage, key),
        )
        row: Any = await cur.fetchone()
        return None if row is None else dict(row)


Redriver = Callable[[dict[str, Any]], Awaitable[None]]


class Reparked(Exception):
    """A redriven piece of work failed again and was recorded anew, with its new reason."""


async def redrive_loop(
    dead: DeadLetters,
    redrive: Redriver,
    stop: asyncio.Event,
    every_s: float = 2.0,
    wanted: Callable[[dict[str, Any]], bool] = lambda _letter: True,
) -> None:
    """Until ``stop``: carry out the redrives an operator asked of this stage.

    ``redrive`` does the work of one letter, raising if it fails; the letter is then redriven,
    or open again with the new reason (a failure of the infrastructure is tried again later).
    ``wanted``: the letters this replica redrives (those of the partitions it works).
    """
    while not stop.is_set():
        try:
            for letter in [x for x in await dead.redrives() if wanted(x)]:
                try:
                    await redrive(letter)
                except Reparked:
                    await dead.reopen(letter["id"])
                    continue
                except Exception as err:
                    if not transient(err):
                        await dead.fail_redrive(letter["id"], repr(err))
                    continue
                await dead.mark_redriven(letter["id"])
        except Exception as err:
            log.warning("dead_letter.redrive_check_failed", stage=dead.stage, error=repr(err))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)


def letter_partition(letter: Mapping[str, Any], partitions: int) -> int:
    """The partition of the work a letter holds (that of its workspace; 0 without one)."""
    subject = letter.get("subject")
    if isinstance(subject, str):
        found = subjects.partition_of_subject(subject)
        if found is not None:
            return found
    workspace = letter.get("workspace")
    return subjects.partition_of(workspace, partitions) if isinstance(workspace, str) else 0

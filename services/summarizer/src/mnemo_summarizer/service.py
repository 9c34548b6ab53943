"""Deliveries in, counted one by one; summaries written in the sessions' turns; acks last.

A delivered message is counted toward its session's summaries as it comes. One whose count
completes a summary waits in its session's line (``lines``): a session's summaries are written
in order, the sessions of all workspaces sharing ``max_concurrent_summaries`` slots in turns,
while the later messages of every session are counted. A message is acknowledged once it is
counted, every summary it completed is published (or parked as a dead letter), and its
session's progress (for the queue status) is recorded; a session's progress never passes a
summary not yet written, and the message that completed it stays unacknowledged until it is,
so a crash delivers it again (and counts what followed it again, from what is stored).

A model outage (or the database or the bus being away) leaves the summary at the head of its
line, tried again after ``retry_delay_s``, without limit. Any other failure is tried again until
the message has failed ``max_attempts`` times (deliveries by the bus included), then the summary
is parked as a dead letter and the session goes on. A message that cannot be counted (its
session's state not readable) is handed back to the bus, its session's later messages after it.

A session's counters are rebuilt from what is stored (its summaries and messages) when it is
first met; they are read only once the entity projection holds every message before the one
being counted, so what is counted depends on the log alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace

from mnemo_runtime.deadletters import transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.models import ChatModel, MalformedOutput, ModelRejected
from mnemo_runtime.precedence import precedence
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted
from mnemo_schema.summaries import SummaryType
from mnemo_summarizer.cadence import Cadence, Job, SessionLog
from mnemo_summarizer.domain import (
    answer,
    message_letter,
    redriven_summary,
    request,
    summary_event,
    summary_letter,
    turn_of,
)
from mnemo_summarizer.lines import Due, Lines
from mnemo_summarizer.ports import DeadLetters, Progress, SessionHistory, SummaryLog
from mnemo_summarizer.settings import SummarizerSettings

log = get_logger("mnemo.summarizer")
_tracer = tracer("mnemo.summarizer")

SessionKey = tuple[str, str]


class SummarizerService:
    def __init__(
        self,
        settings: SummarizerSettings,
        model: ChatModel,
        log_: SummaryLog,
        history: SessionHistory,
        dead_letters: DeadLetters,
        count_tokens: Callable[[str], int],
        progress: Progress,
        max_sessions: int = 10_000,
        record_pause_s: float = 0.1,
    ) -> None:
        self._s = settings
        self._model = model
        self._log = log_
        self._history = history
        self._dead = dead_letters
        self._count = count_tokens
        self._progress = progress
        # The first pause between tries to record progress (doubling, at most 2 s).
        self._record_pause_s = record_pause_s
        self._default = Cadence(
            short=settings.messages_per_short_summary, long=settings.messages_per_long_summary
        )
        # Least recently used sessions are forgotten past ``max_sessions``: their state is
        # rebuilt from the stored summaries and messages when they speak again.
        self._sessions: OrderedDict[SessionKey, SessionLog] = OrderedDict()
        self._max_sessions = max_sessions
        # A session whose message went back for redelivery: its later messages wait for it.
        self._blocked: dict[SessionKey, int] = {}
        self._partition: dict[SessionKey, int] = {}
        # What the deliveries being handled completed: acks wait for their progress record.
        self._acks: list[Delivery] = []
        self._done: dict[SessionKey, tuple[int, int]] = {}
        # The summaries due, and those being written.
        self.lines = Lines()
        self._counted: dict[SessionKey, int] = {}  # session -> its newest message counted
        self._writing: set[asyncio.Task[None]] = set()
        self._running: Counter[SessionKey] = Counter()
        self._waiting: dict[SessionKey, asyncio.TimerHandle] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    def session(self, workspace: str, session_id: str) -> SessionLog | None:
        """The in-memory state of a session, if loaded."""
        return self._sessions.get((workspace, session_id))

    async def deliver(self, partition: int, deliveries: list[Delivery]) -> None:
        """Handle delivered messages of ``partition`` in stream order; record how far each
        session has come; then acknowledge what is done."""
        for d in deliveries:
            self._partition[(d.event.workspace, d.event.session_id)] = partition
            await self.handle(d)
        self._pump()
        await self.settle()

    async def settle(self) -> None:
        """Record the progress of what was handled, then acknowledge it."""
        acks, self._acks = self._acks, []
        done, self._done = self._done, {}
        if done and not await self._record(done):
            # Handed back: delivered again shortly, counted as seen, recorded then.
            for d in acks:
                with contextlib.suppress(Exception):
                    await d.nak(self._s.retry_delay_s)
            return
        for d in acks:
            try:
                await d.ack()
            except Exception as err:
                log.warning("summarizer.ack_failed", seq=d.seq, error=repr(err))

    async def _record(self, done: dict[SessionKey, tuple[int, int]]) -> bool:
        for attempt in range(10):
            try:
                await self._progress.done(done)
                return True
            except Exception as err:
                log.warning("summarizer.progress_failed", attempt=attempt + 1, error=repr(err))
                await asyncio.sleep(min(self._record_pause_s * 2**attempt, 2.0))
        return False

    async def release(self, partition: int) -> None:
        """Forget the sessions of ``partition``: another replica counts them now. Summaries
        being written are finished; those waiting are left to it (their messages are not
        acknowledged: it is delivered them again)."""

        def keep(key: SessionKey) -> bool:
            return self._partition.get(key) != partition

        self.lines.drop(keep)
        for key in [k for k in self._waiting if not keep(k)]:
            self._waiting.pop(key).cancel()
        while any(not keep(k) for k in self._running):
            self._idle.clear()
            await self._idle.wait()
        gone = [k for k, p in self._partition.items() if p == partition]
        for key in gone:
            self._sessions.pop(key, None)
            self._blocked.pop(key, None)
            self._counted.pop(key, None)
            del self._partition[key]

    async def drain(self) -> None:
        """Wait until every summary due is written (or parked), and settled."""
        while self._writing or len(self.lines) or self._waiting:
            self._idle.clear()
            await self._idle.wait()

    def _completed(self, d: Delivery, summary_seq: int = 0) -> None:
        key = (d.event.workspace, d.event.session_id)
        seq, summaries = self._done.get(key, (0, 0))
        self._done[key] = (max(seq, d.seq), max(summaries, summary_seq))
        self._acks.append(d)

    async def handle(self, d: Delivery) -> None:
        """Count one message; queue the summaries it completes (``lines``)."""
        e = d.event
        key = (e.workspace, e.session_id)
        blocked = self._blocked.get(key)
        if blocked is not None and d.seq > blocked:
            await d.nak(self._s.retry_delay_s)
            return
        if blocked == d.seq:
            del self._blocked[key]
        due = self.lines.find(key, d.seq)
        if due is not None:  # delivered again while its summaries are due: the newest settles
            due.delivery = d
            return
        try:
            state = await self._state(key, d.seq)
        except Exception as err:
            if self._retry(err, d):
                log.warning("summarizer.retry_later", error=repr(err), session=e.session_id)
                await self._requeue(key, d)
            else:
                await self._park_message(d, err)
                self._completed(d)
            return
        if state.seen(d.seq):
            self._count_settled(key, d)
            return
        turn = turn_of(d.seq, e)
        jobs = state.due(turn)
        # Each window closes now; a job's previous summary is the one its type has when it runs.
        state.accept(turn, dict.fromkeys((j.kind for j in jobs), None))
        self._counted[key] = d.seq
        if jobs:
            self.lines.put(key, Due(d, turn, jobs, state))
        else:
            self._count_settled(key, d)

    def _count_settled(self, key: SessionKey, d: Delivery) -> None:
        """``d`` is counted and completed no summary: recorded and acknowledged, or, behind a
        summary of its session not yet written, acknowledged only (the record waits for the
        summary; a crash delivers that summary's message again, and this one after it)."""
        if self.lines.waiting(key):
            self._acks.append(d)
        else:
            self._completed(d)

    def _pump(self) -> None:
        """Start writing the heads of the lines while slots are free, sessions in turns."""
        while len(self._writing) < self._s.max_concurrent_summaries:
            taken = self.lines.take()
            if taken is None:
                break
            key, due = taken
            task = asyncio.create_task(self._run(key, due))
            self._writing.add(task)
            self._running[key] += 1
            task.add_done_callback(self._finished)
        if not self._writing and not len(self.lines) and not self._waiting:
            self._idle.set()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._writing.discard(task)
        self._pump()
        self._idle.set()

    async def _run(self, key: SessionKey, due: Due) -> None:
        try:
            again = await self._write_due(due)
        except Exception:
            log.exception("summarizer.summary_failed", session=key[1])
            again = True
        finally:
            self._running[key] -= 1
            if self._running[key] <= 0:
                del self._running[key]
        if self._partition.get(key) is None:
            return  # handed over meanwhile
        if again:
            self.lines.pause(key)
            loop = asyncio.get_running_loop()
            self._waiting[key] = loop.call_later(self._s.retry_delay_s, self._resume, key)
            return
        self.lines.finished(key)
        following = self.lines.head(key)
        upto = following.turn.seq - 1 if following else self._counted.get(key, due.turn.seq)
        seq, summaries = self._done.get(key, (0, 0))
        self._done[key] = (max(seq, upto, due.turn.seq), max(summaries, due.summary_seq))
        self._acks.append(due.delivery)
        await self.settle()

    def _resume(self, key: SessionKey) -> None:
        if self._waiting.pop(key, None) is not None:
            self.lines.resume(key)
            self._pump()

    async def _write_due(self, due: Due) -> bool:
        """Write ``due``'s summaries not yet written; True if the rest is to be tried again
        later (an outage, or a failure with attempts left)."""
        e = due.cause
        for job in due.jobs:
            if job.kind in due.written:
                continue
            # Nobody waits on a summary: it gives way to the process's foreground work.
            await precedence().background_step("summarizer", e.workspace)
            job = replace(job, previous=due.state.tracks[job.kind].previous)
            try:
                content, seq = await self._write(job, e, due.state.cadence.instructions)
            except Exception as err:
                # A summary published before the failure is published again with the same
                # event id, which the log de-duplicates.
                if not transient(err):
                    due.failures += 1
                    if due.delivery.attempts - 1 + due.failures >= self._s.max_attempts:
                        await self._park(job, e, repr(err))
                        due.written[job.kind] = None
                        continue
                log.warning("summarizer.retry_later", error=repr(err), session=e.session_id)
                return True
            due.written[job.kind] = content
            due.summary_seq = max(due.summary_seq, seq)
            if content is not None:
                due.state.tracks[job.kind].previous = content
        return False

    async def _write(
        self, job: Job, cause: MessagePosted, instructions: str | None = None
    ) -> tuple[str | None, int]:
        """Write and publish one summary; its content (None when it was parked as a dead
        letter) and position."""
        limit = self._s.short_word_limit if job.kind == "short" else self._s.long_word_limit
        with _tracer.start_as_current_span(
            "summarizer.summary",
            context=extract_context(cause.trace),
            attributes={"kind": job.kind, "messages": len(job.turns)},
        ):
            try:
                content = await self._summarize(job, limit, instructions)
            except (MalformedOutput, ModelRejected) as err:
                await self._park(job, cause, f"{type(err).__name__}: {err}")
                return None, 0
            event = summary_event(job, content, self._count(content), cause)
            (seq,) = await self._log.publish([event])
        log.info(
            "summarizer.summary",
            kind=job.kind,
            session=cause.session_id,
            messages_covered=job.messages_covered,
        )
        return content, seq

    def _retry(self, err: Exception, d: Delivery) -> bool:
        """Whether to hand ``d`` back (an outage, or attempts left) rather than park it."""
        return transient(err) or d.attempts < self._s.max_attempts

    async def _park(self, job: Job, cause: MessagePosted, reason: str) -> None:
        await self._dead.park(summary_letter(job, cause, reason))

    async def _park_message(self, d: Delivery, err: Exception) -> None:
        await self._dead.park(message_letter(d.seq, d.event, repr(err), d.attempts))

    async def redrive(self, workspace: str, session_id: str, kinds: Sequence[SummaryType]) -> int:
        """Summarize a session again now, from its newest stored summaries and the messages
        since; how many summaries were written. What an operator's redrive of a dead summary
        does: the summary that was lost is replaced by one that covers up to now."""
        record = await self._history.load(workspace, session_id, 2**62)
        written = 0
        for kind in kinds:
            stored = record.latest.get(kind)
            since = stored.message_seq if stored else 0
            turns = tuple(t for t in record.messages if t.seq > since)
            if not turns:
                continue
            covered = (stored.messages_covered if stored else 0) + len(turns)
            job = Job(kind, stored.content if stored else None, turns, covered)
            limit = self._s.short_word_limit if kind == "short" else self._s.long_word_limit
            content = await self._summarize(job, limit, record.instructions)
            await self._log.publish(
                [redriven_summary(job, content, self._count(content), workspace, session_id)]
            )
            written += 1
        # The session's counters are rebuilt from what is stored now, the new summaries included.
        self._sessions.pop((workspace, session_id), None)
        return written

    async def _summarize(self, job: Job, word_limit: int, instructions: str | None = None) -> str:
        req = request(job, word_limit, self._s.max_output_tokens, instructions)
        reason = ""
        for _ in range(self._s.attempts):
            response = await self._model.complete(req)
            content = answer(response)
            if content is not None:
                return content
            reason = f"empty or refused answer (stop_reason={response.stop_reason})"
        raise MalformedOutput(reason, tool="summary", attempts=self._s.attempts)

    async def _state(self, key: SessionKey, seq: int) -> SessionLog:
        state = self._sessions.get(key)
        if state is not None:
            self._sessions.move_to_end(key)
            return state
        await self._history.caught_up(key[0], seq)
        record = await self._history.load(key[0], key[1], seq)
        cadence = replace(
            self._default.overridden(record.configs), instructions=record.instructions
        )
        state = SessionLog.restore(cadence, record.latest, record.messages)
        self._sessions[key] = state
        for old in list(self._sessions):
            if len(self._sessions) <= self._max_sessions:
                break
            if not self.lines.waiting(old):  # its summaries due hold its state
                del self._sessions[old]
        return state

    async def _requeue(self, key: SessionKey, d: Delivery) -> None:
        self._blocked[key] = d.seq
        await d.nak(self._s.retry_delay_s)

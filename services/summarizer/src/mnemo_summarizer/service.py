"""Deliveries in, one session at a time; summaries out when a cadence is reached; acks last.

A delivered message is acknowledged once its session's counters include it, every summary it
completed is published (or parked as a dead letter) and the session's progress (for the queue
status) says so. A model outage (or the database or the bus being away) hands it back for
redelivery, and the later messages of its session follow it back so the session is counted in
order. Any other failure is tried again up to ``max_attempts`` deliveries and then parked as a
dead letter, so one message never holds its session back. Deliveries are handled one by one:
summaries are rare (one call per 20 messages) and order within a session matters more than
parallel model calls.

A session's counters are rebuilt from what is stored (its summaries and messages) when it is
first met; they are read only once the entity projection holds every message before the one
being counted, so what is counted depends on the log alone.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace

from mnemo_runtime.deadletters import Letter, transient
from mnemo_runtime.logging import get_logger
from mnemo_runtime.models import ChatModel, MalformedOutput, ModelRejected
from mnemo_runtime.precedence import precedence
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted
from mnemo_schema.summaries import SummaryType
from mnemo_summarizer.cadence import Cadence, Job, SessionLog
from mnemo_summarizer.domain import answer, redriven_summary, request, summary_event, turn_of
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

    def session(self, workspace: str, session_id: str) -> SessionLog | None:
        """The in-memory state of a session, if loaded."""
        return self._sessions.get((workspace, session_id))

    async def deliver(self, partition: int, deliveries: list[Delivery]) -> None:
        """Handle delivered messages of ``partition`` in stream order; record how far each
        session has come; then acknowledge what is done."""
        for d in deliveries:
            self._partition[(d.event.workspace, d.event.session_id)] = partition
            await self.handle(d)
        await self.settle()

    async def settle(self) -> None:
        """Record the progress of what was handled, then acknowledge it."""
        acks, self._acks = self._acks, []
        done, self._done = self._done, {}
        if done and not await self._record(done):
            return  # not acknowledged: delivered again, counted as seen, recorded then
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
        """Forget the sessions of ``partition``: another replica counts them now."""
        gone = [k for k, p in self._partition.items() if p == partition]
        for key in gone:
            self._sessions.pop(key, None)
            self._blocked.pop(key, None)
            del self._partition[key]

    def _completed(self, d: Delivery, summary_seq: int = 0) -> None:
        key = (d.event.workspace, d.event.session_id)
        seq, summaries = self._done.get(key, (0, 0))
        self._done[key] = (max(seq, d.seq), max(summaries, summary_seq))
        self._acks.append(d)

    async def handle(self, d: Delivery) -> None:
        """Count one message, write the summaries it completes, then settle it."""
        e = d.event
        key = (e.workspace, e.session_id)
        blocked = self._blocked.get(key)
        if blocked is not None and d.seq > blocked:
            await d.nak(self._s.retry_delay_s)
            return
        if blocked == d.seq:
            del self._blocked[key]
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
            self._completed(d)
            return
        turn = turn_of(d.seq, e)
        written: dict[SummaryType, str | None] = {}
        summary_seq = 0
        for job in state.due(turn):
            # Nobody waits on a summary: it gives way to the process's foreground work.
            await precedence().background_step("summarizer", e.workspace)
            try:
                content, seq = await self._write(job, e, state.cadence.instructions)
                written[job.kind] = content
                summary_seq = max(summary_seq, seq)
            except Exception as err:
                # Summaries already published for this message are published again with the
                # same event id on redelivery, which the log de-duplicates.
                if self._retry(err, d):
                    log.warning("summarizer.retry_later", error=repr(err), session=e.session_id)
                    await self._requeue(key, d)
                    return
                await self._park(job, e, repr(err))
                written[job.kind] = None
        state.accept(turn, written)
        self._completed(d, summary_seq)

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
        newest = job.newest
        await self._dead.park(
            Letter(
                key=f"{cause.workspace}/{cause.session_id}/{job.kind}/{newest.seq}",
                reason=reason,
                workspace=cause.workspace,
                session_id=cause.session_id,
                detail={
                    "summary_type": job.kind,
                    "message_seq": newest.seq,
                    "message_ids": [t.message_id for t in job.turns],
                },
            )
        )

    async def _park_message(self, d: Delivery, err: Exception) -> None:
        e = d.event
        await self._dead.park(
            Letter(
                key=f"{e.workspace}/{e.session_id}/message/{d.seq}",
                reason=repr(err),
                stream_seq=d.seq,
                workspace=e.workspace,
                session_id=e.session_id,
                attempts=d.attempts,
                detail={"message_ids": [e.message_id]},
            )
        )

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
        while len(self._sessions) > self._max_sessions:
            self._sessions.popitem(last=False)
        return state

    async def _requeue(self, key: SessionKey, d: Delivery) -> None:
        self._blocked[key] = d.seq
        await d.nak(self._s.retry_delay_s)

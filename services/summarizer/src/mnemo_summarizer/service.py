"""Deliveries in, one session at a time; summaries out when a cadence is reached; acks last.

A delivered message is acknowledged once its session's counters include it and every summary it
completed is published (or parked as a dead letter). A model outage hands it back for
redelivery, and the later messages of its session follow it back so the session is counted in
order. Deliveries are handled one by one: summaries are rare (one call per 20 messages) and
order within a session matters more than parallel model calls.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from mnemo_runtime.logging import get_logger
from mnemo_runtime.models import ChatModel, MalformedOutput
from mnemo_runtime.tracing import extract_context, tracer
from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted
from mnemo_schema.summaries import SummaryType
from mnemo_summarizer.cadence import Cadence, Job, SessionLog
from mnemo_summarizer.domain import answer, request, summary_event, turn_of
from mnemo_summarizer.ports import DeadLetters, SessionHistory, SummaryLog
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
        max_sessions: int = 10_000,
    ) -> None:
        self._s = settings
        self._model = model
        self._log = log_
        self._history = history
        self._dead = dead_letters
        self._count = count_tokens
        self._default = Cadence(
            short=settings.messages_per_short_summary, long=settings.messages_per_long_summary
        )
        # Least recently used sessions are forgotten past ``max_sessions``: their state is
        # rebuilt from the stored summaries and messages when they speak again.
        self._sessions: OrderedDict[SessionKey, SessionLog] = OrderedDict()
        self._max_sessions = max_sessions
        # A session whose message went back for redelivery: its later messages wait for it.
        self._blocked: dict[SessionKey, int] = {}

    def session(self, workspace: str, session_id: str) -> SessionLog | None:
        """The in-memory state of a session, if loaded."""
        return self._sessions.get((workspace, session_id))

    async def deliver(self, deliveries: list[Delivery]) -> None:
        """Handle delivered messages in stream order."""
        for d in deliveries:
            await self.handle(d)

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
            log.warning("summarizer.retry_later", error=repr(err), session=e.session_id)
            await self._requeue(key, d)
            return
        if state.seen(d.seq):
            await d.ack()
            return
        turn = turn_of(d.seq, e)
        written: dict[SummaryType, str | None] = {}
        for job in state.due(turn):
            try:
                written[job.kind] = await self._write(job, e)
            except Exception as err:
                # Summaries already published for this message are published again with the
                # same event id on redelivery, which the log de-duplicates.
                log.warning("summarizer.retry_later", error=repr(err), session=e.session_id)
                await self._requeue(key, d)
                return
        state.accept(turn, written)
        await d.ack()

    async def _write(self, job: Job, cause: MessagePosted) -> str | None:
        """Write and publish one summary; None when it was parked as a dead letter."""
        limit = self._s.short_word_limit if job.kind == "short" else self._s.long_word_limit
        with _tracer.start_as_current_span(
            "summarizer.summary",
            context=extract_context(cause.trace),
            attributes={"kind": job.kind, "messages": len(job.turns)},
        ):
            try:
                content = await self._summarize(job, limit)
            except MalformedOutput as err:
                await self._dead.park(
                    f"malformed model output: {err}",
                    {"workspace": cause.workspace, "session_id": cause.session_id,
                     "summary_type": job.kind,
                     "message_ids": [t.message_id for t in job.turns]},
                )  # fmt: skip
                return None
            event = summary_event(job, content, self._count(content), cause)
            await self._log.publish([event])
        log.info("summarizer.summary", kind=job.kind, session=cause.session_id,
                 messages_covered=job.messages_covered)  # fmt: skip
        return content

    async def _summarize(self, job: Job, word_limit: int) -> str:
        req = request(job, word_limit, self._s.max_output_tokens)
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
        record = await self._history.load(key[0], key[1], seq)
        cadence = self._default.overridden(record.configs)
        state = SessionLog.restore(cadence, record.latest, record.messages)
        self._sessions[key] = state
        while len(self._sessions) > self._max_sessions:
            self._sessions.popitem(last=False)
        return state

    async def _requeue(self, key: SessionKey, d: Delivery) -> None:
        self._blocked[key] = d.seq
        await d.nak(self._s.retry_delay_s)

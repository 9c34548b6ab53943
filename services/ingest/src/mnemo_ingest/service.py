"""Command handling: one writer per workspace, decisions on the write model, events to the log."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from mnemo_ingest.decision import Context, Decision
from mnemo_ingest.domain import decide
from mnemo_ingest.model import WorkspaceModel
from mnemo_ingest.ports import EventLog, MessageDirectory, SessionCopy, Tokenizer
from mnemo_runtime.logging import get_logger
from mnemo_schema import commands as c
from mnemo_schema import subjects
from mnemo_schema.errors import Refusal
from mnemo_schema.events import MessagePosted
from mnemo_schema.keys import KeyRevoked, RevokeKey

log = get_logger("mnemo.ingest")
INLINE_TOKENIZE_CHARS = 2_000


class IngestService:
    """Validates commands and appends their events.

    Commands of one workspace are handled one at a time against a write model rebuilt from the
    workspace's entity events, so membership and configuration are exact at the moment each
    message is routed and per-session order is the order of acceptance.
    """

    def __init__(self, log_: EventLog, directory: MessageDirectory, tokens: Tokenizer) -> None:
        self._log = log_
        self._directory = directory
        self._tokens = tokens
        self._models: dict[str, WorkspaceModel] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        # The newest append of each workspace, and which of its events the entity projection
        # applies (entity and message events).
        self._inflight: dict[str, tuple[asyncio.Future[list[int]], list[bool]]] = {}

    async def _model(self, workspace: str) -> WorkspaceModel:
        model = self._models.get(workspace)
        if model is None:
            # A command that changes nothing is answered once the projection holds everything
            # of the workspace the log held before it (what the write model was built from).
            model = WorkspaceModel(watermark=await self._log.last_seq(workspace))
            for seq, event in await self._log.entity_history(workspace):
                model.apply(event, seq)
            self._models[workspace] = model
        return model

    async def handle(
        self, workspace: str, cmd: c.Command, trace: dict[str, str] | None = None
    ) -> c.CommandReply:
        """Carry out one command; refusals come back as a reply with the HTTP status to use."""
        counts = await self._count(cmd.messages) if isinstance(cmd, c.PostMessages) else None
        copy: SessionCopy | None = None
        if isinstance(cmd, c.CloneSession):
            try:
                copy = await self._copy(workspace, cmd.session_id)
            except Refusal as r:
                return _refused(r)
        lock = self._locks.setdefault(workspace, asyncio.Lock())
        async with lock:
            model = await self._model(workspace)
            if isinstance(cmd, c.DeleteConclusion) and not await self._directory.conclusion_exists(
                workspace, cmd.conclusion_id, cmd.observer_id, cmd.observed_id
            ):
                return _refused(
                    Refusal(404, f"conclusion {cmd.conclusion_id!r} not found", "conclusion_id")
                )
            if isinstance(cmd, c.UpdateMessageMetadata | c.DeleteMessage) and (
                not (isinstance(cmd, c.DeleteMessage) and cmd.message_id in model.deleted_messages)
                and await self._directory.session_of(workspace, cmd.message_id) != cmd.session_id
            ):
                return _refused(Refusal(404, f"message {cmd.message_id!r} not found", "message_id"))
            ctx = Context(
                workspace=workspace,
                now=datetime.now(UTC),
                trace=trace or {},
                correlation_id=cmd.correlation_id,
            )
            try:
                decision = decide(model, cmd, ctx, counts, copy)
            except Refusal as r:
                # decide() refuses before it emits anything, so the model is unchanged.
                return _refused(r)
            # Queued under the lock, so the log holds events in the order they were decided;
            # the acknowledgement is awaited outside it, so the next command need not wait.
            # A command that emits nothing still waits for the newest queued events, since its
            # answer may depend on them (get-or-create of something just created).
            inflight: tuple[asyncio.Future[list[int]], list[bool]] | None
            if decision.events:
                appended = asyncio.ensure_future(await self._log.append(decision.events))
                entity = [subjects.read_model_event(e.subject()) for e in decision.events]
                inflight = self._inflight[workspace] = (appended, entity)
            else:
                inflight = self._inflight.get(workspace)
        newest = 0
        if inflight is not None:
            stored, entity = inflight
            try:
                seqs = await asyncio.shield(stored)
            except BaseException:
                # The model may be ahead of the log now: rebuild it from the log next time.
                self._models.pop(workspace, None)
                raise
            finally:
                if stored.done() and self._inflight.get(workspace) is inflight:
                    del self._inflight[workspace]
            # The write model's watermark follows what the entity projection applies: a
            # command that changes nothing waits for it there. A memory event (a conclusion, a
            # card) is awaited by its own command, in the memory projection.
            model.watermark = max(
                [model.watermark, *(seq for seq, ent in zip(seqs, entity, strict=True) if ent)]
            )
            newest = max(seqs) if decision.events else 0
        return self._reply(newest or model.watermark, decision)

    async def _copy(self, workspace: str, session_id: str) -> SessionCopy:
        """The source of a clone, read once the read side has every event appended so far.

        Read outside the workspace's lock, so other commands need not wait for it; a message
        posted meanwhile may or may not be in the copy, as if it had come a moment later.
        """
        lock = self._locks.setdefault(workspace, asyncio.Lock())
        async with lock:
            model = await self._model(workspace)
            if not model.exists:
                raise Refusal(404, f"workspace {workspace!r} not found", "workspace_id")
            if session_id not in model.sessions:
                raise Refusal(404, f"session {session_id!r} not found", "session_id")
            inflight = self._inflight.get(workspace)
        if inflight is not None:
            await asyncio.shield(inflight[0])
        return await self._directory.session_copy(workspace, session_id, model.watermark)

    async def revoke_key(
        self, cmd: RevokeKey, trace: dict[str, str] | None = None
    ) -> c.CommandReply:
        """Append ``KeyRevoked``; the reply's watermark is its position in the log."""
        event = KeyRevoked.of(cmd, trace)
        (seq,) = await (await self._log.append([event]))
        return c.CommandReply(ok=True, watermark=seq, event_ids=[event.event_id])

    async def _count(self, messages: list[c.NewMessage]) -> list[int]:
        texts = [m.content for m in messages]
        # Off the event loop once there is enough text: non-ASCII text is tokenised in Rust
        # without the GIL, overlapping other work; ASCII text is counted in Python (see
        # ``TokenCounter``), which holds it (counted on the loop in parts of 25 instead, the
        # api's loop answered no sooner under load). For a few short texts the hand-over to a
        # thread and back costs more than the counting.
        if sum(map(len, texts)) <= INLINE_TOKENIZE_CHARS:
            return self._tokens.count_many(texts)
        return await asyncio.to_thread(self._tokens.count_many, texts)

    @staticmethod
    def _reply(watermark: int, decision: Decision) -> c.CommandReply:
        return c.CommandReply(
            ok=True,
            watermark=watermark,
            event_ids=[e.event_id for e in decision.events],
            message_ids=decision.message_ids,
            observation_ids=decision.observation_ids,
            token_counts=[e.token_count for e in decision.events if isinstance(e, MessagePosted)],
            posted_at=decision.posted_at,
            created=decision.created,
            session_id=decision.session_id,
        )


_refused = c.CommandReply.refused

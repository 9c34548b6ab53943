"""Command handling: one writer per workspace, decisions on the write model, events to the log."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from mnemo_ingest.domain import Context, Refusal, decide
from mnemo_ingest.model import WorkspaceModel
from mnemo_ingest.ports import EventLog, MessageDirectory, Tokenizer
from mnemo_runtime.logging import get_logger
from mnemo_schema import commands as c

log = get_logger("mnemo.ingest")


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

    async def _model(self, workspace: str) -> WorkspaceModel:
        model = self._models.get(workspace)
        if model is None:
            head = await self._log.head()
            model = WorkspaceModel(watermark=head)
            for seq, event in await self._log.entity_history(workspace):
                model.apply(event, seq)
            self._models[workspace] = model
        return model

    async def handle(
        self, workspace: str, cmd: c.Command, trace: dict[str, str] | None = None
    ) -> c.CommandReply:
        """Carry out one command; refusals come back as a reply with the HTTP status to use."""
        counts = (
            self._tokens.count_many([m.content for m in cmd.messages])
            if isinstance(cmd, c.PostMessages)
            else None
        )
        lock = self._locks.setdefault(workspace, asyncio.Lock())
        async with lock:
            model = await self._model(workspace)
            if isinstance(cmd, c.UpdateMessageMetadata) and (
                await self._directory.session_of(workspace, cmd.message_id) != cmd.session_id
            ):
                return _refused(404, f"message {cmd.message_id!r} not found", "message_id")
            ctx = Context(
                workspace=workspace,
                now=datetime.now(UTC),
                trace=trace or {},
                correlation_id=cmd.correlation_id,
            )
            try:
                decision = decide(model, cmd, ctx, counts)
            except Refusal as r:
                # decide() folds events into the model as it goes: forget the model so the next
                # command rebuilds it from the log.
                self._models.pop(workspace, None)
                return _refused(r.status, r.detail, r.field)
            if decision.events:
                try:
                    seqs = await self._log.append(decision.events)
                except BaseException:
                    self._models.pop(workspace, None)
                    raise
                model.watermark = max(model.watermark, *seqs)
            return c.CommandReply(
                ok=True,
                watermark=model.watermark,
                event_ids=[e.event_id for e in decision.events],
                message_ids=decision.message_ids,
                created=decision.created,
            )


def _refused(status: int, detail: str, field: str | None) -> c.CommandReply:
    return c.CommandReply(ok=False, error=c.CommandError(status=status, detail=detail, field=field))

"""Bus handlers: decode a command, hand it to the service, reply. Thin by design."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from faststream.nats import NatsBroker, NatsMessage, NatsRouter
from pydantic import ValidationError

from mnemo_ingest.service import IngestService
from mnemo_runtime.logging import get_logger
from mnemo_runtime.tracing import extract_context, inject_headers, tracer
from mnemo_schema import subjects
from mnemo_schema.commands import (
    COMMAND_ADAPTER,
    COMMAND_KINDS,
    Command,
    CommandReply,
)
from mnemo_schema.errors import Refusal, refusal
from mnemo_schema.ids import ID_PATTERN
from mnemo_schema.keys import KEY_COMMANDS, RevokeKey

_tracer = tracer("mnemo.ingest")
log = get_logger("mnemo.ingest")


def validation_reply(err: ValidationError) -> CommandReply:
    """A 422 reply naming the first invalid field, dotted (``messages.3.content``)."""
    return CommandReply.refused(refusal(err, skip=COMMAND_KINDS))


async def _itself(msg: NatsMessage) -> NatsMessage:
    return msg


def _reply_to_inboxes_only(msg: NatsMessage) -> None:
    """Drop a reply subject that is not an inbox (see ``subjects.is_inbox``): the command is
    still handled, its answer goes nowhere."""
    if msg.reply_to and not subjects.is_inbox(msg.reply_to):
        log.warning("ingest.reply_refused", reply_to=msg.reply_to[:200])
        msg.reply_to = ""


def build_broker(url: str) -> NatsBroker:
    """The broker ingest's router runs in: no argument casting, per-message logs at debug."""
    return NatsBroker(url, log_level=logging.DEBUG, apply_types=False)


def build_router(service: IngestService) -> NatsRouter:
    """The ingest subscribers, bound to one service instance."""
    router = NatsRouter()

    # The handler is given the message itself and validates the raw bytes with the command
    # models, so a bad command gets a reply naming the field; the broker decodes nothing and
    # injects nothing (see ``build_broker``), which halves its cost per command.
    @router.subscriber(subjects.COMMAND_SUBJECTS, queue=subjects.INGEST_QUEUE, decoder=_itself)
    async def on_command(msg: NatsMessage) -> bytes:
        """mnemo.cmd.<workspace>: validate and apply one command; reply with a CommandReply."""
        _reply_to_inboxes_only(msg)
        workspace = subjects.workspace_from_command_subject(msg.raw_message.subject)
        with _tracer.start_as_current_span(
            "ingest.command",
            context=extract_context(msg.headers),
            attributes={"workspace": workspace},
        ):
            reply = await _handle(service, workspace, msg.body)
        return reply.model_dump_json().encode()

    @router.subscriber(KEY_COMMANDS, queue=subjects.INGEST_QUEUE, decoder=_itself)
    async def on_key_command(msg: NatsMessage) -> bytes:
        """mnemo.keys.revoke: append a key's revocation to the log; reply with a CommandReply."""
        _reply_to_inboxes_only(msg)
        with _tracer.start_as_current_span(
            "ingest.revoke_key", context=extract_context(msg.headers)
        ):
            try:
                cmd = RevokeKey.model_validate_json(msg.body)
            except ValidationError as err:
                reply = CommandReply.refused(refusal(err))
            else:
                reply = await service.revoke_key(cmd, inject_headers())
        return reply.model_dump_json().encode()

    return router


def local_handler(service: IngestService) -> Callable[[str, Command], Awaitable[CommandReply]]:
    """Ingest for a caller in this process: the same handling, given the command itself."""

    async def handle(workspace: str, cmd: Command) -> CommandReply:
        with _tracer.start_as_current_span("ingest.command", attributes={"workspace": workspace}):
            refused = _bad_workspace(workspace)
            return refused or await service.handle(workspace, cmd, inject_headers())

    return handle


def _bad_workspace(workspace: str) -> CommandReply | None:
    if re.fullmatch(ID_PATTERN, workspace):
        return None
    return CommandReply.refused(
        Refusal(422, "workspace_id: does not match the id pattern", "workspace_id")
    )


async def _handle(service: IngestService, workspace: str, body: bytes) -> CommandReply:
    refused = _bad_workspace(workspace)
    if refused is not None:
        return refused
    try:
        cmd = COMMAND_ADAPTER.validate_json(body)
    except ValidationError as err:
        return validation_reply(err)
    return await service.handle(workspace, cmd, inject_headers())

"""Decisions on a session's conversation: posting messages (and the representations each one
feeds) and cloning a session."""

from __future__ import annotations

from mnemo_ingest.decision import Builder, need_session, representations
from mnemo_ingest.ports import SessionCopy
from mnemo_schema import commands as c
from mnemo_schema.config import (
    SessionConfiguration,
    SessionPeerConfig,
    effective,
    instructions,
    reasoning_enabled,
)
from mnemo_schema.errors import Refusal
from mnemo_schema.events import MessagePosted, SessionCreated
from mnemo_schema.files import FileChunk
from mnemo_schema.ids import derived_event_id, derived_id, new_message_id


def post_messages(b: Builder, cmd: c.PostMessages, token_counts: list[int] | None) -> None:
    session = need_session(b.model, cmd.session_id)
    b.decision.posted_at = b.ctx.now
    counts = token_counts or [0] * len(cmd.messages)
    if len(counts) != len(cmd.messages):
        raise ValueError("one token count per message is required")
    # The configuration in force, resolved once per batch (a message may override reasoning).
    base = effective(b.model.configuration, session.configuration)
    base_instructions = instructions(base, "deriver")
    for i, msg in enumerate(cmd.messages):
        b.join(cmd.session_id, msg.peer_id, SessionPeerConfig())
        # With an idempotency key, a retried batch gets the same message and event ids, so the
        # log's duplicate window and the projections' keys both drop the repeat.
        key = cmd.idempotency_key
        message_id = (
            derived_id(b.ctx.workspace, cmd.session_id, key, str(i)) if key else new_message_id()
        )
        cfg = base if msg.configuration is None else effective(base, msg.configuration)
        b.emit(
            MessagePosted,
            event_id=derived_event_id(b.ctx.workspace, "msg", message_id) if key else None,
            session_id=cmd.session_id,
            message_id=message_id,
            peer_id=msg.peer_id,
            content=msg.content,
            metadata=msg.metadata or {},
            created_at=msg.created_at or b.ctx.now,
            token_count=counts[i],
            representations=representations(b.model, session, msg.peer_id),
            reasoning=reasoning_enabled(cfg),
            instructions=base_instructions if cfg is base else instructions(cfg, "deriver"),
            file=None
            if cmd.file is None
            else FileChunk(**cmd.file.model_dump(), chunk_index=i, total_chunks=len(cmd.messages)),
        )
        b.decision.message_ids.append(message_id)


def clone_session(b: Builder, cmd: c.CloneSession, copy: SessionCopy | None) -> None:
    source = need_session(b.model, cmd.session_id)
    if copy is None:
        raise ValueError("a clone needs its source session's copy")
    clone_id = cmd.clone_id or new_message_id()
    if clone_id in b.model.sessions:
        raise Refusal(409, f"session {clone_id!r} already exists", "clone_id")
    messages = copy.messages
    if cmd.message_id is not None:
        ids = [m.message_id for m in messages]
        if cmd.message_id not in ids:
            raise Refusal(
                404,
                f"message {cmd.message_id!r} not found in session {cmd.session_id!r}",
                "message_id",
            )
        messages = messages[: ids.index(cmd.message_id) + 1]
    b.emit(
        SessionCreated,
        session_id=clone_id,
        metadata=copy.metadata,
        configuration=SessionConfiguration.model_validate(copy.configuration),
    )
    for pid, member in sorted(source.members.items()):
        b.join(clone_id, pid, SessionPeerConfig(**vars(member)))
    for m in messages:
        message_id = new_message_id()
        b.emit(
            MessagePosted,
            session_id=clone_id,
            message_id=message_id,
            peer_id=m.peer_id,
            content=m.content,
            metadata=m.metadata,
            created_at=m.created_at,
            token_count=m.token_count,
            # What the originals said is in memory already; copies would only repeat it.
            representations=[],
            cloned_from=m.message_id,
        )
        b.decision.message_ids.append(message_id)
    b.decision.created = True
    b.decision.session_id = clone_id

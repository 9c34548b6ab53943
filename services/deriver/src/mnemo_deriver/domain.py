"""From a batch to a model request, and from the model's answer to grounded observations. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_deriver.batching import Batch
from mnemo_deriver.contract import (
    DERIVER_PROMPT,
    BatchMessage,
    DeriverOutput,
    render_batch,
)
from mnemo_runtime.models import (
    Message,
    ModelRequest,
    Stage,
    ToolChoice,
    ToolSpec,
    with_instructions,
)
from mnemo_schema.events import MessagePosted
from mnemo_schema.grounding import content_key, span_in_message
from mnemo_schema.ids import derived_event_id, derived_id
from mnemo_schema.observations import ObservationWritten

TOOL = ToolSpec.for_output(
    DeriverOutput,
    name="record_observations",
    description="Record the explicit facts about the target peer found in the batch.",
)


@dataclass(frozen=True)
class Prepared:
    """The rendered batch and, by index, the message each index stands for."""

    text: str
    by_index: dict[int, tuple[MessagePosted, bool]]


def prepare(batch: Batch) -> Prepared:
    """Number the batch's messages (context turns included once, in order) and render it."""
    seen: set[str] = set()
    ordered: list[tuple[MessagePosted, bool]] = []
    for item in batch.items:
        if item.context is not None and item.context.message_id not in seen:
            seen.add(item.context.message_id)
            ordered.append((item.context, True))
        if item.message.message_id not in seen:
            seen.add(item.message.message_id)
            ordered.append((item.message, False))
    shown = [
        BatchMessage(
            index=i, peer_id=m.peer_id, content=m.content, created_at=m.created_at, is_context=ctx
        )
        for i, (m, ctx) in enumerate(ordered)
    ]
    return Prepared(render_batch(batch.key.observed, shown), dict(enumerate(ordered)))


def request(prepared: Prepared, max_tokens: int, instructions: str | None = None) -> ModelRequest:
    """One model call per batch, forced to answer through the observation tool."""
    return ModelRequest(
        stage=Stage.DERIVER,
        system=with_instructions(DERIVER_PROMPT, instructions),
        messages=(Message.user(prepared.text),),
        tools=(TOOL,),
        tool_choice=ToolChoice.force(TOOL.name),
        max_tokens=max_tokens,
        temperature=0.0,
    )


@dataclass(frozen=True)
class Dropped:
    index: int
    reason: str


def observations(
    batch: Batch, prepared: Prepared, output: DeriverOutput
) -> tuple[list[ObservationWritten], list[Dropped]]:
    """Grounded, attributed observations from the model's answer, and what was dropped and why.

    Ids are derived from the representation, the source message and the fact, so a redelivered
    message yields the same events (de-duplicated by the log and the projection).
    """
    key = batch.key
    seq_of = {i.message.message_id: i.seq for i in batch.items}
    out: list[ObservationWritten] = []
    dropped: list[Dropped] = []
    seen: set[str] = set()
    for i, obs in enumerate(output.observations):
        source = prepared.by_index.get(obs.source_message_index)
        if source is None:
            dropped.append(Dropped(i, f"no message with index {obs.source_message_index}"))
            continue
        message, is_context = source
        if is_context or message.peer_id != key.observed:
            dropped.append(Dropped(i, "cites a message the target peer did not write"))
            continue
        if not span_in_message(obs.source_span, message.content):
            dropped.append(Dropped(i, "source span is not in the cited message"))
            continue
        fact = obs.fact.strip()
        oid = derived_id(
            key.workspace, key.observer, key.observed, message.message_id, content_key(fact)
        )
        if not fact or oid in seen:
            continue
        seen.add(oid)
        out.append(
            ObservationWritten(
                event_id=derived_event_id("obs", key.workspace, oid),
                workspace=key.workspace,
                trace=message.trace,
                correlation_id=message.correlation_id,
                causation_id=message.event_id,
                observation_id=oid,
                observer=key.observer,
                observed=key.observed,
                session_id=message.session_id,
                level="explicit",
                content=fact,
                source_message_ids=[message.message_id],
                source_message_seqs=[seq_of[message.message_id]],
                source_span=obs.source_span,
                observed_at=message.created_at,
                origin="deriver",
            )
        )
    return out, dropped

"""The deriver run in process over benchmark conversations, as the product runs it.

Each session's messages go through the deriver's own batcher (token target; a session ends in
an idle gap, which flushes what is open), its prompt, its schema-constrained call and its
grounding. A trace keeps what the model proposed as well as what was kept, so the benchmark can
say how often the model's spans are grounded, not only that the kept ones are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo_bench.cases import Case, Session
from mnemo_bench.mnemo_client import slug, split_text
from mnemo_deriver.batching import Batch, Batcher, Item, RepKey
from mnemo_deriver.extraction import extract
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.models import ChatModel, MalformedOutput
from mnemo_runtime.tokens import TokenCounter
from mnemo_schema.events import MessagePosted, Representation
from mnemo_schema.grounding import span_in_message

WORKSPACE = "bench-deriver"


@dataclass(frozen=True)
class TraceMessage:
    """One message of the session: its position, the dataset's id, speaker (peer id) and text."""

    position: int
    turn_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Proposed:
    """One observation as the model proposed it, where it points, and whether it was kept."""

    fact: str
    span: str
    position: int | None  # the cited message's position in the session; None: out of range
    grounded: bool  # the span is verbatim (after normalisation) in the cited message
    kept: bool
    reason: str = ""  # why it was not kept


@dataclass
class Trace:
    """A session's messages and the deriver's observations about one of its speakers."""

    case_id: str
    session_id: str
    target: str
    messages: list[TraceMessage]
    proposed: list[Proposed] = field(default_factory=list)
    malformed_batches: int = 0

    @property
    def key(self) -> str:
        return f"{self.case_id}/{self.session_id}/{self.target}"

    def kept(self) -> list[Proposed]:
        """The observations that survived grounding and attribution."""
        return [p for p in self.proposed if p.kept]

    def target_messages(self) -> int:
        """Messages the target wrote in this session."""
        return sum(1 for m in self.messages if m.speaker == self.target)

    def to_row(self) -> dict[str, Any]:
        return {"key": self.key, **asdict(self)}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Trace:
        return cls(
            case_id=row["case_id"],
            session_id=row["session_id"],
            target=row["target"],
            messages=[TraceMessage(**m) for m in row["messages"]],
            proposed=[Proposed(**p) for p in row["proposed"]],
            malformed_batches=int(row.get("malformed_batches", 0)),
        )


def session_messages(case: Case, session: Session, count: TokenCounter) -> list[MessagePosted]:
    """The session as the deriver receives it: one event per posted message (long ones split)."""
    start = session.at or datetime(2024, 1, 1, tzinfo=UTC)
    out: list[MessagePosted] = []
    for i, turn in enumerate(session.turns):
        peer = slug(turn.speaker)
        for part in split_text(turn.text):
            out.append(
                MessagePosted(
                    workspace=WORKSPACE,
                    session_id=slug(session.id),
                    message_id=f"{slug(case.id)}-{len(out)}",
                    peer_id=peer,
                    content=part,
                    metadata={"turn_id": turn.id},
                    created_at=turn.at or start + timedelta(minutes=i),
                    token_count=count.count(part),
                    representations=[Representation(observer=peer, observed=peer)],
                )
            )
    return out


def batches(
    messages: list[MessagePosted], target: str, settings: DeriverSettings
) -> Iterator[Batch]:
    """The target's batches, cut by the service's rules; the session's end drains the rest."""
    batcher = Batcher(settings.token_target, settings.idle_s, settings.max_age_s)
    key = RepKey(WORKSPACE, target, target)
    previous: MessagePosted | None = None
    for seq, m in enumerate(messages):
        context = previous if previous is not None and previous.peer_id != m.peer_id else None
        previous = m
        if m.peer_id != target:
            continue
        # Time stands still: only the token target closes a batch before the session ends.
        yield from batcher.add(key, Item(seq, m, context), now=0.0)
    yield from batcher.drain()


def new_trace(case: Case, session: Session, target: str, messages: list[MessagePosted]) -> Trace:
    """A trace of the session's messages, with no observations yet."""
    shown = [
        TraceMessage(i, str(m.metadata["turn_id"]), m.peer_id, m.content)
        for i, m in enumerate(messages)
    ]
    return Trace(case.id, slug(session.id), target, shown)


async def derive_session(
    model: ChatModel,
    case: Case,
    session: Session,
    target: str,
    settings: DeriverSettings,
    count: TokenCounter,
) -> Trace:
    """The deriver's trace of ``target`` in one session."""
    messages = session_messages(case, session, count)
    position = {m.message_id: i for i, m in enumerate(messages)}
    trace = new_trace(case, session, target, messages)
    for batch in batches(messages, target, settings):
        try:
            ex = await extract(
                model, batch, settings.max_output_tokens, settings.structured_attempts
            )
        except MalformedOutput:
            trace.malformed_batches += 1
            continue
        dropped = {d.index: d.reason for d in ex.dropped}
        # What the deriver publishes; a repeated or empty fact is folded away without a reason.
        published = Counter((e.source_message_ids[0], e.content) for e in ex.events)
        for i, obs in enumerate(ex.output.observations):
            source = ex.prepared.by_index.get(obs.source_message_index)
            cited = source[0] if source is not None else None
            fact = obs.fact.strip()
            kept = cited is not None and published[(cited.message_id, fact)] > 0
            if kept and cited is not None:
                published[(cited.message_id, fact)] -= 1
            trace.proposed.append(
                Proposed(
                    fact=fact,
                    span=obs.source_span,
                    position=position[cited.message_id] if cited is not None else None,
                    grounded=cited is not None and span_in_message(obs.source_span, cited.content),
                    kept=kept,
                    reason="" if kept else dropped.get(i, "a repeated or empty fact"),
                )
            )
    return trace


def speakers_of(session: Session) -> list[str]:
    """The session's speakers as peer ids, in order of first appearance."""
    return list(dict.fromkeys(slug(t.speaker) for t in session.turns))

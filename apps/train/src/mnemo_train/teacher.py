"""Stage 5: the teacher derives observations, batch by batch, exactly as the deriver would ask.

Batches are cut by the deriver's own batcher and rendered with its prompt (the subject peer is
marked ``target="yes"``), so a model trained on them sees at serving time what it saw here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mnemo_bench.deriver.traces import batches, session_messages
from mnemo_bench.mnemo_client import slug
from mnemo_deriver.contract import DeriverOutput
from mnemo_deriver.domain import prepare, request
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.models import ChatModel, MalformedOutput, structured
from mnemo_runtime.tokens import TokenCounter
from mnemo_train.corpus import Conversation


@dataclass(frozen=True)
class TeacherBatch:
    """One rendered batch and the teacher's answer (None: it stayed malformed)."""

    key: str
    conversation: str
    domain: str
    target: str
    batch: str
    output: DeriverOutput | None

    def to_row(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "conversation": self.conversation,
            "domain": self.domain,
            "target": self.target,
            "batch": self.batch,
            "output": None if self.output is None else self.output.model_dump(mode="json"),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TeacherBatch:
        out = row["output"]
        return cls(
            row["key"],
            row["conversation"],
            row["domain"],
            row["target"],
            row["batch"],
            None if out is None else DeriverOutput.model_validate(out),
        )


async def teach(
    teacher: ChatModel, conversation: Conversation, settings: DeriverSettings, count: TokenCounter
) -> list[TeacherBatch]:
    """The teacher's answer for each batch of each target of ``conversation``."""
    case = conversation.as_case()
    messages = session_messages(case, case.sessions[0], count)
    out: list[TeacherBatch] = []
    for target in conversation.targets():
        for n, batch in enumerate(batches(messages, slug(target), settings)):
            prepared = prepare(batch)
            try:
                output: DeriverOutput | None = await structured(
                    teacher,
                    request(prepared, settings.max_output_tokens),
                    DeriverOutput,
                    attempts=settings.structured_attempts,
                )
            except MalformedOutput:
                output = None
            key = f"{conversation.id}/{slug(target)}/{n}"
            out.append(
                TeacherBatch(
                    key, conversation.id, conversation.domain, slug(target), prepared.text, output
                )
            )
    return out

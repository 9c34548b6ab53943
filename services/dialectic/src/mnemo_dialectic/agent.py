"""The dialectic agent: prefetch by similarity, then a tool loop under the Retrieval Policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import structlog
from pydantic import ValidationError

from mnemo_dialectic.domain import Reads, View, budget_note, first_turn, stage_of
from mnemo_dialectic.ports import ScopeReader
from mnemo_dialectic.prompts import BUDGET_SPENT, RETRIEVAL_POLICY
from mnemo_dialectic.settings import DialecticSettings
from mnemo_dialectic.tools import ANSWER, TOOLS, Answer, Toolbox, ToolError
from mnemo_runtime.models import (
    ChatModel,
    Message,
    ModelRequest,
    ModelResponse,
    Stage,
    ToolChoice,
    ToolResultBlock,
    with_instructions,
)
from mnemo_schema.answer_format import answer_problem
from mnemo_schema.dialectic_queries import ChatAnswer, ChatQuery, Citations, WorkspaceChatQuery
from mnemo_schema.errors import Refusal

log = structlog.get_logger("mnemo.dialectic")

NO_ANSWER = "I don't know: the memory of this peer holds nothing that answers the question."


@dataclass
class Outcome:
    """An answer with everything it was built from."""

    content: str
    citations: Citations
    reads: Reads
    turns: int
    budget_exhausted: bool

    def reply(self, include_evidence: bool) -> ChatAnswer:
        """The answer as the query's reply."""
        return ChatAnswer(
            content=self.content or None,
            evidence=self.reads.evidence() if include_evidence else None,
            citations=self.citations,
        )


class DialecticAgent:
    """Answers a ``ChatQuery`` from the (observer, observed) representation only."""

    def __init__(
        self, models: Mapping[Stage, ChatModel], reader: ScopeReader, settings: DialecticSettings
    ) -> None:
        self._models = models
        self._reader = reader
        self._settings = settings

    async def answer(self, workspace: str, query: ChatQuery | WorkspaceChatQuery) -> Outcome:
        """Prefetch, loop over tools within the level's budget, and answer.

        With a ``response_format`` the answer must be JSON of that schema: one that is not is
        sent back to the model with what is wrong, and if none comes within the budget the
        question is refused (502) rather than answered in another shape.
        """
        scope = View(workspace, query.observer, query.observed)
        schema = query.response_format
        stage = stage_of(query.reasoning_level)
        model = self._models[stage]
        budget = self._settings.budget(query.reasoning_level)
        reads = Reads()
        prefetched = await self._reader.search(
            scope,
            query.query,
            limit=self._settings.prefetch_k,
            sessions=query.allowed,
            max_distance=self._settings.prefetch_max_distance,
        )
        reads.saw(obs=prefetched)
        tools = Toolbox(self._reader, scope, query.allowed, reads, self._settings.tool_row_limit)
        messages = [Message.user(first_turn(query.query, query.observed, prefetched, schema))]
        problem: str | None = None
        for turn in range(budget + 1):
            spent = turn == budget
            if spent:
                messages.append(Message.user(BUDGET_SPENT))
            response = await model.complete(
                ModelRequest(
                    stage=stage,
                    system=with_instructions(RETRIEVAL_POLICY, query.instructions),
                    messages=tuple(messages),
                    tools=TOOLS,
                    tool_choice=ToolChoice.force(ANSWER) if spent else ToolChoice(),
                    max_tokens=self._settings.max_output_tokens,
                )
            )
            final = _final(response, reads)
            if final is not None:
                content, citations = final
                problem = answer_problem(schema, content) if schema is not None else None
                if problem is None:
                    if spent and schema is None:
                        content = f"{content}\n\n{budget_note(budget)}".strip()
                    return Outcome(content, citations, reads, turn + 1, spent)
            if spent or not (response.tool_calls or problem):
                break
            messages.append(response.to_message())
            results: list[str | ToolResultBlock] = [
                _off_format(c.id, problem)
                if problem is not None and c.name == ANSWER
                else await _run(tools, c.id, c.name, c.input, c.malformed)
                for c in response.tool_calls
            ]
            if problem is not None and not response.tool_calls:
                results.append(_OFF_FORMAT.format(problem=problem))
            messages.append(Message.user(*results))
        if problem is not None:
            raise Refusal(
                502,
                f"response_format: the answer does not match the schema {problem}",
                "response_format",
            )
        log.warning("dialectic.no_answer", workspace=workspace, turns=turn + 1, budget=budget)
        if schema is not None:
            # Nothing to say is an empty answer, never prose in place of the asked shape.
            return Outcome("", Citations(), reads, turn + 1, spent)
        content = f"{NO_ANSWER}\n\n{budget_note(budget)}" if spent else NO_ANSWER
        return Outcome(content, Citations(), reads, turn + 1, spent)


def _final(response: ModelResponse, reads: Reads) -> tuple[str, Citations] | None:
    """The answer in ``response``, if it gives one: an ``answer`` call, or text without calls."""
    for call in response.tool_calls:
        if call.name == ANSWER:
            try:
                given = Answer.model_validate(call.input)
            except ValidationError:
                continue
            return given.content.strip(), reads.cite(
                given.cited_observation_ids, given.cited_message_ids
            )
    if not response.tool_calls and response.text.strip():
        return response.text.strip(), Citations()
    return None


_OFF_FORMAT = (
    "The answer's content must be a JSON text matching response_format; it is {problem}. "
    "Answer again in that shape."
)


def _off_format(call_id: str, problem: str) -> ToolResultBlock:
    """What the model is told when its answer does not match ``response_format``."""
    return ToolResultBlock(
        tool_use_id=call_id, content=_OFF_FORMAT.format(problem=problem), is_error=True
    )


async def _run(
    tools: Toolbox, call_id: str, name: str, raw: dict[str, object], malformed: str | None
) -> ToolResultBlock:
    if malformed is not None:
        return ToolResultBlock(tool_use_id=call_id, content=malformed, is_error=True)
    if name == ANSWER:
        # An answer call that failed validation; the error tells the model how to fix it.
        return ToolResultBlock(
            tool_use_id=call_id, content="invalid answer: give content as text", is_error=True
        )
    try:
        return ToolResultBlock(tool_use_id=call_id, content=await tools.run(name, dict(raw)))
    except ToolError as err:
        return ToolResultBlock(tool_use_id=call_id, content=str(err), is_error=True)

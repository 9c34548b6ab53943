"""Thin query handlers: a ``ChatQuery`` in, an answer or its streamed chunks out."""

from __future__ import annotations

from collections.abc import AsyncIterator

from mnemo_dialectic.agent import DialecticAgent
from mnemo_dialectic.domain import pieces
from mnemo_schema.dialectic_queries import (
    ChatAnswer,
    ChatChunk,
    ChatDelta,
    ChatQuery,
    WorkspaceChatQuery,
)


class ChatHandlers:
    def __init__(self, agent: DialecticAgent) -> None:
        self._agent = agent

    async def answer(self, workspace: str, query: ChatQuery | WorkspaceChatQuery) -> ChatAnswer:
        """The whole answer at once."""
        outcome = await self._agent.answer(workspace, query)
        return outcome.reply(query.include_evidence)

    async def stream(
        self, workspace: str, query: ChatQuery | WorkspaceChatQuery
    ) -> AsyncIterator[ChatChunk]:
        """The answer in pieces, then a last chunk with the evidence (when asked for)."""
        reply = (await self._agent.answer(workspace, query)).reply(query.include_evidence)
        for piece in pieces(reply.content or ""):
            yield ChatChunk(delta=ChatDelta(content=piece))
        yield ChatChunk(done=True, evidence=reply.evidence, citations=reply.citations)

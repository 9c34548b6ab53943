"""How a stage asks the retrieval engine (the context service): directly or over NATS.

The engine ranks (``RetrievalQuery``) and reads observations and messages by key
(``StoredQuery``, ``MessagesQuery``): the projections' tables are read there, not by each
stage. When the context service runs in the same process, its handlers are called directly
(the same query and reply, no trip through NATS); otherwise the query goes out on
``mnemo.qry.<workspace>.<kind>`` as request-reply. Either way a refusal is a ``Refusal``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from nats.aio.client import Client as NATS

from mnemo_runtime import rpc
from mnemo_schema import subjects
from mnemo_schema.retrieval import (
    MAX_MESSAGES,
    MAX_STORED_IDS,
    MessagesQuery,
    MessagesReply,
    RetrievalQuery,
    RetrievalReply,
    StoredQuery,
    StoredReply,
)

R = TypeVar("R", RetrievalReply, StoredReply, MessagesReply)


class LocalEngine(Protocol):
    """The context service's handlers, for callers in its process."""

    async def retrieve(self, ws: str, q: RetrievalQuery) -> RetrievalReply: ...

    async def stored(self, ws: str, q: StoredQuery) -> StoredReply: ...

    async def stored_messages(self, ws: str, q: MessagesQuery) -> MessagesReply: ...


class RetrievalClient:
    """Asks the engine: ``local`` when given, else over ``nc``."""

    def __init__(
        self, nc: NATS | None, local: LocalEngine | None = None, timeout: float = 10.0
    ) -> None:
        if nc is None and local is None:
            raise ValueError("a retrieval client needs NATS or the engine in this process")
        self._nc = nc
        self._local = local
        self._timeout = timeout

    @property
    def local(self) -> bool:
        """Whether queries are answered in this process."""
        return self._local is not None

    async def retrieve(self, workspace: str, query: RetrievalQuery) -> RetrievalReply:
        """The engine's reply to ``query``."""
        if self._local is not None:
            return await self._local.retrieve(workspace, query)
        return await self._remote(workspace, query, RetrievalReply)

    async def stored(self, workspace: str, query: StoredQuery) -> StoredReply:
        """Observations by key (see ``StoredQuery``)."""
        if self._local is not None:
            return await self._local.stored(workspace, query)
        return await self._remote(workspace, query, StoredReply)

    async def messages(self, workspace: str, query: MessagesQuery) -> MessagesReply:
        """Messages by key (see ``MessagesQuery``)."""
        if self._local is not None:
            return await self._local.stored_messages(workspace, query)
        return await self._remote(workspace, query, MessagesReply)

    async def stored_ids(
        self,
        workspace: str,
        ids: Sequence[str],
        *,
        observer: str | None = None,
        observed: str | None = None,
        sessions: Sequence[str] | None = None,
    ) -> StoredReply:
        """Live observations by id (``StoredQuery``), however many ids: asked
        ``MAX_STORED_IDS`` at a time, in the order asked."""
        reply = StoredReply()
        for start in range(0, len(ids), MAX_STORED_IDS):
            query = StoredQuery(
                observer=observer,
                observed=observed,
                ids=list(ids[start : start + MAX_STORED_IDS]),
                sessions=None if sessions is None else list(sessions),
            )
            got = await self.stored(workspace, query)
            reply.observations += got.observations
            reply.resolved |= got.resolved
        return reply

    async def messages_by_ids(
        self,
        workspace: str,
        ids: Sequence[str],
        *,
        observer: str | None = None,
        observed: str | None = None,
        sessions: Sequence[str] | None = None,
    ) -> MessagesReply:
        """Visible messages by id (``MessagesQuery``), however many ids: asked
        ``MAX_MESSAGES`` at a time, oldest first."""
        unique = list(dict.fromkeys(ids))
        reply = MessagesReply()
        for start in range(0, len(unique), MAX_MESSAGES):
            query = MessagesQuery(
                observer=observer,
                observed=observed,
                ids=unique[start : start + MAX_MESSAGES],
                sessions=None if sessions is None else list(sessions),
            )
            reply.messages += (await self.messages(workspace, query)).messages
        reply.messages.sort(key=lambda m: (m.created_at, m.seq))
        return reply

    async def _remote(
        self, workspace: str, query: RetrievalQuery | StoredQuery | MessagesQuery, reply: type[R]
    ) -> R:
        assert self._nc is not None
        subject = subjects.query_subject(workspace, query.KIND)
        return await rpc.call(self._nc, subject, query, reply, self._timeout)

"""How a stage asks the retrieval engine (the context service): directly or over NATS.

When the context service runs in the same process, its handler is called directly (the same
query and reply, no trip through NATS); otherwise the query goes out on
``mnemo.qry.<workspace>.retrieve`` as request-reply. Either way a refusal is a ``Refusal``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NATS

from mnemo_runtime import rpc
from mnemo_schema import subjects
from mnemo_schema.retrieval import RetrievalQuery, RetrievalReply

LocalRetrieve = Callable[[str, RetrievalQuery], Awaitable[RetrievalReply]]
"""The context service's handler, for callers in its process."""


class RetrievalClient:
    """Sends ``RetrievalQuery`` to the engine: ``local`` when given, else over ``nc``."""

    def __init__(
        self, nc: NATS | None, local: LocalRetrieve | None = None, timeout: float = 10.0
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
            return await self._local(workspace, query)
        assert self._nc is not None
        subject = subjects.query_subject(workspace, RetrievalQuery.KIND)
        return await rpc.call(self._nc, subject, query, RetrievalReply, self._timeout)

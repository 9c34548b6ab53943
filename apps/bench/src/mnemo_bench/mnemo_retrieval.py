"""Retrievers over a running Mnemo: its retrieval engine (whole, and with parts switched off) and
get_context blobs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import nats
from honcho import Honcho
from nats.aio.client import Client as NATS

from mnemo_bench.cases import Case, Question
from mnemo_bench.metrics import dedupe
from mnemo_bench.mnemo_client import client, drain, ingest, slug
from mnemo_bench.provenance import Provenance
from mnemo_bench.retrievers import Retrieved, SkipRetriever, TokenCount
from mnemo_bench.state import RunState
from mnemo_runtime import rpc
from mnemo_runtime.stack import redacted
from mnemo_schema import subjects
from mnemo_schema.retrieval import Component, RetrievalQuery, RetrievalReply


class MnemoWorkspaces:
    """Ingests each case once (recorded in the run state) and hands out its SDK client."""

    def __init__(
        self, url: str, benchmark: str, state: RunState, *, drain_timeout_s: float = 3600.0
    ) -> None:
        self.url, self.benchmark, self.state = url, benchmark, state
        self._drain_timeout_s = drain_timeout_s
        self._clients: dict[str, Honcho] = {}

    def ensure(self, case: Case) -> Honcho:
        """The case's client, after ingesting it (unless a previous run did) and draining."""
        if case.id in self._clients:
            return self._clients[case.id]
        honcho = client(self.url, self.benchmark, case)
        if self.state.ingested(case.id) is None:
            done = self.state.sessions_done(case.id)
            info = ingest(honcho, case, done, lambda s: self.state.mark_session(case.id, s))
            self.state.mark_ingested(case.id, info)
        drain(honcho, timeout_s=self._drain_timeout_s, label=case.id)
        self._clients[case.id] = honcho
        return honcho


def target_speaker(case: Case, question: Question) -> str:
    """The speaker a question is about: the first one it names, else the first speaker."""
    lowered = question.text.lower()
    named = [s for s in case.speakers if s.lower() in lowered]
    return named[0] if named else case.speakers[0]


def turn_ids(messages: Iterable[Any]) -> list[str]:
    """The dataset turn ids of Mnemo messages (a message posted in parts shares its turn's)."""
    return dedupe(
        str(m.metadata["turn_id"]) for m in messages if m.metadata and "turn_id" in m.metadata
    )


class MnemoRetriever:
    """Mnemo's retrieval engine as an SDK user calls it: the workspace's message search."""

    name = "mnemo"

    def __init__(self, spaces: MnemoWorkspaces, count: TokenCount | None = None) -> None:
        self._spaces, self._count = spaces, count

    async def prepare(self, case: Case) -> None:
        """Ingest the case and wait for its memory."""
        self._spaces.ensure(case)

    async def retrieve(self, case: Case, question: Question, k: int) -> Retrieved:
        """The engine's best messages, as turn ids."""
        honcho = self._spaces.ensure(case)
        messages = honcho.search(question.text, limit=min(max(k, 1), 100))
        tokens = sum(self._count.count_many([m.content for m in messages])) if self._count else 0
        return Retrieved(tuple(turn_ids(messages)), tokens)


class AblatedRetriever:
    """The same engine asked over the bus with components switched off, to show what each earns."""

    def __init__(
        self, spaces: MnemoWorkspaces, nats_url: str, without: frozenset[Component]
    ) -> None:
        self.name = "mnemo without " + "+".join(sorted(without))
        self.without = without
        self._spaces, self._nats_url = spaces, nats_url
        self._nc: NATS | None = None

    async def prepare(self, case: Case) -> None:
        """Ingest the case and wait for its memory."""
        self._spaces.ensure(case)
        if self._nc is None:
            try:
                self._nc = await nats.connect(self._nats_url, connect_timeout=5)
            except Exception as err:
                raise SkipRetriever(
                    f"no NATS at {redacted(self._nats_url)} ({type(err).__name__})"
                ) from err

    async def retrieve(self, case: Case, question: Question, k: int) -> Retrieved:
        """The ablated engine's best messages, as turn ids."""
        assert self._nc is not None, "prepare() first"
        honcho = self._spaces.ensure(case)
        query = RetrievalQuery(query=question.text, messages=min(k, 100), without=self.without)
        subject = subjects.query_subject(honcho.workspace_id, RetrievalQuery.KIND)
        reply = await rpc.call(self._nc, subject, query, RetrievalReply, 30.0)
        return Retrieved(tuple(turn_ids(m.message for m in reply.messages)))

    async def close(self) -> None:
        """Close the bus connection."""
        if self._nc is not None:
            await self._nc.close()


class ContextRetriever:
    """The evidence inside a get_context blob of ``tokens`` tokens: its messages, and the
    messages behind the observations of its representation slice."""

    def __init__(
        self,
        spaces: MnemoWorkspaces,
        provenance: Provenance,
        tokens: int,
        count: TokenCount | None = None,
    ) -> None:
        self.name = f"context@{tokens}"
        self._spaces, self._prov, self._tokens, self._count = spaces, provenance, tokens, count
        self._contents: dict[tuple[str, str], dict[str, str]] = {}

    async def prepare(self, case: Case) -> None:
        """Ingest the case and wait for its memory."""
        self._spaces.ensure(case)

    async def retrieve(self, case: Case, question: Question, k: int) -> Retrieved:  # noqa: ARG002
        """Turn ids in the blob: representation-derived first (relevance order), then messages."""
        honcho = self._spaces.ensure(case)
        speaker = target_speaker(case, question)
        session = honcho.session(slug(case.sessions[-1].id))
        # The API's ceiling of 100 conclusions, so the token budget (not a count) decides what fits.
        blob = session.context(
            tokens=self._tokens,
            peer_target=slug(speaker),
            search_query=question.text,
            search_top_k=100,
            max_conclusions=100,
        )
        representation = blob.peer_representation or ""
        key = (honcho.workspace_id, slug(speaker))
        if key not in self._contents:
            self._contents[key] = self._prov.observations(*key)
        found = [(representation.find(c), i) for c, i in self._contents[key].items() if c]
        cited = [i for at, i in sorted(found) if at >= 0]
        sources = self._prov.turns_of(honcho.workspace_id, cited)
        from_memory = [t for i in cited for t in sources.get(i, [])]
        from_messages = [
            str(m.metadata.get("turn_id")) for m in reversed(blob.messages) if m.metadata
        ]
        parts = [representation, *(m.content for m in blob.messages)]
        if blob.summary is not None:
            parts.append(blob.summary.content)
        tokens = sum(self._count.count_many(parts)) if self._count else 0
        return Retrieved(tuple(dedupe([*from_memory, *from_messages])), tokens)

"""Composition root of the dialectic."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from mnemo_dialectic.adapters.reader import EngineScopeReader
from mnemo_dialectic.agent import DialecticAgent
from mnemo_dialectic.domain import stage_of
from mnemo_dialectic.handlers import ChatHandlers
from mnemo_dialectic.local import LocalDialectic
from mnemo_dialectic.settings import DialecticSettings
from mnemo_runtime import rpc
from mnemo_runtime.memory.wiring import MemoryAdapters
from mnemo_runtime.models import ChatModel, Stage, UsageLedger
from mnemo_runtime.models.config import ModelSettings, build_model
from mnemo_runtime.models.local import LocalReasoner
from mnemo_runtime.pg import Pool
from mnemo_runtime.retrieval import LocalEngine, RetrievalClient
from mnemo_schema import subjects
from mnemo_schema.dialectic_queries import REASONING_LEVELS, ChatQuery, WorkspaceChatQuery


def local_dialectic(stage: Stage) -> ChatModel:
    """The local reasoner with this service's dialectic skill, for ``build_model``."""
    return LocalReasoner({stage: LocalDialectic()})


def build_models(ledger: UsageLedger | None = None) -> dict[Stage, ChatModel]:
    """The configured model of every reasoning level (the local reasoner without a key)."""
    settings = ModelSettings()
    ledger = ledger or UsageLedger()
    return {
        stage_of(level): build_model(
            stage_of(level), settings, local_factory=local_dialectic, ledger=ledger
        )
        for level in REASONING_LEVELS
    }


async def run(
    nc: NATS,
    js: JetStreamContext,  # noqa: ARG001  (the shape every query service is started with)
    pool: Pool,  # noqa: ARG001 - every read goes to the retrieval engine
    memory: MemoryAdapters | None,  # noqa: ARG001 - searches go to the retrieval engine
    stop: asyncio.Event,
    engine: LocalEngine | None = None,
) -> None:
    """Run the dialectic until ``stop``; ``engine``: the context service, when it runs in
    this process."""
    settings = DialecticSettings()
    reader = EngineScopeReader(RetrievalClient(nc, engine))
    agent = DialecticAgent(build_models(), reader, settings)
    handlers = ChatHandlers(agent)
    subs = [
        await rpc.serve(
            nc,
            subjects.query_filter(ChatQuery.KIND),
            ChatQuery,
            handlers.answer,
            settings.queue_group,
            stream_handler=handlers.stream,
        ),
        await rpc.serve(
            nc,
            subjects.query_filter(WorkspaceChatQuery.KIND),
            WorkspaceChatQuery,
            handlers.answer,
            settings.queue_group,
            stream_handler=handlers.stream,
        ),
    ]
    try:
        await stop.wait()
    finally:
        # The chats being answered finish first (each subscription's grace at most).
        await asyncio.gather(*(sub.unsubscribe() for sub in subs))

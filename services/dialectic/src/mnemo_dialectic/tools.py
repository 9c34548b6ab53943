"""The dialectic's tools. The scope is bound when the toolbox is built, never taken from the model."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mnemo_dialectic.domain import (
    Msg,
    Obs,
    Reads,
    View,
    render_messages,
    render_observations,
)
from mnemo_dialectic.ports import ScopeReader
from mnemo_runtime.models import ToolSpec

ANSWER = "answer"
# Premises are walked this deep at most; the store guarantees the DAG ends in explicit facts.
MAX_PROVENANCE_DEPTH = 6


class _Input(BaseModel):
    # Unknown keys are ignored, not obeyed: a model that passes an observer gets the query's.
    model_config = ConfigDict(extra="ignore")


class SearchObservations(_Input):
    """Search this peer's observations by meaning; use other wordings to find updated values."""

    query: str = Field(min_length=1)
    top_k: int = Field(default=8, ge=1, le=30)
    levels: list[Literal["explicit", "deductive", "inductive", "contradiction"]] | None = None


class SearchMessages(_Input):
    """Search this peer's messages by words and meaning; finds details no observation kept."""

    query: str = Field(min_length=1)
    top_k: int = Field(default=8, ge=1, le=30)


class GrepMessages(_Input):
    """Find messages containing an exact phrase (case-insensitive): names, numbers, update words."""

    text: str = Field(min_length=2, max_length=1_000)


class MessagesInRange(_Input):
    """Read the messages sent between two ISO dates (YYYY-MM-DD or full timestamps), end inclusive."""

    start: str
    end: str


class MessagesAround(_Input):
    """Read the conversation around the messages an observation came from."""

    observation_id: str
    window: int = Field(default=3, ge=0, le=10)


class Provenance(_Input):
    """Walk a derived observation's premises down to explicit facts and their source messages."""

    observation_id: str


class Answer(BaseModel):
    """Give the final answer, citing the observation and message ids it rests on."""

    content: str
    cited_observation_ids: list[str] = Field(default_factory=list)
    cited_message_ids: list[str] = Field(default_factory=list)


INPUTS: dict[str, type[BaseModel]] = {
    "search_observations": SearchObservations,
    "search_messages": SearchMessages,
    "grep_messages": GrepMessages,
    "messages_in_range": MessagesInRange,
    "messages_around": MessagesAround,
    "provenance": Provenance,
}
TOOLS: tuple[ToolSpec, ...] = (
    *(ToolSpec.for_output(model, name=name) for name, model in INPUTS.items()),
    ToolSpec.for_output(Answer, name=ANSWER),
)


class ToolError(Exception):
    """A call the toolbox could not carry out; shown to the model, never in the evidence."""


def _when(value: str, *, end: bool) -> datetime:
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1) if end else start
        parsed = datetime.fromisoformat(value)
    except ValueError as err:
        raise ToolError(f"{value!r} is not an ISO date") from err
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Toolbox:
    """The tools of one query: every read is in ``scope`` (and ``sessions`` when given)."""

    def __init__(
        self,
        reader: ScopeReader,
        scope: View,
        sessions: frozenset[str] | None,
        reads: Reads,
        limit: int,
    ) -> None:
        self._reader = reader
        self._scope = scope
        self._sessions = sessions
        self._reads = reads
        self._limit = limit

    async def run(self, name: str, raw: dict[str, Any]) -> str:
        """Carry out one call; its result as text. ``ToolError`` when it cannot."""
        model = INPUTS.get(name)
        if model is None:
            raise ToolError(f"unknown tool {name!r}; use one of {', '.join(INPUTS)} or {ANSWER}")
        try:
            args = model.model_validate(raw)
        except ValidationError as err:
            raise ToolError(f"invalid input for {name}: {err.errors()[0]['msg']}") from err
        text = await self._dispatch(args)
        self._reads.called(name, args.model_dump(exclude_none=True))
        return text

    async def _dispatch(self, args: BaseModel) -> str:
        if isinstance(args, SearchObservations):
            obs = await self._reader.search(
                self._scope,
                args.query,
                limit=args.top_k,
                levels=args.levels,
                sessions=self._sessions,
            )
            return self._shown(obs=obs)
        if isinstance(args, SearchMessages):
            msgs = await self._reader.search_messages(
                self._scope, args.query, limit=args.top_k, sessions=self._sessions
            )
            return self._shown(msgs=msgs)
        if isinstance(args, GrepMessages):
            msgs = await self._reader.grep(
                self._scope, args.text, limit=self._limit, sessions=self._sessions
            )
            return self._shown(msgs=msgs)
        if isinstance(args, MessagesInRange):
            start, end = _when(args.start, end=False), _when(args.end, end=True)
            if end <= start:
                raise ToolError("end must be after start")
            msgs = await self._reader.in_range(
                self._scope, start, end, limit=self._limit, sessions=self._sessions
            )
            return self._shown(msgs=msgs)
        if isinstance(args, MessagesAround):
            return await self._around(args)
        if isinstance(args, Provenance):
            return await self._provenance(args.observation_id)
        raise ToolError(f"no handler for {type(args).__name__}")  # pragma: no cover

    def _shown(self, *, obs: list[Obs] | None = None, msgs: list[Msg] | None = None) -> str:
        self._reads.saw(obs=obs or [], msgs=msgs or [])
        if obs is not None:
            return render_observations(obs)
        return render_messages(msgs or [])

    async def _one(self, observation_id: str) -> Obs:
        found = await self._reader.observations(
            self._scope, [observation_id], sessions=self._sessions
        )
        if not found:
            raise ToolError(f"no observation {observation_id!r} in this peer's representation")
        return found[0]

    async def _walk(self, root: Obs) -> tuple[list[Obs], list[Msg]]:
        """Premises breadth-first down to explicit facts, and the messages those came from."""
        seen: dict[str, Obs] = {root.id: root}
        frontier = [root]
        for _ in range(MAX_PROVENANCE_DEPTH):
            wanted = [p for o in frontier for p in o.premise_ids if p not in seen]
            if not wanted:
                break
            frontier = await self._reader.observations(
                self._scope, list(dict.fromkeys(wanted)), sessions=self._sessions
            )
            seen.update((o.id, o) for o in frontier)
        sources = [m for o in seen.values() for m in o.source_message_ids]
        msgs = await self._reader.messages(
            self._scope, list(dict.fromkeys(sources)), sessions=self._sessions
        )
        return list(seen.values()), msgs

    async def _provenance(self, observation_id: str) -> str:
        root = await self._one(observation_id)
        obs, msgs = await self._walk(root)
        self._reads.saw(obs=obs, msgs=msgs)
        explicit = [o for o in obs if o.level == "explicit"]
        derived = [o for o in obs if o.level != "explicit"]
        return (
            f"Provenance of [{root.id}]:\n"
            f"derived:\n{render_observations(derived, '(none)')}\n"
            f"explicit premises:\n{render_observations(explicit, '(none)')}\n"
            f"source messages:\n{render_messages(msgs, '(none visible)')}"
        )

    async def _around(self, args: MessagesAround) -> str:
        root = await self._one(args.observation_id)
        _, sources = await self._walk(root)
        if not sources:
            raise ToolError(f"no visible source message for observation {root.id!r}")
        context: dict[str, Msg] = {}
        for source in sources[:3]:
            for m in await self._reader.around(
                self._scope, source, args.window, sessions=self._sessions
            ):
                context.setdefault(m.id, m)
        ordered = sorted(context.values(), key=lambda m: (m.created_at, m.seq))
        self._reads.saw(obs=[root], msgs=ordered)
        return render_messages(ordered)

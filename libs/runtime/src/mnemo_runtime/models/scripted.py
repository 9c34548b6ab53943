"""Test doubles of the model port: a scripted model and a record/replay cassette.

Both implement ``ChatModel`` and pass the same contract suite as the real providers, so a stage
tested against them behaves the same against Anthropic or an OpenAI-compatible server.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

from mnemo_runtime.models.ports import ChatModel, ModelRequest, ModelResponse, ToolCall, Usage

Responder = Callable[[ModelRequest], ModelResponse]
ScriptStep = ModelResponse | Responder | Exception


def text_reply(text: str, *, input_tokens: int = 0, output_tokens: int = 0) -> ModelResponse:
    """A plain text answer."""
    return ModelResponse(
        text=text,
        stop_reason="end_turn",
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
        model="scripted",
    )


def tool_reply(
    name: str, tool_input: dict[str, Any], *, call_id: str = "call_1", text: str = ""
) -> ModelResponse:
    """An answer that calls one tool."""
    return ModelResponse(
        text=text,
        tool_calls=(ToolCall(id=call_id, name=name, input=tool_input),),
        stop_reason="tool_use",
        model="scripted",
    )


class ScriptExhausted(AssertionError):
    """The code under test made more model calls than the script provides."""


class ScriptedModel:
    """Answers from a queue of responses, responders or errors, and records every request."""

    def __init__(self, *steps: ScriptStep, otherwise: Responder | None = None) -> None:
        self.requests: list[ModelRequest] = []
        self._steps: deque[ScriptStep] = deque(steps)
        self._otherwise = otherwise

    def then(self, *steps: ScriptStep) -> ScriptedModel:
        """Queue more steps after the current ones."""
        self._steps.extend(steps)
        return self

    @property
    def remaining(self) -> int:
        """Steps not yet consumed."""
        return len(self._steps)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The next scripted step, applied to ``request``."""
        self.requests.append(request)
        if self._steps:
            step = self._steps.popleft()
        elif self._otherwise is not None:
            step = self._otherwise
        else:
            raise ScriptExhausted(
                f"no scripted response for call #{len(self.requests)} (stage {request.stage})"
            )
        if isinstance(step, Exception):
            raise step
        if isinstance(step, ModelResponse):
            return step
        return step(request)


class CassetteMode(StrEnum):
    RECORD = "record"  # start a fresh cassette; every call goes to the inner model
    REPLAY = "replay"  # answer known requests from the cassette, record unknown ones
    REPLAY_OR_FAIL = "replay_or_fail"  # answer known requests, raise on anything else


class CassetteMiss(LookupError):
    """A replay-only cassette has no response for this request."""


def request_key(request: ModelRequest) -> str:
    """A stable hash of everything in the request, so any change in prompt or tools misses."""
    canonical = json.dumps(
        request.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class RecordReplayModel:
    """Records request/response pairs of an inner model to JSONL, and replays them.

    A request seen n times is answered with the n-th recorded response, then the last one again:
    identical requests are legitimately repeated (retried turns), and the order they were
    recorded in is the order the code under test makes them.
    """

    def __init__(
        self,
        cassette: Path,
        *,
        mode: CassetteMode = CassetteMode.REPLAY_OR_FAIL,
        inner: ChatModel | None = None,
    ) -> None:
        if mode is not CassetteMode.REPLAY_OR_FAIL and inner is None:
            raise ValueError(f"mode {mode} needs an inner model to record from")
        self.cassette = cassette
        self.mode = mode
        self._inner = inner
        self._recorded: dict[str, list[ModelResponse]] = {}
        self._served: Counter[str] = Counter()
        if mode is CassetteMode.RECORD:
            cassette.unlink(missing_ok=True)
        elif cassette.exists():
            self._load()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The recorded response for ``request``, or the inner model's (recorded on the way)."""
        key = request_key(request)
        if self.mode is not CassetteMode.RECORD and key in self._recorded:
            return self._replay(key)
        if self._inner is None or self.mode is CassetteMode.REPLAY_OR_FAIL:
            raise CassetteMiss(
                f"{self.cassette}: no response recorded for {request.stage} request {key[:12]}"
            )
        response = await self._inner.complete(request)
        self._append(key, request, response)
        return response

    def _replay(self, key: str) -> ModelResponse:
        responses = self._recorded[key]
        index = min(self._served[key], len(responses) - 1)
        self._served[key] += 1
        return responses[index]

    def _load(self) -> None:
        for line in self.cassette.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                response = ModelResponse.model_validate(entry["response"])
                self._recorded.setdefault(entry["key"], []).append(response)

    def _append(self, key: str, request: ModelRequest, response: ModelResponse) -> None:
        # The request is stored beside its key so a cassette diff shows what prompt changed.
        entry = {
            "key": key,
            "request": request.model_dump(mode="json"),
            "response": response.model_dump(mode="json"),
        }
        self.cassette.parent.mkdir(parents=True, exist_ok=True)
        with self.cassette.open("a") as f:
            f.write(json.dumps(entry, sort_keys=True, ensure_ascii=False) + "\n")
        self._recorded.setdefault(key, []).append(response)
        self._served[key] += 1

"""Fakes of the OpenAI wire: a chat-completions server over real HTTP on loopback, and the same
model behind llama.cpp's in-process engine port (``FakeEngine``).

What it is checked against: the wire format as the OpenAI API reference documents it (request:
``model``, ``messages`` by role, ``tools`` of type ``function``, ``tool_choice`` as "none" /
"auto" / "required" / a named function, ``response_format`` of type ``text`` / ``json_object`` /
``json_schema`` with a ``name`` of at most 64 of ``[a-zA-Z0-9_-]``; response: a
``chat.completion`` with ``choices[].message.content`` / ``tool_calls`` whose ``arguments`` are a
JSON string, ``finish_reason`` "stop" / "tool_calls" / "length", and ``usage``), the rules those
servers enforce and answer with a 400 in the API's error shape (a ``tool`` message must answer a
``tool_calls`` id of the assistant message before it, an assistant's calls must all be answered,
a named ``tool_choice`` must name a declared tool, ``tool_choice`` needs ``tools``, unknown
request fields are refused), a 401 without the configured bearer key, and the documented
behaviour of vLLM, Ollama and llama.cpp's server (named function calling, ``response_format``
with a JSON schema; Ollama and others accepting a schema they do not enforce).

The model behind it is a script of ``Turn``s. How a turn comes out depends on what the request
asks and on the server's ``Behaviour``: as ``tool_calls`` when tools are offered, as JSON content
shaped by the requested schema when one is (a schema-following server), as prose when the server
ignores the schema or the tools.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal

import uvicorn
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemo_runtime.models.llamacpp_engine import EngineRejected, EngineTimeout
from mnemo_runtime.stack import free_port

NAME = r"^[a-zA-Z0-9_-]{1,64}$"


@dataclass(frozen=True)
class Turn:
    """What the model says in one turn, independent of any wire format."""

    tool: str | None = None
    input: dict[str, Any] = field(default_factory=dict)
    text: str = ""


class Behaviour(StrEnum):
    FOLLOWS = "follows"  # honours tools and response_format schemas
    IGNORES_SCHEMA = "ignores_schema"  # accepts response_format, answers as the model pleases
    IGNORES_TOOLS = "ignores_tools"  # accepts tools, never calls one


# --- the request, as the API reference describes it -------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _FunctionRef(_Strict):
    name: str


class _CallFunction(_Strict):
    name: str
    arguments: str  # a JSON string, per the reference


class _WireToolCall(_Strict):
    id: str
    type: Literal["function"]
    function: _CallFunction


class _System(_Strict):
    role: Literal["system"]
    content: str


class _User(_Strict):
    role: Literal["user"]
    content: str | list[dict[str, Any]]


class _Assistant(_Strict):
    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[_WireToolCall] | None = None


class _Tool(_Strict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


_AnyMessage = Annotated[_System | _User | _Assistant | _Tool, Field(discriminator="role")]


class _FunctionDef(_Strict):
    name: str = Field(pattern=NAME)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class _ToolDef(_Strict):
    type: Literal["function"]
    function: _FunctionDef


class _NamedChoice(_Strict):
    type: Literal["function"]
    function: _FunctionRef


class _JsonSchema(_Strict):
    name: str = Field(pattern=NAME)
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class _Format(_Strict):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: _JsonSchema | None = None


class ChatRequest(_Strict):
    model: str
    messages: list[_AnyMessage] = Field(min_length=1)
    tools: list[_ToolDef] | None = None
    tool_choice: Literal["none", "auto", "required"] | _NamedChoice | None = None
    response_format: _Format | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)


class _BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def _check_rules(req: ChatRequest) -> None:
    """The semantic checks the API makes beyond field shapes."""
    if req.tool_choice is not None and not req.tools:
        raise _BadRequest(
            "'tool_choice' is only allowed when 'tools' are specified.", "tool_choice"
        )
    if isinstance(req.tool_choice, _NamedChoice):
        names = {t.function.name for t in req.tools or []}
        if req.tool_choice.function.name not in names:
            raise _BadRequest("tool_choice names a function that is not in tools", "tool_choice")
    fmt = req.response_format
    if fmt is not None and fmt.type == "json_schema" and fmt.json_schema is None:
        raise _BadRequest("Missing required parameter: 'response_format.json_schema'.")
    open_calls: set[str] = set()
    for i, m in enumerate(req.messages):
        if isinstance(m, _Tool):
            if m.tool_call_id not in open_calls:
                raise _BadRequest(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{i}].role",
                )
            open_calls.discard(m.tool_call_id)
            continue
        if open_calls:
            raise _BadRequest(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'.",
                f"messages.[{i}].role",
            )
        if isinstance(m, _Assistant) and m.tool_calls:
            for call in m.tool_calls:
                json.loads(call.function.arguments)  # a JSON string, or the request is bad
            open_calls = {c.id for c in m.tool_calls}


# --- the server -------------------------------------------------------------------------------


@dataclass
class Exchange:
    """A request the server received and what it answered."""

    body: dict[str, Any]
    headers: dict[str, str]
    status: int
    reply: dict[str, Any]


@dataclass
class Script:
    """The server's behaviour for one test: its model's turns and its failures."""

    turns: list[Turn] = field(default_factory=list)
    behaviour: Behaviour = Behaviour.FOLLOWS
    api_key: str | None = None
    # Statuses answered before the model speaks, one per request (then the model answers).
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    model: str = "llama3.1:8b"
    # (prompt, completion) tokens to report; by default estimated from the text (4 chars each).
    usage: tuple[int, int] | None = None


class FakeOpenAIServer:
    """The fake, on a free loopback port, in a thread of its own."""

    def __init__(self) -> None:
        self.script = Script()
        self.exchanges: list[Exchange] = []
        self.port = free_port()
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        self._server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                return self
            threading.Event().wait(0.01)
        raise RuntimeError("the fake OpenAI server did not start")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)

    def reset(self, script: Script) -> None:
        self.script = script
        self.exchanges = []

    def bodies(self) -> list[dict[str, Any]]:
        return [e.body for e in self.exchanges]

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        headers = dict(request.headers)
        status, reply, extra = self._answer(body, headers)
        self.exchanges.append(Exchange(body, headers, status, reply))
        return JSONResponse(reply, status_code=status, headers=extra)

    def _answer(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        script = self.script
        if (
            script.api_key is not None
            and headers.get("authorization") != f"Bearer {script.api_key}"
        ):
            return 401, _error("Incorrect API key provided.", "invalid_request_error"), {}
        if script.failures:
            status, extra = script.failures.pop(0)
            return status, _error(f"fake failure {status}", "server_error"), extra
        try:
            req = ChatRequest.model_validate(body)
            _check_rules(req)
        except ValidationError as err:
            first = err.errors()[0]
            param = ".".join(str(p) for p in first["loc"])
            return 400, _error(first["msg"], "invalid_request_error", param), {}
        except _BadRequest as err:
            return 400, _error(err.message, "invalid_request_error", err.param), {}
        if not script.turns:
            return 500, _error("the fake's script is exhausted", "server_error"), {}
        turn = script.turns.pop(0)
        n = len(self.exchanges)
        return 200, completion(req, turn, script.behaviour, n, script.model, script.usage), {}


def _error(message: str, kind: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def completion(
    req: ChatRequest,
    turn: Turn,
    behaviour: Behaviour,
    n: int,
    model: str,
    usage: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """The chat completion a server of ``behaviour`` returns when its model says ``turn``."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    schema = _requested_schema(req)
    tools_offered = bool(req.tools) and req.tool_choice != "none"
    if turn.tool and tools_offered and behaviour is not Behaviour.IGNORES_TOOLS:
        function = {"name": turn.tool, "arguments": json.dumps(turn.input)}
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function", "function": function}]
        message["content"] = turn.text or None
        finish = "tool_calls"
    elif schema is not None and behaviour is Behaviour.FOLLOWS:
        message["content"] = json.dumps(following(schema, turn))
    elif schema is not None and turn.tool:
        # A model told the format in its prompt, on a server that does not enforce it: the JSON,
        # wrapped the way chat models like to wrap it.
        message["content"] = f"Sure!\n```json\n{json.dumps(following(schema, turn))}\n```"
    else:
        message["content"] = turn.text or (
            f"I would call {turn.tool} with {json.dumps(turn.input)}." if turn.tool else ""
        )
    prompt_tokens, completion_tokens = usage or (
        sum(len(json.dumps(m.model_dump())) // 4 for m in req.messages),
        max(1, len(json.dumps(message)) // 4),
    )
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1764487262 + n,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _requested_schema(req: ChatRequest) -> dict[str, Any] | None:
    fmt = req.response_format
    if fmt is None or fmt.type != "json_schema" or fmt.json_schema is None:
        return None
    return fmt.json_schema.schema_ or {}


def following(schema: dict[str, Any], turn: Turn) -> Any:
    """The JSON a model constrained to ``schema`` writes for ``turn``.

    A schema of alternatives gets the alternative that fits: the branch whose ``tool`` constant
    names the turn's tool, or the one taking text; any other schema is the tool's input itself.
    """
    for branch in schema.get("anyOf", []):
        props = branch.get("properties", {})
        if turn.tool and props.get("tool", {}).get("const") == turn.tool:
            return {"tool": turn.tool, "input": turn.input}
        if not turn.tool and set(props) == {"answer"}:
            return {"answer": turn.text}
    return turn.input if turn.tool else turn.text


# --- the same model behind llama.cpp's in-process engine port ---------------------------------


class _EngineRequest(ChatRequest):
    # llama.cpp's server takes its own sampling fields beside the API's, and serves the model
    # it has loaded whatever the request names.
    model_config = ConfigDict(extra="allow")
    model: str = ""


class FakeEngine:
    """A ``ChatEngine`` whose model is a script of turns; follows schemas as llama.cpp does."""

    def __init__(
        self, *turns: Turn, name: str = "fake.gguf", usage: tuple[int, int] | None = None
    ) -> None:
        self.name = name
        self.turns = list(turns)
        self.usage = usage
        self.bodies: list[dict[str, Any]] = []

    def chat(
        self, body: dict[str, Any], *, deadline: float, cancelled: threading.Event
    ) -> dict[str, Any]:
        self.bodies.append(body)
        try:
            req = _EngineRequest.model_validate(body)
            _check_rules(req)
        except (ValidationError, _BadRequest) as err:
            raise EngineRejected(str(err), status=400) from err
        if time.monotonic() > deadline:
            raise EngineTimeout("generation passed its deadline")
        if not self.turns:
            raise AssertionError(f"no scripted turn for call #{len(self.bodies)}")
        turn = self.turns.pop(0)
        return completion(req, turn, Behaviour.FOLLOWS, len(self.bodies), self.name, self.usage)

"""Tool calls as schema-constrained JSON, for models and servers without dependable tool calling.

Many local models have chat templates without tool support, and some OpenAI-compatible servers
ignore ``tools`` or ``tool_choice``; nearly all of them constrain output to a JSON schema
(``response_format`` / grammar). So a tool-using turn is asked for as one JSON object:

- a forced tool (``structured`` calls): the tool's input itself, under its input schema;
- otherwise (tool loops): ``{"tool": NAME, "input": {...}}`` for a call, under one branch per
  tool, or ``{"answer": "..."}`` for a final text answer when the request allows one.

The conversation is rendered in plain system / user / assistant turns: earlier calls as the
JSON they were given in, tool results as user text naming the tool. ``render`` and ``decode``
are the two halves of one format and live together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mnemo_runtime.models.ports import (
    Message,
    ModelRequest,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)

ANSWER_KEY = "answer"


@dataclass(frozen=True)
class ActionFormat:
    """What the model must answer with for one request."""

    name: str
    schema: dict[str, Any]
    # The tool whose input the whole answer is, when the request forces one.
    forced: str | None
    may_answer: bool


def action_format(request: ModelRequest) -> ActionFormat | None:
    """The JSON answer ``request`` asks for; None when it offers no tools (plain text)."""
    if not request.tools or request.tool_choice.mode == "none":
        return None
    forced = request.forced_tool()
    if forced is not None:
        return ActionFormat(forced.name, forced.input_schema, forced.name, may_answer=False)
    may_answer = request.tool_choice.mode == "auto"
    return ActionFormat("action", _union(request.tools, may_answer), None, may_answer)


def render(request: ModelRequest, fmt: ActionFormat) -> list[dict[str, Any]]:
    """The request's conversation as plain chat turns, with the answer format explained."""
    names = {
        b.id: b.name for m in request.messages for b in m.content if isinstance(b, ToolUseBlock)
    }
    system = "\n\n".join(s for s in (request.system, _instructions(request, fmt)) if s)
    turns: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in request.messages:
        text = _turn_text(message, fmt, names)
        if not text:
            continue
        if turns[-1]["role"] == message.role:
            # Templates of many models require alternating turns: merge same-role neighbours.
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": message.role, "content": text})
    return turns


def decode(content: str, fmt: ActionFormat, call_id: str) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls a model's JSON answer stands for.

    A server that does not enforce the schema may return the JSON inside prose or a code fence:
    the first JSON object in the text is taken. Text without one is a malformed call when a
    call was required, else the model's text answer; a malformed call goes back to the model
    as an error, which is how it learns to correct itself.
    """
    value = _json_object(content)
    if isinstance(value, str):
        if fmt.forced is None and fmt.may_answer and "{" not in content:
            return content, ()
        return "", (_malformed(call_id, fmt.forced or "action", value),)
    if fmt.forced is not None:
        return "", (ToolCall(id=call_id, name=fmt.forced, input=value),)
    if fmt.may_answer and isinstance(value.get(ANSWER_KEY), str) and "tool" not in value:
        return value[ANSWER_KEY], ()
    name, tool_input = value.get("tool"), value.get("input", {})
    if not isinstance(name, str) or not isinstance(tool_input, dict):
        reason = 'expected {"tool": NAME, "input": {...}}' + (
            ' or {"answer": TEXT}' if fmt.may_answer else ""
        )
        return "", (_malformed(call_id, name if isinstance(name, str) else "action", reason),)
    return "", (ToolCall(id=call_id, name=name, input=tool_input),)


def _json_object(content: str) -> dict[str, Any] | str:
    """The JSON object ``content`` is, or the first one in it; else why there is none."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError as exc:
        error = f"not JSON: {exc}"
        start = content.find("{")
        if start < 0:
            return error
        try:
            value, _ = json.JSONDecoder().raw_decode(content, start)
        except json.JSONDecodeError:
            return error
    if not isinstance(value, dict):
        return f"not a JSON object but {type(value).__name__}"
    return value


def call_id(request: ModelRequest) -> str:
    """An id for the call the next turn may make, unique within the conversation."""
    return f"call_{sum(1 for m in request.messages if m.role == 'assistant')}"


def _malformed(call_id: str, name: str, reason: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, input={}, malformed=reason)


def _instructions(request: ModelRequest, fmt: ActionFormat) -> str:
    if fmt.forced is not None:
        tool = request.forced_tool()
        description = f": {tool.description}" if tool is not None else ""
        return f"Answer with one JSON object, the input of the tool `{fmt.forced}`{description}"
    lines = [
        "Answer with one JSON object. To call a tool: "
        '{"tool": "<name>", "input": {<the tool\'s input>}}.'
    ]
    if fmt.may_answer:
        lines.append('To give your final answer instead: {"answer": "<text>"}.')
    lines.append("Tools:")
    lines += [
        f"- {t.name}: {t.description} Input schema: {json.dumps(t.input_schema)}"
        for t in request.tools
    ]
    return "\n".join(lines)


def _turn_text(message: Message, fmt: ActionFormat, names: dict[str, str]) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            shown = (
                block.input
                if fmt.forced is not None
                else {"tool": block.name, "input": block.input}
            )
            parts.append(json.dumps(shown, ensure_ascii=False))
        elif isinstance(block, ToolResultBlock):
            tool = names.get(block.tool_use_id, "the tool")
            verdict = "Error from" if block.is_error else "Result of"
            parts.append(f"{verdict} {tool} ({block.tool_use_id}):\n{block.content}")
    return "\n\n".join(p for p in parts if p)


def _union(tools: tuple[ToolSpec, ...], may_answer: bool) -> dict[str, Any]:
    """One branch per tool (and one for the answer); every tool's ``$defs`` hoisted to the root.

    A tool's schema refers to its definitions as ``#/$defs/X``; nested under ``input`` those
    references would no longer resolve, so each definition moves to the root under a name
    prefixed with its tool's, and the references are rewritten to match.
    """
    defs: dict[str, Any] = {}
    branches: list[dict[str, Any]] = []
    for tool in tools:
        schema = dict(tool.input_schema)
        local = schema.pop("$defs", {})
        rename = {f"#/$defs/{k}": f"#/$defs/{tool.name}__{k}" for k in local}
        for key, definition in local.items():
            defs[f"{tool.name}__{key}"] = _rewrite_refs(definition, rename)
        branches.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"const": tool.name},
                    "input": _rewrite_refs(schema, rename),
                },
                "required": ["tool", "input"],
                "additionalProperties": False,
            }
        )
    if may_answer:
        branches.append(
            {
                "type": "object",
                "properties": {ANSWER_KEY: {"type": "string"}},
                "required": [ANSWER_KEY],
                "additionalProperties": False,
            }
        )
    union: dict[str, Any] = {"anyOf": branches}
    if defs:
        union["$defs"] = defs
    return union


def _rewrite_refs(node: Any, rename: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {
            k: rename.get(v, v) if k == "$ref" and isinstance(v, str) else _rewrite_refs(v, rename)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rewrite_refs(v, rename) for v in node]
    return node

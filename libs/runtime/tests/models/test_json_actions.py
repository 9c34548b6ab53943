"""Tool calls as schema-constrained JSON: the formats asked for and how answers are read back."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from mnemo_runtime.models import Message, ModelRequest, Stage, ToolChoice, ToolSpec
from mnemo_runtime.models.json_actions import action_format, call_id, decode, render
from mnemo_runtime.models.ports import ToolResultBlock, ToolUseBlock


class Span(BaseModel):
    start: int
    end: int


class Cite(BaseModel):
    """Cite spans of a message."""

    message_id: str
    spans: list[Span]


class Find(BaseModel):
    """Find messages."""

    spans: list[Span]


CITE = ToolSpec.for_output(Cite, name="cite")
FIND = ToolSpec.for_output(Find, name="find")


def request(choice: ToolChoice, *messages: Message, tools=(CITE, FIND)) -> ModelRequest:
    return ModelRequest(
        stage=Stage.DIALECTIC_LOW,
        system="Answer questions about alice.",
        messages=messages or (Message.user("What does alice do?"),),
        tools=tools,
        tool_choice=choice,
    )


def test_no_tools_or_tool_choice_none_means_plain_text():
    assert action_format(request(ToolChoice(), tools=())) is None
    assert action_format(request(ToolChoice(mode="none"))) is None


def test_a_forced_tool_is_answered_with_its_input_under_its_own_schema():
    fmt = action_format(request(ToolChoice.force("cite")))

    assert fmt is not None
    assert (fmt.name, fmt.forced, fmt.may_answer) == ("cite", "cite", False)
    assert fmt.schema == Cite.model_json_schema()


def test_a_tool_loop_gets_one_branch_per_tool_and_their_definitions_hoisted():
    fmt = action_format(request(ToolChoice()))

    assert fmt is not None and fmt.may_answer
    cite, find, answer = fmt.schema["anyOf"]
    assert cite["properties"]["tool"] == {"const": "cite"}
    assert find["properties"]["input"]["properties"]["spans"]["items"] == {
        "$ref": "#/$defs/find__Span"
    }
    assert set(fmt.schema["$defs"]) == {"cite__Span", "find__Span"}
    assert answer["required"] == ["answer"]
    # "any": a call is required, no answer branch.
    required = action_format(request(ToolChoice(mode="any")))
    assert required is not None and len(required.schema["anyOf"]) == 2


def test_the_conversation_is_rendered_in_plain_turns():
    use = ToolUseBlock(id="call_0", name="find", input={"spans": []})
    req = request(
        ToolChoice(),
        Message.user("What does alice do?"),
        Message.assistant("Let me look.", use),
        Message.user(ToolResultBlock(tool_use_id="call_0", content="no rows", is_error=True)),
        Message.user("Try again."),
    )
    fmt = action_format(req)
    assert fmt is not None

    turns = render(req, fmt)

    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user"]
    assert turns[0]["content"].startswith("Answer questions about alice.\n\nAnswer with one JSON")
    assert '- find: Find messages. Input schema: {"$defs"' in turns[0]["content"]
    assert turns[2]["content"] == 'Let me look.\n\n{"tool": "find", "input": {"spans": []}}'
    assert turns[3]["content"] == "Error from find (call_0):\nno rows\n\nTry again."
    assert call_id(req) == "call_1"


@pytest.mark.parametrize(
    ("content", "text", "call"),
    [
        ('{"tool": "find", "input": {"spans": []}}', "", ("find", {"spans": []}, None)),
        ('{"answer": "She is a nurse."}', "She is a nurse.", None),
        ("She is a nurse.", "She is a nurse.", None),
        ('Here:\n```json\n{"tool": "cite", "input": {}}\n```', "", ("cite", {}, None)),
        (
            '{"tool": 3}',
            "",
            ("action", {}, 'expected {"tool": NAME, "input": {...}} or {"answer": TEXT}'),
        ),
        ('{"tool": "find", "input"', "", ("action", {}, "not JSON")),
        ("[1, 2]", "[1, 2]", None),  # no object in it: the model's text
    ],
)
def test_answers_in_a_tool_loop(content, text, call):
    fmt = action_format(request(ToolChoice()))
    assert fmt is not None

    got_text, calls = decode(content, fmt, "call_4")

    assert got_text == text
    if call is None:
        assert calls == ()
    else:
        [got] = calls
        assert (got.id, got.name, got.input) == ("call_4", call[0], call[1])
        assert (got.malformed is None) == (call[2] is None)
        if call[2] is not None:
            assert got.malformed.startswith(call[2])


def test_answers_to_a_forced_tool_are_its_input_or_malformed():
    fmt = action_format(request(ToolChoice.force("cite")))
    assert fmt is not None
    value = {"message_id": "m1", "spans": [{"start": 0, "end": 4}]}

    [ok] = decode(json.dumps(value), fmt, "call_0")[1]
    [prose] = decode("Alice is a nurse.", fmt, "call_0")[1]
    [cut] = decode('{"message_id": "m1", "spa', fmt, "call_0")[1]
    [listed] = decode("[1, 2]", fmt, "call_0")[1]

    assert (ok.name, ok.input, ok.malformed) == ("cite", value, None)
    assert prose.name == cut.name == "cite"
    assert prose.malformed is not None and prose.malformed.startswith("not JSON")
    assert cut.malformed is not None and cut.malformed.startswith("not JSON")
    assert listed.malformed == "not a JSON object but list"

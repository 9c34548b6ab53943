"""structured(): what it asks the model for, and how it corrects it."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from mnemo_runtime.models import (
    MalformedOutput,
    Message,
    ModelRequest,
    ModelResponse,
    Stage,
    TextBlock,
    ToolCall,
    ToolChoice,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    structured,
)
from mnemo_runtime.models.scripted import ScriptedModel, text_reply, tool_reply
from mnemo_runtime.models.structured import describe_validation_error


class Summary(BaseModel):
    """A recompressed session summary."""

    text: str
    word_count: int


def ask() -> ModelRequest:
    other = ToolSpec(name="search", description="unused", input_schema={"type": "object"})
    return ModelRequest(
        stage=Stage.SUMMARIZER,
        system="Summarise.",
        messages=(Message.user("alice: hi"),),
        tools=(other,),
    )


async def test_forces_a_single_tool_built_from_the_output_model():
    model = ScriptedModel(tool_reply("Summary", {"text": "hi", "word_count": 1}))

    result = await structured(model, ask(), Summary)

    assert result == Summary(text="hi", word_count=1)
    [sent] = model.requests
    assert sent.tools == (
        ToolSpec(
            name="Summary",
            description="A recompressed session summary.",
            input_schema=Summary.model_json_schema(),
        ),
    )
    assert sent.tool_choice == ToolChoice.force("Summary")
    assert sent.forced_tool() == sent.tools[0]
    assert sent.messages == ask().messages
    assert sent.system == "Summarise."


async def test_custom_tool_name():
    model = ScriptedModel(tool_reply("emit_summary", {"text": "hi", "word_count": 1}))

    await structured(model, ask(), Summary, tool_name="emit_summary")

    assert model.requests[0].tool_choice.name == "emit_summary"


async def test_validation_error_goes_back_as_an_erroring_tool_result():
    bad = tool_reply("Summary", {"text": "hi", "word_count": "many"}, call_id="c1", text="Here.")
    model = ScriptedModel(bad, tool_reply("Summary", {"text": "hi", "word_count": 1}))

    await structured(model, ask(), Summary)

    retry = model.requests[1]
    echoed, feedback = retry.messages[-2:]
    assert echoed == Message.assistant(
        "Here.", ToolUseBlock(id="c1", name="Summary", input={"text": "hi", "word_count": "many"})
    )
    [block] = feedback.content
    assert isinstance(block, ToolResultBlock)
    assert (block.tool_use_id, block.is_error) == ("c1", True)
    assert "word_count: Input should be a valid integer" in block.content


async def test_only_the_matching_call_is_used_and_echoed():
    reply = ModelResponse(
        tool_calls=(
            ToolCall(id="a", name="search", input={}),
            ToolCall(id="b", name="Summary", input={"text": "x"}),
        ),
        stop_reason="tool_use",
    )
    model = ScriptedModel(reply, tool_reply("Summary", {"text": "x", "word_count": 1}))

    await structured(model, ask(), Summary)

    echoed = model.requests[1].messages[-2]
    assert [b.id for b in echoed.content if isinstance(b, ToolUseBlock)] == ["b"]


async def test_a_text_answer_is_nudged_towards_the_tool():
    model = ScriptedModel(
        text_reply("hello"), tool_reply("Summary", {"text": "x", "word_count": 1})
    )

    await structured(model, ask(), Summary)

    echoed, nudge = model.requests[1].messages[-2:]
    assert echoed == Message.assistant("hello")
    assert nudge.content == (TextBlock(text="Answer by calling the Summary tool."),)


async def test_an_empty_answer_is_nudged_without_an_empty_assistant_turn():
    model = ScriptedModel(ModelResponse(), tool_reply("Summary", {"text": "x", "word_count": 1}))

    await structured(model, ask(), Summary)

    assert [m.role for m in model.requests[1].messages] == ["user", "user"]


async def test_undecodable_arguments_count_as_malformed():
    broken = ModelResponse(
        tool_calls=(ToolCall(id="z", name="Summary", input={}, malformed="Expecting value"),)
    )
    model = ScriptedModel(broken)

    with pytest.raises(MalformedOutput) as raised:
        await structured(model, ask(), Summary, attempts=1)

    assert "Expecting value" in raised.value.reason
    assert len(model.requests) == 1


async def test_attempts_must_be_positive():
    with pytest.raises(ValueError):
        await structured(ScriptedModel(), ask(), Summary, attempts=0)


def test_describe_validation_error_names_each_location():
    with pytest.raises(ValidationError) as raised:
        Summary.model_validate({"word_count": "x"})

    described = describe_validation_error(raised.value)

    assert described.startswith("text: Field required; word_count:")


def test_tool_choice_name_only_when_forced():
    with pytest.raises(ValidationError):
        ToolChoice(mode="tool")
    with pytest.raises(ValidationError):
        ToolChoice(mode="auto", name="x")


def test_a_tool_for_an_output_carries_the_models_schema_made_once_and_copied() -> None:
    class Found(BaseModel):
        """What was found."""

        items: list[str]

    first, second = ToolSpec.for_output(Found), ToolSpec.for_output(Found, name="found")
    assert first.input_schema == second.input_schema == Found.model_json_schema()
    assert (first.name, second.name, first.description) == ("Found", "found", "What was found.")
    # One tool's schema changed by a caller does not change the next tool's.
    first.input_schema["properties"]["items"]["title"] = "changed"
    assert ToolSpec.for_output(Found).input_schema == Found.model_json_schema()

"""The deriver's local skill on the model port: its tool call, and its guarantees."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo_deriver.contract import (
    DERIVER_PROMPT,
    BatchMessage,
    DeriverOutput,
    render_batch,
    span_in_message,
)
from mnemo_deriver.local import LocalDeriver, local_deriver
from mnemo_runtime.models import (
    CallRuntime,
    Message,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    Stage,
    ToolChoice,
    ToolSpec,
    UsageLedger,
    structured,
)
from mnemo_runtime.models.config import ModelChoice, ModelSettings, build_model
from mnemo_runtime.models.local import LocalReasoner

T0 = datetime(2023, 5, 25, 13, 14, tzinfo=UTC)

CONVERSATION = [
    ("Melanie", "Hey Caroline! I ran a charity race for mental health last Saturday.", True),
    (
        "Caroline",
        "That sounds great, Mel! I'm really proud of you. Researching adoption agencies — it's "
        "been a dream to have a family. I went to a support group yesterday and it was powerful.",
        False,
    ),
    ("Melanie", "Wow! What made you pick that agency?", True),
    (
        "Caroline",
        "I chose them 'cause they help LGBTQ+ folks with adoption.\nMy goal is to give kids a "
        "loving home. Any fun plans for the summer?",
        False,
    ),
]


def batch(target: str = "Caroline") -> str:
    messages = [
        BatchMessage(i, peer, text, T0 + timedelta(minutes=i), ctx)
        for i, (peer, text, ctx) in enumerate(CONVERSATION)
    ]
    return render_batch(target, messages)


def deriver_request(text: str | None = None, *, tool_name: str = "DeriverOutput") -> ModelRequest:
    return ModelRequest(
        stage=Stage.DERIVER,
        system=DERIVER_PROMPT,
        messages=(Message.user(text if text is not None else batch()),),
        tools=(ToolSpec.for_output(DeriverOutput, name=tool_name),),
        tool_choice=ToolChoice.force(tool_name),
    )


async def test_answers_the_forced_tool_with_a_valid_deriver_output():
    response = await local_deriver().complete(deriver_request())

    [call] = response.tool_calls
    assert call.name == "DeriverOutput"
    assert response.stop_reason == "tool_use"
    assert response.model == "local-heuristic"
    output = DeriverOutput.model_validate(call.input)
    assert [(o.source_message_index, o.fact) for o in output.observations] == [
        (1, "Caroline is researching adoption agencies."),
        (1, "Caroline went to a support group on 24 May 2023."),
        (3, "Caroline chose them because they help LGBTQ+ folks with adoption."),
        (3, "Caroline's goal is to give kids a loving home."),
    ]


async def test_usage_is_a_rough_token_count():
    request = deriver_request()

    response = await local_deriver().complete(request)

    prompt_chars = len(DERIVER_PROMPT) + len(batch())
    assert response.usage.input_tokens == prompt_chars // 4
    assert 0 < response.usage.output_tokens < prompt_chars // 4


async def test_every_span_is_verbatim_in_the_cited_target_message():
    response = await local_deriver().complete(deriver_request())
    output = DeriverOutput.model_validate(response.tool_calls[0].input)

    for o in output.observations:
        peer, content, context = CONVERSATION[o.source_message_index]
        assert peer == "Caroline" and not context
        assert o.source_span in content
        assert span_in_message(o.source_span, content)
        assert "Caroline" in o.fact


async def test_same_input_same_output():
    first = await local_deriver().complete(deriver_request())
    second = await local_deriver().complete(deriver_request())
    again = await local_deriver().complete(deriver_request())

    assert first == second == again


async def test_plugs_into_structured_output():
    output = await structured(local_deriver(), deriver_request(), DeriverOutput)

    assert isinstance(output, DeriverOutput)
    assert output.observations[0].fact == "Caroline is researching adoption agencies."


async def test_honours_the_forced_tools_name():
    output = await structured(
        local_deriver(), deriver_request(), DeriverOutput, tool_name="record_observations"
    )

    assert len(output.observations) == 4


async def test_finds_the_batch_inside_a_longer_user_turn():
    text = f"New messages follow.\n\n{batch()}\n\nRecord what they state."

    response = await local_deriver().complete(deriver_request(text))

    assert len(response.tool_calls[0].input["observations"]) == 4


async def test_the_other_speaker_as_target_gets_only_their_own_facts():
    response = await local_deriver().complete(deriver_request(batch("Melanie")))

    # Melanie's turns are context-only in this batch, so nothing may be extracted from them.
    assert response.tool_calls[0].input == {"observations": []}


@pytest.mark.parametrize("stage", [s for s in Stage if s is not Stage.DERIVER])
async def test_a_stage_without_a_skill_is_rejected_clearly(stage):
    request = ModelRequest(stage=stage, messages=(Message.user("hello"),))
    reasoner = LocalReasoner({Stage.DERIVER: LocalDeriver()})

    with pytest.raises(ModelRejected, match=f"no skill for the {stage.value} stage"):
        await reasoner.complete(request)


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (
            ModelRequest(stage=Stage.DERIVER, messages=(Message.user("hi"),)),
            "forced output tool",
        ),
        (deriver_request("no batch in here"), "no rendered batch"),
        (deriver_request('<batch target="x" messages="3">\n</batch>'), "could not read"),
        (
            ModelRequest(
                stage=Stage.DERIVER,
                messages=(Message.user(batch()),),
                tools=(ToolSpec(name="other", description="x", input_schema={"type": "object"}),),
                tool_choice=ToolChoice.force("other"),
            ),
            "asks for something else",
        ),
    ],
    ids=["no forced tool", "no batch", "broken batch", "foreign schema"],
)
async def test_requests_it_cannot_answer_are_rejected(request_, reason):
    with pytest.raises(ModelRejected, match=reason):
        await local_deriver().complete(request_)


def test_adding_a_skill_is_one_registration():
    class Echo:
        def respond(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse(text=request.messages[0].text(), model="local-heuristic")

    reasoner = LocalReasoner({Stage.DERIVER: LocalDeriver(), Stage.DREAMER_INDUCTION: Echo()})

    assert reasoner.stages == {Stage.DERIVER, Stage.DREAMER_INDUCTION}
    assert local_deriver().stages == {Stage.DERIVER}
    # The runtime's own reasoner has no deriver: the deriver service registers it.
    assert Stage.DERIVER not in LocalReasoner().stages


async def test_calls_through_a_call_runtime_are_accounted():
    ledger = UsageLedger()
    reasoner = LocalReasoner({Stage.DERIVER: LocalDeriver()}, calls=CallRuntime(ledger=ledger))

    response = await reasoner.complete(deriver_request())

    usage = ledger.stage(Stage.DERIVER)
    assert usage.calls == 1 and usage.failures == 0
    assert usage.input_tokens == response.usage.input_tokens


async def test_is_the_local_provider_of_build_model():
    settings = ModelSettings(default=ModelChoice(provider="local"))

    model = build_model(Stage.DERIVER, settings, local_factory=local_deriver)

    assert isinstance(model, LocalReasoner)
    output = await structured(model, deriver_request(), DeriverOutput)
    assert output.observations

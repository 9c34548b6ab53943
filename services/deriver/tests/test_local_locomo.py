"""The local deriver on real LoCoMo turns (conv-26, sessions 1-3), through the model port."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mnemo_deriver.contract import (
    DERIVER_PROMPT,
    BatchMessage,
    DeriverOutput,
    render_batch,
    span_in_message,
)
from mnemo_deriver.local import derive as heuristic
from mnemo_deriver.local import local_deriver
from mnemo_runtime.models import Message, ModelRequest, Stage, structured

# The datasets live beside the checkout, never inside it: <repo>/../shared/datasets.
DATASETS = Path(
    os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / ".." / "shared" / "datasets")
).resolve()
LOCOMO = DATASETS / "locomo" / "locomo-dev5.json"

pytestmark = pytest.mark.skipif(
    not LOCOMO.exists(), reason=f"LoCoMo not found at {LOCOMO} (set MNEMO_DATASETS)"
)

# "I", "my", "me" left in a fact would mean a rewrite missed them ("me-time" is a noun).
LEFTOVER_FIRST_PERSON = re.compile(r"(?<![-\w'])(?:I|I'm|I've|my|me|mine)(?![-\w'])")


def conversation() -> dict[str, Any]:
    items = json.loads(LOCOMO.read_text())
    conv: dict[str, Any] = next(i for i in items if i["sample_id"] == "conv-26")["conversation"]
    return conv


def session(conv: dict[str, Any], n: int, target: str) -> tuple[list[BatchMessage], list[str]]:
    """One session as one batch: the other speaker's turns are context for the target's."""
    when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
    turns = conv[f"session_{n}"]
    messages = [
        BatchMessage(
            index=i,
            peer_id=t["speaker"],
            content=t["text"],
            created_at=when.replace(tzinfo=UTC),
            is_context=t["speaker"] != target,
        )
        for i, t in enumerate(turns)
    ]
    return messages, [t["dia_id"] for t in turns]


async def derive(conv: dict[str, Any], target: str) -> list[tuple[str, str, str, str]]:
    """(dia_id, speaker, fact, span) for every observation of sessions 1-3 about ``target``."""
    model = local_deriver()
    found = []
    for n in (1, 2, 3):
        messages, dia_ids = session(conv, n, target)
        request = ModelRequest(
            stage=Stage.DERIVER,
            system=DERIVER_PROMPT,
            messages=(Message.user(render_batch(target, messages)),),
        )
        output = await structured(model, request, DeriverOutput)
        for o in output.observations:
            cited = messages[o.source_message_index]
            assert span_in_message(o.source_span, cited.content), (o, cited.content)
            found.append((dia_ids[o.source_message_index], cited.peer_id, o.fact, o.source_span))
    return found


CAROLINE_FACTS = [
    # "I went to a LGBTQ support group yesterday" on 8 May 2023.
    ("D1:3", "Caroline went to a LGBTQ support group on 7 May 2023."),
    ("D1:11", "Caroline is keen on counseling or working in mental health."),
    # "Researching adoption agencies — it's been a dream to have a family".
    ("D2:8", "Caroline is researching adoption agencies."),
    # "my school event last week" on Friday 9 June 2023.
    ("D3:1", "Caroline's school event in the week of 29 May 2023"),
    # "since I started transitioning three years ago".
    ("D3:1", "Caroline started transitioning in 2020."),
    ("D3:13", "Caroline has known these friends for 4 years as of 9 June 2023"),
    ("D3:13", "since Caroline moved from Caroline's home country"),
]

MELANIE_FACTS = [
    # "I ran a charity race for mental health last Saturday" on Thursday 25 May 2023.
    ("D2:1", "Melanie ran a charity race for mental health on 20 May 2023."),
    ("D1:14", "Melanie painted that lake sunrise in 2022."),
    ("D2:7", "Melanie and others are thinking about going camping in June 2023."),
    ("D3:14", "Melanie is lucky to have Melanie's husband and kids."),
]


@pytest.mark.parametrize(
    ("target", "other", "expected"),
    [("Caroline", "Melanie", CAROLINE_FACTS), ("Melanie", "Caroline", MELANIE_FACTS)],
    ids=["caroline", "melanie"],
)
async def test_known_self_disclosures_are_extracted_grounded_and_attributed(
    target, other, expected
):
    found = await derive(conversation(), target)

    for dia_id, fact in expected:
        assert any(d == dia_id and fact in f for d, _, f, _ in found), (dia_id, fact)
    assert all(speaker == target for _, speaker, _, _ in found), "attributed another's turn"
    for _, _, fact, _ in found:
        assert target in fact
        assert other not in fact.split()[0], fact
        assert not LEFTOVER_FIRST_PERSON.search(fact), fact
    assert len(found) >= 15


async def test_nothing_about_caroline_comes_from_melanies_turns():
    conv = conversation()
    melanie_turns = {
        t["dia_id"] for n in (1, 2, 3) for t in conv[f"session_{n}"] if t["speaker"] == "Melanie"
    }

    found = await derive(conv, "Caroline")

    assert not {dia_id for dia_id, _, _, _ in found} & melanie_turns


@pytest.mark.parametrize("target", ["Caroline", "Melanie"])
def test_what_a_message_yields_does_not_depend_on_the_messages_batched_with_it(target):
    """Whole sessions as one batch, and each turn alone with the turn before it: the same facts
    for every turn that follows the other speaker's (different batch boundaries, as one deriver
    and several replicas draw them, derive the same)."""
    conv = conversation()
    compared = 0
    for n in (1, 2, 3, 4, 5):
        messages, _ = session(conv, n, target)
        whole = heuristic(target, messages).observations
        for i, m in enumerate(messages):
            if m.is_context or i == 0 or not messages[i - 1].is_context:
                continue
            alone = heuristic(target, [messages[i - 1], m]).observations
            in_whole = [(o.fact, o.source_span) for o in whole if o.source_message_index == i]
            shifted = [(o.fact, o.source_span) for o in alone if o.source_message_index == m.index]
            assert in_whole == shifted, (n, m.content)
            compared += bool(in_whole)
    assert compared >= 10

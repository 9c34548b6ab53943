"""The local summarizer skill: extractive, attributed, within the word limit, deterministic."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemo_runtime.models import Message, ModelRejected, ModelRequest, Stage
from mnemo_runtime.models.local import LocalReasoner
from mnemo_summarizer.cadence import Job, Turn
from mnemo_summarizer.domain import parse_input
from mnemo_summarizer.domain import render as render_job
from mnemo_summarizer.local import LocalSummarizer, local_reasoner

DATA = Path(
    os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / ".." / "shared" / "datasets")
)
LOCOMO = DATA / "locomo" / "locomo-dev5.json"

CHAT = [
    ("caroline", "Hey Mel! Good to see you! How have you been?"),
    ("melanie", "Hey Caroline! I'm swamped with the kids & work. What's up with you?"),
    ("caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
    ("melanie", "Wow, that's cool! What happened that was so awesome?"),
    ("caroline", "I decided to study counseling in September, starting at the community college."),
    ("melanie", "I ran a charity race for mental health last Saturday with 300 runners."),
    ("caroline", "Thanks, Mel!"),
]


def render(
    messages: list[tuple[str, str]], limit: int, previous: str = "(none)", kind: str = "short"
) -> str:
    lines = "\n".join(f"[2023-05-08T13:56:00+00:00] {p}: {c}" for p, c in messages)
    return (
        f"Summary: {kind}\nWord limit: {limit}\n\nPrevious summary:\n{previous}\n\n"
        f"New messages:\n{lines}\n"
    )


def ask(text: str) -> ModelRequest:
    return ModelRequest(stage=Stage.SUMMARIZER, messages=(Message.user(text),))


def test_keeps_informative_statements_attributed_to_their_speaker():
    text = LocalSummarizer().respond(ask(render(CHAT, 150))).text
    lines = text.splitlines()
    assert "Caroline: I went to a LGBTQ support group yesterday and it was so powerful." in lines
    assert any(line.startswith("Melanie: I ran a charity race") for line in lines)
    assert any("September" in line for line in lines)
    # Questions and courtesies are not record.
    assert not any(line.endswith("?") or "Thanks" in line for line in lines)


def test_respects_the_word_limit():
    for limit in (10, 25, 40):
        text = LocalSummarizer().respond(ask(render(CHAT * 5, limit))).text
        assert 0 < len(text.split()) <= limit, (limit, text)


def test_is_deterministic_and_labelled_as_a_heuristic():
    a = LocalSummarizer().respond(ask(render(CHAT, 60)))
    b = LocalSummarizer().respond(ask(render(CHAT, 60)))
    assert a.text == b.text
    assert a.model == "local-heuristic"


def test_keeps_the_previous_summary_and_makes_room_for_the_new_messages():
    previous = "Caroline: I moved from Sweden four years ago.\nMelanie: I have three kids."
    text = LocalSummarizer().respond(ask(render(CHAT[2:6], 60, previous))).text
    lines = text.splitlines()
    assert lines[:2] == previous.splitlines()
    assert len(lines) > 2
    assert len(text.split()) <= 60


def test_a_long_previous_summary_is_trimmed_to_half_the_budget():
    previous = "\n".join(f"Caroline: I visited city number {i} in May." for i in range(30))
    text = LocalSummarizer().respond(ask(render(CHAT, 80, previous))).text
    old = [ln for ln in text.splitlines() if "city number" in ln]
    assert 0 < sum(len(ln.split()) for ln in old) <= 40
    assert "charity race" in text
    assert len(text.split()) <= 80


def test_parses_the_request_format():
    given = parse_input(render(CHAT[:2], 150, kind="long"))
    assert given.kind == "long" and given.word_limit == 150 and given.previous is None
    assert [m.peer_id for m in given.messages] == ["caroline", "melanie"]


def test_reads_back_what_the_service_renders():
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turns = tuple(
        Turn(i, f"m{i}", peer, content, at)
        for i, (peer, content) in enumerate(
            [("caroline", "First line.\nSecond line,\r\n  folded."), ("mel-2", "Hi there!")]
        )
    )
    for previous in (None, "Caroline: I moved from Sweden."):
        job = Job(kind="long", previous=previous, turns=turns, messages_covered=2)
        given = parse_input(render_job(job, 80))
        assert (given.kind, given.word_limit, given.previous) == ("long", 80, previous)
        assert [(m.peer_id, m.content) for m in given.messages] == [
            ("caroline", "First line. Second line, folded."),
            ("mel-2", "Hi there!"),
        ]


def test_the_services_reasoner_serves_the_summarizer_stage_and_refuses_other_text():
    assert local_reasoner().stages == {Stage.SUMMARIZER}
    # The runtime's reasoner has no skill of its own: each service gives it its own.
    assert LocalReasoner().stages == frozenset()
    with pytest.raises(ModelRejected):
        LocalSummarizer().respond(ask("Summarize this please."))


def test_nothing_worth_keeping_still_gives_a_summary():
    text = LocalSummarizer().respond(ask(render([("caroline", "Hi!"), ("melanie", "Hey!")], 50)))
    assert text.text == "Caroline and Melanie exchanged brief messages."


@pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_a_locomo_session_summary_names_both_speakers_and_its_topics():
    conv = next(c for c in json.loads(LOCOMO.read_text()) if c["sample_id"] == "conv-26")
    turns = [(t["speaker"].lower(), t["text"]) for t in conv["conversation"]["session_1"]]
    text = LocalSummarizer().respond(ask(render(turns, 150))).text
    assert "Caroline:" in text and "Melanie:" in text
    assert "support group" in text
    assert len(text.split()) <= 150

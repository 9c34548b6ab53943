"""Which sentences become observations: the filters in front of the rewrite."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo_deriver.contract import BatchMessage
from mnemo_deriver.local import derive

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def facts(content: str, *, target: str = "Caroline", other: str = "Melanie") -> list[str]:
    batch = [
        BatchMessage(0, other, "So, what's new?", T0, is_context=True),
        BatchMessage(1, target, content, T0),
    ]
    return [o.fact for o in derive(target, batch).observations]


@pytest.mark.parametrize(
    "content",
    [
        "Have you ever been to Lisbon? What did you think of my plan?",
        "Hey Mel! Good to see you!",
        "Thanks, Melanie! Thank you so much for helping me.",
        "Congrats on your new job! Good luck!",
        "You'd be a great counselor! Your empathy will help people.",
        "That's great. Love that painting!",
        "Me too! I agree. I know. I'm fine.",
        "I hope you like it. I think you would love it.",
        "Let's meet next week. We can do it! We all have our paths.",
        "Relaxing and expressing ourselves is key.",
        "Here's a pic from when we met up last week!",
        "Keep me posted!",
        "I'm so happy for you!",
        "Been a while since we talked.",
        "It was so powerful.",
        "Ok.",
    ],
    ids=[
        "questions",
        "greetings",
        "thanks",
        "congratulations",
        "about the listener",
        "no self-reference",
        "fillers",
        "listener as subject",
        "suggestions",
        "reflexive only",
        "photo pointer",
        "request",
        "reaction",
        "about the chat",
        "unresolved subject",
        "too short",
    ],
)
def test_non_disclosures_produce_nothing(content):
    assert facts(content) == []


def test_other_speakers_messages_produce_nothing():
    batch = [
        BatchMessage(0, "Melanie", "I ran a charity race last Saturday.", T0),
        BatchMessage(1, "Caroline", "That charity race sounds great!", T0),
    ]

    assert derive("Caroline", batch).observations == []


def test_context_only_messages_produce_nothing_even_from_the_target():
    batch = [BatchMessage(0, "Caroline", "I moved to Lisbon last week.", T0, is_context=True)]

    assert derive("Caroline", batch).observations == []


def test_a_self_disclosure_is_rewritten_dated_and_atomic():
    assert facts("Hey Mel! I went to a LGBTQ support group yesterday and it was so powerful.") == [
        "Caroline went to a LGBTQ support group on 7 May 2023."
    ]
    assert facts("I moved to Lisbon last week, my sister helped.") == [
        "Caroline moved to Lisbon in the week of 1 May 2023, Caroline's sister helped."
    ]


def test_a_clause_about_something_else_still_yields_the_speakers_embedded_clause():
    assert facts("It made me reflect since I started transitioning three years ago.") == [
        "Caroline started transitioning in 2020."
    ]


def test_the_same_fact_twice_is_recorded_once():
    assert facts("I love hiking. I love hiking!") == ["Caroline loves hiking."]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I'm trying to handle the API rate limit for my weather app, can I use a simple "
            "counter to track the calls?",
            ["Caroline is trying to handle the API rate limit for Caroline's weather app."],
        ),
        (
            "I just got back from Lisbon, have you ever been there?",
            ["Caroline just got back from Lisbon."],
        ),
        (
            "I need to plan my tasks, so can you help me create a schedule?",
            ["Caroline needs to plan Caroline's tasks."],
        ),
        (
            "How do I speed it up, considering I'm using Flask 2.3.1?",
            ["Caroline is using Flask 2.3.1."],
        ),
        (
            "I prefer minimal dependencies, how can I keep my app small?",
            ["Caroline prefers minimal dependencies."],
        ),
    ],
    ids=["request", "question", "so-request", "reason-inside-question", "question-no-mark"],
)
def test_a_statement_before_a_question_is_kept_and_the_question_dropped(content, expected):
    assert facts(content) == expected


@pytest.mark.parametrize(
    "content",
    [
        "hmm, what happens if the user makes rapid consecutive calls?",
        "Can you show me an example using a different triangle?",
        "Do I need to check anything in the server logs?",
        "What did you think of my plan?",
    ],
)
def test_a_question_alone_states_nothing(content):
    assert facts(content) == []


def test_relative_clauses_are_not_taken_for_questions():
    assert facts("I met Sam, who is a nurse. I adopted a dog, which is tiny.") == [
        "Caroline met Sam, who is a nurse.",
        "Caroline adopted a dog, which is tiny.",
    ]


def test_the_condition_of_a_question_is_not_a_fact():
    assert facts("Once I have HTTPS set up, how do I renew the certificate?") == []
    assert facts("If I use Redis for the cache, should I expire keys?") == []


def test_a_fact_restated_in_a_later_message_is_that_messages_observation_too():
    # Batched together or apart, each message yields the same; the memory projection merges
    # the two into one observation derived twice.
    batch = [
        BatchMessage(0, "Melanie", "So, what's new?", T0, is_context=True),
        BatchMessage(1, "Caroline", "I love hiking.", T0),
        BatchMessage(2, "Melanie", "Nice! Anything else?", T0, is_context=True),
        BatchMessage(3, "Caroline", "I love hiking.", T0),
    ]
    found = [(o.source_message_index, o.fact) for o in derive("Caroline", batch).observations]
    alone = [
        (o.source_message_index, o.fact)
        for pair in (batch[:2], batch[2:])
        for o in derive("Caroline", pair).observations
    ]
    assert found == alone
    assert [i for i, _ in found] == [1, 3]

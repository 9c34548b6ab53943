"""A message's sentences and clauses, and the cleaning of a clause (the local reasoner's rules)."""

from __future__ import annotations

import pytest

from mnemo_runtime.models.local.sentences import (
    Cleaner,
    is_asking,
    is_subordinate,
    split_clauses,
    split_sentences,
)


def test_sentences_are_verbatim_substrings():
    content = "Hey Mel! I went to Dr. Lee's clinic... It was fine.\nI paid $3.50 for it 😊 New line"

    sentences = split_sentences(content)

    assert sentences == [
        "Hey Mel!",
        "I went to Dr. Lee's clinic...",
        "It was fine.",
        "I paid $3.50 for it 😊",
        "New line",
    ]
    assert all(s in content for s in sentences)


@pytest.mark.parametrize(
    ("sentence", "clauses"),
    [
        (
            "I went to a support group yesterday and it was so powerful.",
            ["I went to a support group yesterday", "it was so powerful."],
        ),
        (
            "I'm keen on counseling - I'd love to support others.",
            ["I'm keen on counseling", "I'd love to support others."],
        ),
        ("My sister and I went hiking.", ["My sister and I went hiking."]),
        (
            "I do yoga - running, reading, or playing violin - daily.",
            ["I do yoga - running, reading, or playing violin - daily."],
        ),
        (
            "They've been there through everything, I've known them for years.",
            ["They've been there through everything", "I've known them for years."],
        ),
        ("When I was young, I lived in Paris.", ["When I was young, I lived in Paris."]),
        ("I got back from a trip, it was fun.", ["I got back from a trip", "it was fun."]),
    ],
)
def test_clause_splitting(sentence, clauses):
    assert split_clauses(sentence) == clauses


def test_cleaner_strips_interjections_and_vocatives():
    cleaner = Cleaner({"Caroline", "Melanie"})

    assert cleaner.clean("Yeah Mel, I love it!") == "I love it"
    assert cleaner.clean("Wow, Melanie! I'm in") == "I'm in"
    assert cleaner.clean("I totally agree, Mel.") == "I totally agree"
    assert cleaner.clean("I met Mark, Caroline, at the fair") == "I met Mark, at the fair"
    assert cleaner.clean("I met Paris, finally.") == "I met Paris, finally"


@pytest.mark.parametrize(
    ("sentence", "clauses"),
    [
        (
            "I'm building a tracker, so can you help me with the schema?",
            ["I'm building a tracker", "can you help me with the schema?"],
        ),
        (
            "I prefer small apps - how do I keep mine small?",
            ["I prefer small apps", "how do I keep mine small?"],
        ),
        ("I met Sam, who is a nurse.", ["I met Sam, who is a nurse."]),
    ],
)
def test_a_question_inside_a_sentence_is_a_clause_of_its_own(sentence, clauses):
    assert split_clauses(sentence) == clauses


def test_what_asks_and_what_hangs_on_the_next_clause():
    assert is_asking("can you help me") and is_asking("hmm, what about the cache?")
    assert is_asking("any tips on indexing") and is_asking("which library fits")
    assert not is_asking("who is a nurse") and not is_asking("I can help")
    assert is_subordinate("Once I have HTTPS set up") and is_subordinate("if I use Redis")
    assert not is_subordinate("I have HTTPS set up")

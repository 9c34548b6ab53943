"""Third-person rewriting: pronouns, verb agreement, dropped subjects."""

from __future__ import annotations

import pytest

from mnemo_runtime.models.local.pronouns import (
    mentions_self,
    normalise_informal,
    supply_subject,
    to_third_person,
)
from mnemo_runtime.models.local.verbs import is_past, third_person


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        ("love", "loves"),
        ("work", "works"),
        ("go", "goes"),
        ("do", "does"),
        ("study", "studies"),
        ("play", "plays"),
        ("watch", "watches"),
        ("miss", "misses"),
        ("fix", "fixes"),
        ("have", "has"),
        ("am", "is"),
        ("don't", "doesn't"),
        ("haven't", "hasn't"),
        ("was", "was"),
        ("went", "went"),
        ("moved", "moved"),
        ("can", "can"),
        ("would", "would"),
        ("can't", "can't"),
        ("read", "read"),
        ("need", "needs"),
        ("Love", "Loves"),
    ],
)
def test_third_person(verb, expected):
    assert third_person(verb) == expected


def test_is_past():
    assert is_past("went") and is_past("moved") and is_past("studied")
    assert not is_past("need") and not is_past("read") and not is_past("hundred")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Lisbon", "Caroline moved to Lisbon"),
        ("I'm keen on counseling", "Caroline is keen on counseling"),
        ("I am tired", "Caroline is tired"),
        ("I was there", "Caroline was there"),
        ("I've known them for years", "Caroline has known them for years"),
        ("I have two cats", "Caroline has two cats"),
        ("I'll call later", "Caroline will call later"),
        ("I'd love to help", "Caroline would love to help"),
        ("I'd been there", "Caroline had been there"),
        ("I do yoga", "Caroline does yoga"),
        ("I don't smoke", "Caroline doesn't smoke"),
        ("I love hiking", "Caroline loves hiking"),
        ("I really love it", "Caroline really loves it"),
        ("I 100% agree with that plan", "Caroline 100% agrees with that plan"),
        ("I go running", "Caroline goes running"),
        ("I study law", "Caroline studies law"),
        ("i work nights", "Caroline works nights"),
        ("my sister lives in Rome", "Caroline's sister lives in Rome"),
        ("my sister and I love hiking", "Caroline's sister and Caroline love hiking"),
        ("It made me happy", "It made Caroline happy"),
        ("I embraced myself", "Caroline embraced themselves"),
        ("that book is mine", "that book is Caroline's"),
        ("We're going camping", "Caroline and others are going camping"),
        ("we went to Paris", "Caroline and others went to Paris"),
        ("they invited us", "they invited Caroline and others"),
        ("our house is old", "Caroline's house is old"),
        ("I’m thrilled", "Caroline is thrilled"),
        ("Gonna continue my edu", "Caroline is going to continue Caroline's edu"),
        ("I wanna travel", "Caroline wants to travel"),
        ("I chose them 'cause they help", "Caroline chose them because they help"),
        ("some me-time each day", "some me-time each day"),
    ],
)
def test_first_person_becomes_the_speaker(text, expected):
    assert to_third_person(text, "Caroline", "Melanie") == expected


def test_possessive_of_a_name_ending_in_s():
    assert to_third_person("my dog", "James", None) == "James' dog"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I'm really proud of you for taking part",
            "Caroline is really proud of Melanie for taking part",
        ),
        (
            "I wanted to tell you about my trip",
            "Caroline wanted to tell Melanie about Caroline's trip",
        ),
        ("I loved your painting", "Caroline loved Melanie's painting"),
    ],
)
def test_the_listener_as_object_is_named(text, expected):
    assert to_third_person(text, "Caroline", "Melanie") == expected


@pytest.mark.parametrize(
    "text",
    ["I think you would love it", "I hope you like it", "I know you're busy", "you and I went"],
)
def test_the_listener_as_subject_rejects_the_clause(text):
    assert to_third_person(text, "Caroline", "Melanie") is None


def test_any_you_is_rejected_without_a_known_listener():
    assert to_third_person("I told you so", "Caroline", None) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Researching adoption agencies", "I'm researching adoption agencies"),
        ("Still following my passion for dance", "I'm still following my passion for dance"),
        ("Went hiking with my dog", "I went hiking with my dog"),
        ("Painting is a great outlet", "Painting is a great outlet"),
        ("Inspiring", "Inspiring"),
        ("My goal is clear", "My goal is clear"),
    ],
)
def test_dropped_subjects_are_supplied(text, expected):
    assert supply_subject(text) == expected


def test_a_dropped_subject_that_is_not_the_speaker_rejects_the_clause():
    assert supply_subject("Really made me think") is None


def test_informal_openings_are_spelled_out():
    assert normalise_informal("Gonna start college") == "I'm going to start college"
    assert normalise_informal("Been busy with work") == "I've been busy with work"
    assert normalise_informal("Been a while since then") == "Been a while since then"
    assert normalise_informal("Gonna be awesome") == "going to be awesome"


def test_mentions_self():
    assert mentions_self("my dog is old")
    assert mentions_self("Gonna move")
    assert not mentions_self("expressing ourselves is key")
    assert not mentions_self("the US is big")

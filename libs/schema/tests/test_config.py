"""The configuration in force: levels merged field by field, and what each stage reads of it."""

from __future__ import annotations

from mnemo_schema.config import (
    MessageConfiguration,
    WorkspaceConfiguration,
    creates_card,
    dreams_enabled,
    effective,
    instructions,
    reasoning_enabled,
    uses_card,
)


def cfg(**fields: object) -> WorkspaceConfiguration:
    return WorkspaceConfiguration.model_validate(fields)


def test_a_more_specific_level_overrides_only_the_fields_it_sets():
    workspace = cfg(
        custom_instructions="Be terse.",
        reasoning={"enabled": False, "custom_instructions": "A"},
        dream={"enabled": True},
    )
    session = cfg(reasoning={"enabled": True})
    got = effective(workspace, session)
    assert reasoning_enabled(got) and dreams_enabled(got)
    assert instructions(got, "deriver") == "Be terse.\n\nA"
    message = MessageConfiguration.model_validate({"reasoning": {"enabled": False}})
    off = effective(workspace, session, message)
    assert not reasoning_enabled(off) and not dreams_enabled(off)
    assert instructions(off, "deriver") == "Be terse.\n\nA"


def test_defaults_and_switches():
    none = effective()
    assert reasoning_enabled(none) and dreams_enabled(none) and uses_card(none)
    assert creates_card(none) and instructions(none, "dialectic") is None
    assert not dreams_enabled(cfg(dream={"enabled": False}))
    card = cfg(peer_card={"use": False, "create": False})
    assert not uses_card(card) and not creates_card(card)


def test_each_stage_reads_the_general_and_its_own_instructions():
    c = cfg(
        custom_instructions="  General. ",
        summary={"custom_instructions": "S"},
        dialectic={"custom_instructions": "D"},
        dream={"custom_instructions": "R"},
        peer_card={"custom_instructions": "C"},
    )
    assert instructions(c, "summarizer") == "General.\n\nS"
    assert instructions(c, "dialectic") == "General.\n\nD"
    assert instructions(c, "dreamer") == "General.\n\nR"
    assert instructions(c, "peer_card") == "General.\n\nC"
    assert instructions(c, "deriver") == "General."

"""The representation's write-time rules."""

from __future__ import annotations

from mnemo_schema.grounding import content_key, salient_tokens, span_in_message


def test_span_grounding_ignores_case_space_and_typography():
    msg = "I went to a LGBTQ support group yesterday and it was so powerful."
    assert span_in_message("went to a  LGBTQ support group", msg)
    assert span_in_message("It Was So Powerful.", msg)
    assert span_in_message("I\u2019m", "I'm here")
    assert not span_in_message("went to a book club", msg)
    assert not span_in_message("   ", msg)


def test_exact_duplicates_share_a_key():
    assert content_key("Bob likes tea.") == content_key("  bob likes   TEA ")
    assert content_key("Bob likes tea.") != content_key("Bob likes coffee.")


def test_salient_tokens_tell_apart_facts_that_embed_alike():
    a = salient_tokens("Bob's sister is Anna.")
    b = salient_tokens("Bob's sister is Maria.")
    assert a != b
    assert salient_tokens("Caroline moved on 7 May 2023.") == salient_tokens(
        "Caroline moved, 7 May 2023"
    )
    assert salient_tokens("She has 2 dogs") != salient_tokens("She has 3 dogs")

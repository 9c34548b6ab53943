"""Uploaded files to message texts: types, decoding, splitting as the reference server does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo_gateway.files import content_type_of, extract_text, split_text
from mnemo_schema.errors import Refusal


@given(st.text(alphabet=st.sampled_from("ab .\n"), max_size=400), st.integers(5, 60))
def test_parts_fit_and_join_back_to_the_text(text: str, limit: int) -> None:
    parts = split_text(text, limit)
    assert "".join(parts) == text
    assert all(len(p) <= limit for p in parts)


def test_parts_break_at_the_strongest_break_inside_the_limit() -> None:
    text = "one two.\n\nthree four. five six seven"
    assert split_text(text, 16) == ["one two.\n\n", "three four. ", "five six seven"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]


def test_types_are_taken_as_declared_or_from_the_name() -> None:
    assert content_type_of("a.md", "application/octet-stream") == "text/plain"
    assert content_type_of("a.pdf", None) == "application/pdf"
    assert content_type_of("a.bin", "text/markdown; charset=utf-8") == "text/markdown"


@pytest.mark.parametrize(
    ("data", "kind", "status"),
    [
        (b"\xff\xfe\xfa", "text/plain", 422),  # a UTF-16 mark, then half a code unit
        (b"caf\xe9", "text/plain", 422),  # Latin-1, not UTF-8
        (b"{", "application/json", 422),
        (b"%PDF-1.4 nothing else", "application/pdf", 422),
        (b"PK\x03\x04", "application/zip", 415),
    ],
)
def test_what_is_not_text_is_refused_naming_the_file(data: bytes, kind: str, status: int) -> None:
    with pytest.raises(Refusal) as err:
        extract_text(data, kind)
    assert (err.value.status, err.value.field) == (status, "file")


def test_text_is_decoded_as_sent() -> None:
    assert extract_text("\ufeffnaïve".encode(), "text/plain") == "naïve"
    assert extract_text("naïve".encode("utf-16"), "text/plain") == "naïve"
    assert extract_text(b'{"a": "\\u00e9"}', "application/json") == '{"a": "é"}'

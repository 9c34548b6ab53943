"""The stages' progress notes: what a stage sends is what the drain watcher reads."""

from __future__ import annotations

from mnemo_schema.progress import decode_note, encode_note


def test_a_note_names_each_session_once_in_order():
    assert decode_note(encode_note(["s2", "s1", "s2"])) == ["s1", "s2"]
    assert decode_note(encode_note([])) == []


def test_an_unreadable_note_names_no_session():
    for data in (None, b"", b"not json", b'{"sessions": "s1"}', b"[1, 2]"):
        assert decode_note(data) == []

"""The rest of the SDK 2.7 surface, through the official client: session clone, file upload,
workspace chat (plain and streamed) and structured answers (``response_format``)."""

from __future__ import annotations

import json

import httpx
import pytest
from honcho import Honcho
from honcho.http.exceptions import HonchoError
from pydantic import BaseModel

from .conftest import admin_headers

pytestmark = pytest.mark.integration


def _pdf(text: str) -> bytes:
    """A one-page PDF holding ``text``, written out by hand (no PDF library makes the input)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for i, obj in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1,
        xref,
    )


def test_a_session_is_cloned_whole_or_up_to_a_message(mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    alice, bob = h.peer("alice"), h.peer("bob")
    session = h.session("original", metadata={"topic": "trips"})
    session.add_peers([alice, bob])
    posted = session.add_messages(
        [alice.message(f"message {i}", metadata={"i": i}) for i in range(5)]
        + [bob.message("the last one")]
    )
    whole = session.clone()
    assert whole.id != session.id and whole.metadata == {"topic": "trips"}
    copied = list(whole.messages())
    assert [(m.peer_id, m.content, m.metadata) for m in copied] == [
        (m.peer_id, m.content, m.metadata) for m in posted
    ]
    assert [m.created_at for m in copied] == [m.created_at for m in posted]
    assert not {m.id for m in copied} & {m.id for m in posted}
    assert {p.id for p in whole.peers()} == {"alice", "bob"}

    cut = session.clone(message_id=posted[2].id)
    assert [m.content for m in cut.messages()] == ["message 0", "message 1", "message 2"]
    # The original is untouched.
    assert [m.id for m in session.messages()] == [m.id for m in posted]

    unknown = httpx.post(
        f"{mnemo.url}/v3/workspaces/{workspace}/sessions/original/clone",
        params={"message_id": "not-in-it"},
        headers=admin_headers(),
    )
    assert unknown.status_code == 404 and unknown.json()["field"] == "message_id"


def test_a_clone_keeps_numbers_postgres_writes_back_without_exponent(mnemo, workspace):
    """Postgres returns a jsonb 1e20 as 21 digits: the clone's events carry floats as floats,
    so its session is created (not refused by the projections) and its metadata is the
    original's, which can be sent back as it was read."""
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    alice = h.peer("alice")
    meta = {"big": 1e20, "nested": [False, None, [-1.7976931348623155e308]], "n": 2**63 - 1}
    session = h.session("numbers", metadata=meta)
    session.add_peers([alice])
    session.add_messages([alice.message("numbers", metadata={"at": 3e40})])
    whole = session.clone()
    assert whole.metadata == meta and isinstance(whole.metadata["big"], float)
    assert [m.metadata for m in whole.messages()] == [{"at": 3e40}]
    # The context's messages (read as JSON text) and a search's too.
    assert [m.metadata for m in whole.context(tokens=500).messages] == [{"at": 3e40}]
    assert [m.metadata for m in session.search("numbers")] == [{"at": 3e40}]
    read = h.session("numbers").get_metadata()
    assert read == meta
    h.session("numbers").set_metadata(read)  # what was read is accepted again


def test_files_become_messages_split_as_the_reference_server_splits_them(mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    alice = h.peer("alice")
    session = h.session("docs")
    note = "# Notes\n\nI work as a nurse at the children's hospital.\n"
    (md,) = session.upload_file(("notes.md", note.encode(), "text/markdown"), alice)
    assert md.content == note and md.peer_id == "alice"

    (pdf,) = session.upload_file(
        ("cv.pdf", _pdf("I moved to Lisbon last week."), "application/pdf"),
        alice,
        metadata={"source": "cv"},
    )
    assert pdf.content == "[Page 1]\nI moved to Lisbon last week." and pdf.metadata == {
        "source": "cv"
    }

    # 120,000 characters in paragraphs: three messages, each cut at a paragraph break.
    paragraph = "word " * 199 + "end.\n\n"
    big = paragraph * (120_000 // len(paragraph))
    parts = session.upload_file(("big.txt", big.encode(), "text/plain"), "alice")
    assert len(parts) == 3 and "".join(m.content for m in parts) == big
    assert all(len(m.content) <= 50_000 and m.content.endswith("\n\n") for m in parts[:-1])
    listed = [m.content for m in session.messages()]
    assert listed == [note, pdf.content, *(m.content for m in parts)]

    url = f"{mnemo.url}/v3/workspaces/{workspace}/sessions/docs/messages/upload"
    for files, data, status, field in [
        ({"file": ("x.bin", b"\x00\x01", "application/zip")}, {"peer_id": "alice"}, 415, "file"),
        ({"file": ("x.txt", b"\xff\xfe\xfa", "text/plain")}, {"peer_id": "alice"}, 422, "file"),
        ({"file": ("x.txt", b"a\x00b", "text/plain")}, {"peer_id": "alice"}, 422, "file"),
        (
            {"file": ("x.pdf", b"%PDF-1.4 broken", "application/pdf")},
            {"peer_id": "alice"},
            422,
            "file",
        ),
        (
            {"file": ("x.txt", b"hello", "text/plain")},
            {"peer_id": "alice", "metadata": "{"},
            422,
            "metadata",
        ),
    ]:
        r = httpx.post(url, files=files, data=data, headers=admin_headers())
        assert (r.status_code, r.json().get("field")) == (status, field), r.text
    assert len(list(session.messages())) == 5  # nothing of a refused upload was written


class Job(BaseModel):
    occupation: str
    known: bool


def test_workspace_chat_and_structured_answers(settle, mnemo, workspace):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=60)
    alice, bob = h.peer("alice"), h.peer("bob")
    session = h.session("s1")
    session.add_messages(
        [
            alice.message("I work as a nurse at the children's hospital."),
            bob.message("I drive an old red Volvo to the harbour every morning."),
        ]
    )
    settle(h)

    # A question in other words than the observation's.
    job = alice.chat("What is Alice's job?", reasoning_level="minimal")
    assert job and "nurse" in job.lower()

    # Across the workspace: a peer's fact found without naming a peer to ask.
    answer = h.chat("Who drives a Volvo?", include_evidence=True)
    assert answer.content and "Volvo" in answer.content
    streamed = h.chat_stream("Who drives a Volvo?")
    assert "Volvo" in "".join(streamed)

    parsed = alice.chat("What is Alice's job?", response_format=Job)
    assert isinstance(parsed, Job) and parsed.known and "nurse" in parsed.occupation
    raw = h.chat("Who drives a Volvo?", response_format=Job.model_json_schema())
    assert Job.model_validate_json(raw)

    url = f"{mnemo.url}/v3/workspaces/{workspace}/peers/alice/chat"
    for schema in (
        {"type": "string"},
        {"type": "object", "properties": {"a": {"type": 7}}},
        {"type": "object", "$ref": "https://example.com/s.json"},
    ):
        r = httpx.post(
            url, json={"query": "job?", "response_format": schema}, headers=admin_headers()
        )
        assert r.status_code == 422 and r.json()["field"] == "response_format", r.text
    with pytest.raises(HonchoError):
        h.chat("anything?", response_format={"type": "array"})
    assert json.loads(raw)

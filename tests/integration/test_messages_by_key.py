"""Messages read by key from the retrieval engine (``MessagesQuery``): only those that fed the
representation asked (or any of the workspace's), within the sessions asked, oldest first; a
text searched for as it is written, its wildcards too. And the dialectic's in-memory reader (the
fake its unit tests run on) reads messages and observations by key as its engine-backed reader
does."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from honcho import Honcho
from honcho.api_types import SessionPeerConfig
from pydantic import ValidationError

from mnemo_dialectic.adapters.fake import FakeReader
from mnemo_dialectic.adapters.reader import EngineScopeReader
from mnemo_dialectic.domain import View
from mnemo_schema.retrieval import MessagesQuery

BOTH = [("ann", "ann"), ("ben", "ann")]


@dataclass
class Conversation:
    """ann and ben in session one (ben observing others), ann alone in session two; m5 came
    last, in session one."""

    m1: Any
    m2: Any
    m3: Any
    m4: Any
    m5: Any

    def routes(self) -> dict[str, list[tuple[str, str]]]:
        """Where each message went (ingest's routing): the sender's own representation, and
        each member observing others in its session."""
        m = self
        return {m.m1.id: BOTH, m.m2.id: [("ben", "ben")], m.m3.id: BOTH, m.m4.id: BOTH[:1]} | {
            m.m5.id: BOTH
        }


def converse(url: str, workspace: str, settle: Any) -> Conversation:
    h = Honcho(base_url=url, workspace_id=workspace, max_retries=0, timeout=30)
    ann, ben = h.peer("ann"), h.peer("ben")
    one = h.session("one", peers=[ann, (ben, SessionPeerConfig(observe_others=True))])
    m1, m2, m3 = one.add_messages(
        [
            ann.message("I paint 100% of weekends_off."),
            ben.message("Nice, what colours?"),
            ann.message("Mostly blue and green."),
        ]
    )
    (m4,) = h.session("two", peers=[ann]).add_messages([ann.message("I moved to Lisbon.")])
    (m5,) = one.add_messages([ann.message("Green, I am 100% sure.")])
    settle(h)
    return Conversation(m1, m2, m3, m4, m5)


async def test_messages_by_key(settle, mnemo, workspace, retrieval):
    c = converse(mnemo.url, workspace, settle)
    m1, m2, m3, m4, m5 = c.m1, c.m2, c.m3, c.m4, c.m5

    async def ids(**query: Any) -> list[str]:
        found = await retrieval.messages(workspace, MessagesQuery(**query))
        return [m.id for m in found.messages]

    ann_ann = {"observer": "ann", "observed": "ann"}
    ben_ann = {"observer": "ben", "observed": "ann"}
    assert await ids(ids=[m4.id, m1.id, "nope"], **ann_ann) == [m1.id, m4.id]
    # ben saw only what ann said where ben was observing, and never his own words.
    assert await ids(ids=[m1.id, m2.id, m4.id], **ben_ann) == [m1.id]
    assert await ids(ids=[m1.id, m2.id, m4.id, m5.id], sessions=["one"]) == [
        m1.id,
        m2.id,
        m5.id,
    ]
    for text in ("0% of WEEKENDS_o", "_"):
        assert await ids(containing=text) == [m1.id], text
    assert await ids(containing="100%") == [m1.id, m5.id]
    assert await ids(containing="i", limit=2) == [m1.id, m2.id]
    assert m3.created_at < m4.created_at  # posted after
    assert await ids(created_from=m1.created_at, created_before=m4.created_at) == [
        m1.id,
        m2.id,
        m3.id,
    ]
    later = m4.created_at + timedelta(microseconds=1)
    assert await ids(created_from=m4.created_at, created_before=later) == [m4.id]
    assert await ids(around=m2.id, window=1) == [m1.id, m2.id, m3.id]
    assert await ids(around=m2.id, window=0) == [m2.id]
    assert await ids(around=m2.id, window=1, **ben_ann) == [m1.id, m3.id]
    found = await retrieval.messages(workspace, MessagesQuery(ids=[m4.id]))
    (got,) = found.messages
    assert (got.session_id, got.peer_id, got.content) == ("two", "ann", "I moved to Lisbon.")

    for bad in (
        {"ids": ["a"], "containing": "x"},
        {"created_from": m1.created_at},
        {},
        {"observer": "ann", "ids": ["a"]},
    ):
        with pytest.raises(ValidationError):
            MessagesQuery(**bad)


async def _ask(reader: Any, name: str, view: View, sessions: Any, m: dict[str, Any]) -> list[str]:
    """One of the contract's questions, asked of ``reader``; the ids it answers."""
    c = m["conversation"]
    if name == "messages":
        ids = [c.m5.id, c.m4.id, c.m2.id, c.m1.id, "nope"]
        found = await reader.messages(view, ids, sessions=sessions)
    elif name.startswith("grep "):
        text, limit = name.split()[1], 1 if name.endswith("GREEN") else 3
        found = await reader.grep(view, text, limit=limit, sessions=sessions)
    elif name.startswith("range"):
        end = c.m5.created_at + timedelta(seconds=1) if name == "range, 2" else c.m5.created_at
        limit = 2 if name == "range, 2" else 10
        found = await reader.in_range(view, c.m1.created_at, end, limit=limit, sessions=sessions)
    else:
        _, anchor, window = name.split()
        found = await reader.around(view, m[anchor], int(window), sessions=sessions)
    return [x.id for x in found]


async def test_the_fake_reader_reads_as_the_engine_does(
    settle, mnemo, workspace, database_url, retrieval
):
    c = converse(mnemo.url, workspace, settle)
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    ann = h.peer("ann")
    ann.conclusions_of(ann).create([{"content": "Ann likes painting."}])
    routes = c.routes()
    real = EngineScopeReader(retrieval)
    everything = await real.messages(View(workspace), list(routes))
    assert sorted(m.id for m in everything) == sorted(routes)
    fake = FakeReader()
    for msg in everything:
        fake.add_msg(msg, *routes[msg.id])
    by_name: dict[str, Any] = {"conversation": c}
    by_name |= {
        n: msg
        for msg in everything
        for n in ("m1", "m2", "m3", "m4", "m5")
        if getattr(c, n).id == msg.id
    }
    views = [View(workspace, o, d) for o, d in (("ann", "ann"), ("ben", "ann"), ("ben", "ben"))]
    questions = ["messages", "grep 100%", "grep GREEN", "grep i", "range", "range, 2"]
    questions += ["around m2 1", "around m3 0", "around m1 5"]
    answered = 0
    for view in [*views, View(workspace)]:
        for sessions in (None, frozenset({"one"}), frozenset({"two"})):
            for name in questions:
                want = await _ask(real, name, view, sessions, by_name)
                got = await _ask(fake, name, view, sessions, by_name)
                assert got == want, (name, view, sessions)
                answered += bool(want)
    assert answered > 40  # most questions find something in most views

    # Observations by id: what the deriver formed from the conversation, and a conclusion
    # stated through the API (resting on no session).
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT id FROM observations WHERE workspace = %s ORDER BY seq", (workspace,)
        ).fetchall()
    ids = [r[0] for r in rows]
    formed = await real.observations(View(workspace), ids)
    assert [o.id for o in formed] == ids and {o.observer for o in formed} == {"ann", "ben"}
    for o in formed:
        fake.add_obs(workspace, o)
    asked = [*reversed(ids), "nope", ids[0]]
    found = 0
    for view in [*views, View(workspace)]:
        for sessions in (None, frozenset({"one"}), frozenset({"two"})):
            want = [o.id for o in await real.observations(view, asked, sessions=sessions)]
            got = [o.id for o in await fake.observations(view, asked, sessions=sessions)]
            assert got == want, (view, sessions)
            found += len(want)
    assert found > len(ids)

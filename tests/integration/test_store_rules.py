"""The representation's invariants: the grounding rule as a writer runs it before publishing (the
dreamer's check), and the observations read by key from the retrieval engine (``StoredQuery``),
always inside the representation asked."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from honcho import Honcho
from honcho.api_types import SessionPeerConfig
from pydantic import ValidationError

from mnemo_dreamer.adapters.memory import store_check
from mnemo_schema.observations import ObservationWritten
from mnemo_schema.retrieval import StoredQuery


async def test_store_write_rules(settle, mnemo, workspace, database_url, retrieval):
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    ann, ben = h.peer("ann"), h.peer("ben")
    h.peer("cal")
    s = h.session("s", peers=[ann, (ben, SessionPeerConfig(observe_others=True))])
    (msg,) = s.add_messages([ann.message("I teach chemistry at the high school.")])
    settle(h)
    with psycopg.connect(database_url) as conn:
        (existing,) = conn.execute(
            "SELECT id FROM observations WHERE workspace = %s AND observer = 'ann'", (workspace,)
        ).fetchone()

    def obs(oid: str, **kw: object) -> ObservationWritten:
        base: dict[str, object] = {
            "workspace": workspace,
            "observation_id": oid,
            "observer": "ann",
            "observed": "ann",
            "content": "Ann teaches chemistry.",
        }
        return ObservationWritten(**{**base, **kw})

    verdicts = await store_check(
        retrieval,
        [
            obs("ok-explicit", source_message_ids=[msg.id], source_span="I teach chemistry"),
            obs("bad-span", source_message_ids=[msg.id], source_span="I teach physics"),
            obs("no-span", source_message_ids=[msg.id]),
            obs("unknown-msg", source_message_ids=["nope"], source_span="I teach"),
            # cal never witnessed the message: it does not feed (cal, ann)
            obs(
                "not-witnessed",
                observer="cal",
                source_message_ids=[msg.id],
                source_span="I teach",
            ),
            obs("uncited", level="deductive", content="Ann has a degree."),
            obs(
                "cites-missing",
                level="deductive",
                content="Ann has a degree.",
                premise_ids=["ghost"],
            ),
            # a premise from another representation does not count
            obs(
                "cites-other-rep",
                observer="ben",
                level="deductive",
                content="Ann has a degree.",
                premise_ids=[existing],
            ),
            obs(
                "cites-existing",
                level="deductive",
                content="Ann has a degree.",
                premise_ids=[existing],
            ),
            obs(
                "cites-earlier",
                level="inductive",
                content="Ann likes science.",
                premise_ids=["ok-explicit", existing],
            ),
        ],
    )
    accepted = [v is None for v in verdicts]
    assert accepted == [True, False, False, False, False, False, False, False, True, True], [
        str(v) for v in verdicts
    ]
    assert "not in the cited message" in str(verdicts[1])
    assert "does not feed the representation (cal, ann)" in str(verdicts[4])
    assert "must cite" in str(verdicts[5])
    assert "do not exist in the representation (ben, ann)" in str(verdicts[7])

    # Another representation's observation is not found, by id or as a premise.
    other = await retrieval.stored_ids(workspace, [existing], observer="ben", observed="ann")
    assert other.observations == [] and other.resolved == {}
    with pytest.raises(ValidationError, match="representation"):
        StoredQuery(newest=5)


async def test_one_check_may_hold_several_workspaces(mnemo, retrieval):
    """The memory projection checks a batch of the log, and a batch mixes workspaces."""
    sent = {}
    for ws, text in (
        ("first", "I teach chemistry at the high school."),
        ("second", "I fly planes."),
    ):
        ws_id = f"{ws}-{uuid.uuid4().hex[:8]}"
        h = Honcho(base_url=mnemo.url, workspace_id=ws_id, max_retries=0, timeout=30)
        ann = h.peer("ann")
        (msg,) = h.session("s", peers=[ann]).add_messages([ann.message(text)])
        sent[ws] = (ws_id, msg.id)

    def obs(ws: str, oid: str, span: str, **kw: object) -> ObservationWritten:
        workspace, message_id = sent[ws]
        base: dict[str, object] = {
            "workspace": workspace,
            "observation_id": oid,
            "observer": "ann",
            "observed": "ann",
            "content": "Ann said so.",
            "source_message_ids": [message_id],
            "source_span": span,
        }
        return ObservationWritten(**{**base, **kw})

    verdicts = await store_check(
        retrieval,
        [
            obs("second", "flies", "I fly planes"),
            obs("first", "teaches", "I teach chemistry"),
            # a message of the other workspace is no source here, whatever its id
            obs("first", "borrowed", "I fly", source_message_ids=[sent["second"][1]]),
            # nor is an observation accepted earlier in the batch for the other workspace
            obs("first", "rests", "", level="deductive", premise_ids=["flies"]),
            obs("second", "rests-here", "", level="deductive", premise_ids=["flies"]),
        ],
    )
    assert [v is None for v in verdicts] == [True, True, False, False, True], [
        str(v) for v in verdicts
    ]
    assert "does not exist" in str(verdicts[2])
    assert "do not exist in the representation" in str(verdicts[3])


async def test_observations_read_by_key(settle, mnemo, workspace, database_url, retrieval):
    """By id in the order asked (an alias as the observation it was merged into, an id asked
    twice twice), within the representation, levels and sessions asked; the newest by seq;
    nothing deleted."""
    h = Honcho(base_url=mnemo.url, workspace_id=workspace, max_retries=0, timeout=30)
    ann = h.peer("ann")
    h.session("one", peers=[ann]).add_messages([ann.message("I teach chemistry.")])
    h.session("two", peers=[ann]).add_messages([ann.message("I keep two cats.")])
    made = ann.conclusions_of(ann).create([{"content": "Ann reads a lot."}])
    settle(h)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT id, session_id, level FROM observations WHERE workspace = %s"
            " AND observer = 'ann' AND observed = 'ann' AND deleted_at IS NULL ORDER BY seq DESC",
            (workspace,),
        ).fetchall()
        by_session = {sid: oid for oid, sid, _ in rows if sid is not None}
        one, two = by_session["one"], by_session["two"]
        conn.execute(
            "INSERT INTO observation_aliases (workspace, alias_id, canonical_id)"
            " VALUES (%s, 'merged-away', %s)",
            (workspace, one),
        )
    ann.conclusions_of(ann).delete(made[0].id)
    newest = [oid for oid, _, _ in rows if oid != made[0].id]

    key = {"observer": "ann", "observed": "ann"}
    got = await retrieval.stored_ids(
        workspace, [two, "nope", "merged-away", two, made[0].id], **key
    )
    assert [o.id for o in got.observations] == [two, one, two]
    assert got.resolved == {two: two, "merged-away": one}
    assert {o.observer for o in got.observations} == {"ann"}
    assert got.observations[0].source_sessions == ["two"]

    got = await retrieval.stored_ids(workspace, [one, two], sessions=["one"], **key)
    assert [o.id for o in got.observations] == [one]
    # Without a representation, by id across the workspace (the workspace-wide chat).
    got = await retrieval.stored_ids(workspace, [one, two])
    assert [o.id for o in got.observations] == [one, two]
    got = await retrieval.stored_ids(workspace, [one], observer="ben", observed="ann")
    assert got.observations == []

    got = await retrieval.stored(workspace, StoredQuery(newest=10, **key))
    assert [o.id for o in got.observations] == newest
    got = await retrieval.stored(workspace, StoredQuery(newest=1, **key))
    assert [o.id for o in got.observations] == newest[:1]
    got = await retrieval.stored(workspace, StoredQuery(newest=10, levels=["explicit"], **key))
    explicit = [oid for oid, _, level in rows if level == "explicit" and oid != made[0].id]
    assert explicit and [o.id for o in got.observations] == explicit

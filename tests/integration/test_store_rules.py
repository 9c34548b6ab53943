"""The representation store refuses what would break the representation's invariants: the
grounding rule as a writer runs it before publishing (the dreamer's check), and the store's keyed
reads."""

from __future__ import annotations

import uuid

import psycopg
from honcho import Honcho
from honcho.api_types import SessionPeerConfig

from mnemo_dreamer.adapters.memory import store_check
from mnemo_runtime.memory.store import RepresentationStore
from mnemo_runtime.pg import open_pool
from mnemo_runtime.vectors import MissingScopeError, Scope
from mnemo_schema.observations import ObservationWritten


async def test_store_write_rules(settle, mnemo, workspace, database_url):
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

    pool = await open_pool(database_url)
    try:
        store = RepresentationStore(pool)
        verdicts = await store_check(
            pool,
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

        try:
            await store.recent("not a scope")  # type: ignore[arg-type]
        except MissingScopeError:
            pass
        else:
            raise AssertionError("a query without the (observer, observed) key must be refused")
        assert await store.get(Scope(workspace, "ben", "ann"), [existing]) == []
    finally:
        await pool.close()


async def test_one_check_may_hold_several_workspaces(mnemo, database_url):
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

    pool = await open_pool(database_url)
    try:
        verdicts = await store_check(
            pool,
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
    finally:
        await pool.close()
    assert [v is None for v in verdicts] == [True, True, False, False, True], [
        str(v) for v in verdicts
    ]
    assert "does not exist" in str(verdicts[2])
    assert "do not exist in the representation" in str(verdicts[3])

"""Flush rules: token target, idle debounce, maximum age."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo_deriver.batching import Batcher, Item, RepKey
from mnemo_schema.events import MessagePosted, Representation

KEY = RepKey("w", "a", "a")


def msg(i: int, tokens: int = 10, peer: str = "a") -> MessagePosted:
    return MessagePosted(
        workspace="w",
        session_id="s",
        message_id=f"m{i}",
        peer_id=peer,
        content=f"text {i}",
        metadata={},
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        token_count=tokens,
        representations=[Representation(observer=peer, observed=peer)],
    )


def test_token_target_flushes_at_once():
    b = Batcher(token_target=25, idle_s=1, max_age_s=5)
    assert b.add(KEY, Item(1, msg(1)), now=0) == []
    assert b.add(KEY, Item(2, msg(2)), now=0.1) == []
    (full,) = b.add(KEY, Item(3, msg(3)), now=0.2)
    assert [i.seq for i in full.items] == [1, 2, 3]
    assert len(b) == 0


def test_context_tokens_count_toward_the_target():
    b = Batcher(token_target=25, idle_s=1, max_age_s=5)
    assert len(b.add(KEY, Item(1, msg(1), context=msg(0, tokens=20, peer="x")), now=0)) == 1


def test_idle_debounce_flushes_a_quiet_batch():
    b = Batcher(token_target=1000, idle_s=0.25, max_age_s=5)
    b.add(KEY, Item(1, msg(1)), now=0)
    assert b.due(now=0.2) == []
    b.add(KEY, Item(2, msg(2)), now=0.2)  # activity postpones the flush
    assert b.due(now=0.4) == []
    (batch,) = b.due(now=0.46)
    assert [i.seq for i in batch.items] == [1, 2]


def test_max_age_flushes_a_busy_batch():
    b = Batcher(token_target=10_000, idle_s=0.25, max_age_s=1.0)
    t = 0.0
    while t < 0.95:
        b.add(KEY, Item(int(t * 100), msg(int(t * 100))), now=t)
        assert b.due(now=t) == []
        t += 0.1
    assert len(b.due(now=1.0)) == 1


def test_representations_batch_separately():
    b = Batcher(token_target=15, idle_s=1, max_age_s=5)
    other = RepKey("w", "b", "a")
    assert b.add(KEY, Item(1, msg(1)), now=0) == []
    assert b.add(other, Item(1, msg(1)), now=0) == []
    assert len(b) == 2
    assert len(b.add(KEY, Item(2, msg(2)), now=0)) == 1
    assert len(b.drain()) == 1


def test_other_instructions_close_the_open_batch_and_keep_the_line_in_order():
    b = Batcher(token_target=1000, idle_s=1, max_age_s=5)
    told = RepKey("w", "a", "a", instructions="Only food.")
    assert told == KEY  # one line per representation, whatever the instructions
    assert b.add(told, Item(1, msg(1)), now=0) == []
    (first,) = b.add(KEY, Item(2, msg(2)), now=0)
    assert [i.seq for i in first.items] == [1] and first.key.instructions == "Only food."
    assert b.add(KEY, Item(3, msg(3)), now=0) == []
    (second,) = b.drain()
    assert [i.seq for i in second.items] == [2, 3] and second.key.instructions is None

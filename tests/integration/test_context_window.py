"""PostgresReads.window_page takes exactly what the packing rule takes, in one round trip (and
``opening`` reads it with the session's summaries and a card, in one).

The rule (mnemo_context.domain.MessageWindow): newest first, while the tokens fit; the first
message that does not fit stops the taking. The handlers' unit tests run an in-memory Reads
built on that same rule, so both are held to it here.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from itertools import takewhile
from typing import Any

from mnemo_context.adapters.postgres import PostgresReads
from mnemo_context.domain import MessageWindow
from mnemo_runtime.pg import open_pool

START = datetime(2026, 1, 1, tzinfo=UTC)


def expected(
    sizes: dict[int, int], after: int, before: int | None, limit: int, budget: int
) -> tuple[list[int], int]:
    page = [s for s in sorted(sizes, reverse=True) if s > after and (before is None or s < before)]
    page = page[:limit]
    window = MessageWindow(budget)
    taken = list(takewhile(lambda s: window.offer(sizes[s]), page))
    return sorted(taken), len(page)


async def load_messages(conn: Any, rows: list[tuple[Any, ...]]) -> None:
    """``rows`` of (workspace, id, session, seq, peer, content, tokens, at)."""
    async with conn.cursor().copy(
        "COPY messages (workspace, id, session_id, seq, peer_id, content, token_count,"
        " created_at) FROM STDIN"
    ) as copy:
        for row in rows:
            await copy.write_row(row)


async def test_window_page_follows_the_packing_rule(fresh_database, workspace):
    rng = random.Random(7)
    # Sizes from 0 to 60 tokens, with gaps in seq (deleted or other sessions' messages).
    seqs = sorted(rng.sample(range(1, 400), 250))
    sizes = {s: rng.choice([0, 1, 3, 8, 20, 60]) for s in seqs}
    pool = await open_pool(fresh_database)
    try:
        async with pool.connection() as conn:
            rows = [
                (workspace, f"m{s}", "s", s, "p", f"#{s}", sizes[s], START + timedelta(seconds=s))
                for s in seqs
            ]
            # The same seqs in another session: never part of this session's window.
            rows += [(workspace, f"o{s}", "other", s, "p", "x", 1, START) for s in seqs]
            await load_messages(conn, rows)
        reads = PostgresReads(pool)
        cases = [(0, None, 1000, 100_000), (0, None, 10, 100_000), (0, None, 1000, 0)]
        cases += [(after, None, 50, 500) for after in (0, 150, 398, 399)]
        for _ in range(40):
            after = rng.choice([0, *seqs[:100]])
            before = rng.choice([None, *seqs[100:]])
            cases.append((after, before, rng.randint(1, 120), rng.randint(0, 900)))
        # Without summaries, the summarised bound is the session's start.
        unbounded = await reads.window_page(workspace, "s", None, None, 80, 600)
        assert unbounded.after_seq == 0
        assert (
            unbounded.messages
            == (await reads.window_page(workspace, "s", 0, None, 80, 600)).messages
        )
        for after, before, limit, budget in cases:
            got = await reads.window_page(workspace, "s", after, before, limit, budget)
            assert got.after_seq == after
            taken, read = expected(sizes, after, before, limit, budget)
            case = (after, before, limit, budget)
            assert [m.id for m in got.messages] == [f"m{s}" for s in taken], case
            assert got.read == read, case
            assert got.tokens == sum(sizes[s] for s in taken), case
            assert got.first_seq == (taken[0] if taken else None), case
            assert got.seqs == taken and got.budget == budget, case
            assert all(
                m.session_id == "s" and m.content == m.id.replace("m", "#") for m in got.messages
            )
    finally:
        await pool.close()


async def test_window_page_can_start_after_the_newest_summaries(fresh_database, workspace):
    pool = await open_pool(fresh_database)
    try:
        async with pool.connection() as conn:
            await load_messages(
                conn, [(workspace, f"m{s}", "s", s, "p", f"#{s}", 2, START) for s in range(1, 101)]
            )
            # History: only each type's newest summary counts; the older of those two bounds.
            for kind, seq, covers in (
                ("short", 1, 90),
                ("short", 2, 95),
                ("long", 1, 20),
                ("long", 2, 70),
                ("short", 1, 99),
            ):
                await conn.execute(
                    "INSERT INTO summaries (workspace, session_id, summary_type, seq, content,"
                    " message_id, message_seq, messages_covered, token_count, created_at)"
                    " VALUES (%s, %s, %s, %s, 'x', %s, %s, %s, 1, now())",
                    (
                        workspace,
                        "other" if covers == 99 else "s",
                        kind,
                        seq,
                        f"m{covers}",
                        covers,
                        covers,
                    ),
                )
        reads = PostgresReads(pool)
        newest = await reads.latest_summaries(workspace, "s")
        assert {kind: s.message_seq for kind, s in newest.items()} == {"short": 95, "long": 70}
        assert await reads.latest_summaries(workspace, "none") == {}
        for limit, budget in ((100, 1000), (10, 1000), (100, 11)):
            got = await reads.window_page(workspace, "s", None, None, limit, budget)
            assert got.after_seq == 70
            fixed = await reads.window_page(workspace, "s", 70, None, limit, budget)
            assert (got.messages, got.seqs, got.read, got.tokens) == (
                fixed.messages,
                fixed.seqs,
                fixed.read,
                fixed.tokens,
            )
        assert [m.id for m in got.messages] == [f"m{s}" for s in range(96, 101)]

        # The opening read is the three reads in one: the same summaries, page and card.
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO peer_cards (workspace, observer, observed, card, origin, seq,"
                " updated_at) VALUES (%s, 'a', 'b', %s, 'test', 1, now())",
                (workspace, ["Name: Bo", "Lives in Oslo"]),
            )
        for after, summaries, card in (
            (None, True, ("a", "b")),
            (0, False, ("a", "b")),
            (None, True, ("b", "a")),  # no such card
            (None, False, None),
            (40, True, None),
        ):
            for limit, budget in ((100, 1000), (10, 1000), (100, 11), (32, 0)):
                opened = await reads.opening(
                    workspace, "s", after, limit, budget, summaries=summaries, card=card
                )
                page = await reads.window_page(workspace, "s", after, None, limit, budget)
                assert opened.page == page
                assert opened.summaries == (
                    await reads.latest_summaries(workspace, "s") if summaries else {}
                )
                assert opened.card == (await reads.card(workspace, *card) if card else None)
        assert opened.summaries and (await reads.card(workspace, "a", "b")) == [
            "Name: Bo",
            "Lives in Oslo",
        ]
        none = await reads.opening(workspace, "none", None, 10, 100, summaries=True, card=None)
        assert none.summaries == {} and none.page.messages == [] and none.card is None
    finally:
        await pool.close()

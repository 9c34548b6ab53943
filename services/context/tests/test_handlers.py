"""The handlers over in-memory reads: paging, summary coverage, scoping of the slice."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from itertools import takewhile

from mnemo_context.domain import MessageWindow, Observation
from mnemo_context.handlers import ContextService, page_size, within
from mnemo_context.ports import Opening, StoredSummary, WindowPage
from mnemo_runtime.tokens import TokenCounter
from mnemo_schema.context_queries import (
    ContextMessage,
    ContextQuery,
    ContextSummary,
    RepresentationQuery,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def message(seq: int, tokens: int = 10) -> tuple[int, ContextMessage]:
    return (
        seq,
        ContextMessage(
            id=f"m{seq}",
            content=f"message {seq}",
            peer_id="alice",
            session_id="s",
            workspace_id="w",
            metadata={},
            created_at=NOW,
            token_count=tokens,
        ),
    )


class FakeReads:
    def __init__(self, n: int, summaries: dict[str, StoredSummary] | None = None) -> None:
        self.messages = [message(i) for i in range(1, n + 1)]
        self.summaries = summaries or {}
        self.observations: dict[tuple[str, str], list[Observation]] = {}
        self.cards: dict[tuple[str, str], list[str]] = {}
        self.rows_read = 0

    async def latest_summaries(self, ws: str, session_id: str) -> dict[str, StoredSummary]:
        return self.summaries

    async def window_page(
        self,
        ws: str,
        session_id: str,
        after_seq: int | None,
        before_seq: int | None,
        limit: int,
        budget: int,
    ) -> WindowPage:
        if after_seq is None:
            after_seq = min((s.message_seq for s in self.summaries.values()), default=0)
        page = [
            (seq, m)
            for seq, m in reversed(self.messages)
            if seq > after_seq and (before_seq is None or seq < before_seq)
        ][:limit]
        self.rows_read += len(page)
        window = MessageWindow(budget)
        taken = list(takewhile(lambda row: window.offer(row[1].token_count), page))
        return WindowPage(
            messages=[m for _, m in reversed(taken)],
            seqs=[seq for seq, _ in reversed(taken)],
            budget=budget,
            first_seq=taken[-1][0] if taken else None,
            tokens=budget - window.left,
            read=len(page),
            after_seq=after_seq,
        )

    async def card(self, ws: str, observer: str, observed: str) -> list[str] | None:
        return self.cards.get((observer, observed))

    async def opening(
        self,
        ws: str,
        session_id: str,
        after_seq: int | None,
        limit: int,
        budget: int,
        *,
        summaries: bool,
        card: tuple[str, str] | None,
    ) -> Opening:
        return Opening(
            summaries=await self.latest_summaries(ws, session_id) if summaries else {},
            page=await self.window_page(ws, session_id, after_seq, None, limit, budget),
            card=await self.card(ws, *card) if card else None,
        )

    async def newest_observations(
        self, ws: str, observer: str, observed: str, session_id: str | None, limit: int
    ) -> list[Observation]:
        return self.observations.get((observer, observed), [])[:limit]

    frequent_observations = newest_observations


def summary(kind: str, tokens: int, covers: int) -> StoredSummary:
    return StoredSummary(
        ContextSummary(
            content="x",
            message_id=f"m{covers}",
            summary_type=kind,
            created_at=NOW,
            token_count=tokens,
        ),
        covers,
    )


async def test_recent_messages_fill_the_budget_oldest_first_reading_only_what_fits():
    reads = FakeReads(10_000)
    got = await ContextService(reads, None).context("w", ContextQuery(session_id="s", tokens=1000))
    assert [m.id for m in got.messages] == [f"m{i}" for i in range(9901, 10_001)]
    assert got.tokens == 1000
    assert reads.rows_read < 300  # pages, never the session


async def test_the_window_reads_further_pages_until_the_budget_or_the_summary_stops_it():
    reads = FakeReads(0)
    reads.messages = [message(i, tokens=1) for i in range(1, 3001)]
    got = await ContextService(reads, None).context("w", ContextQuery(session_id="s", tokens=2500))
    assert [m.id for m in got.messages] == [f"m{i}" for i in range(501, 3001)]
    assert got.tokens == 2500
    reads.summaries = {"short": summary("short", 10, 2200)}
    got = await ContextService(reads, None).context("w", ContextQuery(session_id="s", tokens=2500))
    assert [m.id for m in got.messages] == [f"m{i}" for i in range(2201, 3001)]


async def test_messages_start_after_the_chosen_summary():
    reads = FakeReads(100, {"short": summary("short", 30, 97), "long": summary("long", 80, 60)})
    got = await ContextService(reads, None).context("w", ContextQuery(session_id="s", tokens=200))
    assert got.summary is not None and got.summary.summary_type == "long"
    assert [m.id for m in got.messages] == [f"m{i}" for i in range(89, 101)]
    assert got.tokens == 80 + 120 <= 200
    got = await ContextService(reads, None).context("w", ContextQuery(session_id="s", tokens=100))
    assert got.summary is not None and got.summary.summary_type == "short"
    assert [m.id for m in got.messages] == [f"m{i}" for i in range(98, 101)]
    off = await ContextService(reads, None).context(
        "w", ContextQuery(session_id="s", tokens=100, summary=False)
    )
    assert off.summary is None and len(off.messages) == 10


async def test_the_slice_and_card_are_counted_and_scoped_to_the_pair():
    reads = FakeReads(50)
    reads.observations[("alice", "bob")] = [Observation("o1", "explicit", "Bob is a nurse.")]
    reads.observations[("alice", "carol")] = [Observation("o2", "explicit", "Carol flies.")]
    reads.cards[("alice", "bob")] = ["Name: Bob"]
    service = ContextService(reads, None)
    q = ContextQuery(session_id="s", tokens=500, peer_target="bob", peer_perspective="alice")
    got = await service.context("w", q)
    assert got.peer_representation == "## Explicit observations\n- Bob is a nurse."
    assert got.peer_card == ["Name: Bob"]
    fixed = sum(TokenCounter().count_many([got.peer_representation, "Name: Bob"]))
    assert got.tokens == fixed + 10 * len(got.messages) <= 500
    tiny = await service.context("w", q.model_copy(update={"tokens": 3}))
    assert tiny.peer_representation is None and tiny.messages == []
    own = await service.representation("w", RepresentationQuery(observer="bob", observed="bob"))
    assert own.representation == ""


async def test_a_zero_budget_is_an_empty_valid_context():
    got = await ContextService(FakeReads(5), None).context(
        "w", ContextQuery(session_id="s", tokens=0)
    )
    assert got.messages == [] and got.summary is None and got.tokens == 0


async def test_a_window_cut_from_an_earlier_wider_page_is_the_window_read_afresh():
    rng = random.Random(3)
    for _ in range(300):
        reads = FakeReads(0)
        reads.messages = [message(i, rng.choice([0, 1, 5, 12, 40])) for i in range(1, 201)]
        service = ContextService(reads, None)
        wide_after, wide_budget = rng.randint(0, 120), rng.randint(0, 3000)
        after = rng.randint(0, 200)
        budget = rng.randint(0, wide_budget)
        page = await reads.window_page(
            "w", "s", wide_after, None, page_size(wide_budget), wide_budget
        )
        cut = within(page, after, budget)
        fresh = await service._recent("w", "s", after, budget)
        if cut is None:  # only when older messages were not read, or might have fitted
            assert after < wide_after or len(page.messages) == page.read == page_size(wide_budget)
        else:
            assert after >= wide_after
            assert [m.id for m in cut] == [m.id for m in fresh]


async def test_a_context_with_a_slice_packs_the_same_messages_as_one_without():
    reads = FakeReads(300, {"short": summary("short", 30, 280), "long": summary("long", 120, 240)})
    reads.observations[("alice", "bob")] = [Observation("o1", "explicit", "Bob is a nurse.")]
    service = ContextService(reads, None)
    for tokens in (0, 5, 40, 200, 400, 1000, 5000):
        sliced = await service.context(
            "w",
            ContextQuery(
                session_id="s", tokens=tokens, peer_target="bob", peer_perspective="alice"
            ),
        )
        rep_tokens = sliced.tokens - sum(m.token_count for m in sliced.messages)
        rep_tokens -= sliced.summary.token_count if sliced.summary else 0
        plain = await service.context("w", ContextQuery(session_id="s", tokens=tokens - rep_tokens))
        assert [m.id for m in sliced.messages] == [m.id for m in plain.messages], tokens


async def test_with_a_slice_and_no_summary_that_fits_the_window_reaches_past_the_summaries():
    # Summaries too large for 40% of the budget: none is chosen, so the window may reach
    # back past what they cover.
    reads = FakeReads(
        300, {"short": summary("short", 3000, 280), "long": summary("long", 6000, 240)}
    )
    reads.observations[("alice", "bob")] = [Observation("o1", "explicit", "Bob is a nurse.")]
    service = ContextService(reads, None)
    query = ContextQuery(session_id="s", tokens=5000, peer_target="bob", peer_perspective="alice")
    sliced = await service.context("w", query)
    assert sliced.summary is None
    assert [m.id for m in sliced.messages] == [f"m{i}" for i in range(1, 301)]

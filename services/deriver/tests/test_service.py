"""The deriver service with fakes at its ports: what is published, acked, retried, parked."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

from mnemo_deriver.batching import RepKey
from mnemo_deriver.contract import parse_batch
from mnemo_deriver.local import local_deriver
from mnemo_deriver.service import Delivery, DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.deadletters import Letter
from mnemo_runtime.models import ModelRequest, ModelUnavailable
from mnemo_runtime.models.scripted import ScriptedModel, text_reply, tool_reply
from mnemo_runtime.precedence import precedence
from mnemo_schema.events import MessagePosted, Representation
from mnemo_schema.observations import ObservationWritten

from .conftest import Lines, Log


class Dead:
    def __init__(self) -> None:
        self.parked: list[Letter] = []

    async def park(self, letter: Letter) -> int:
        self.parked.append(letter)
        return len(self.parked)


class Turns:
    """The log's view of the turn before a message: what was posted, by position."""

    def __init__(self, *posted: tuple[int, MessagePosted]) -> None:
        self.posted = dict(posted)
        self.asked: list[int] = []

    async def before(self, workspace: str, session_id: str, seq: int) -> MessagePosted | None:
        self.asked.append(seq)
        earlier = [s for s, m in self.posted.items() if s < seq and m.session_id == session_id]
        return self.posted[max(earlier)] if earlier else None


class Settled:
    def __init__(self, attempts: dict[int, int] | None = None) -> None:
        self.acked: list[int] = []
        self.naked: list[int] = []
        self.attempts = attempts or {}

    def delivery(self, seq: int, event: MessagePosted) -> Delivery:
        async def ack() -> None:
            self.acked.append(seq)

        async def nak(delay: float) -> None:
            self.naked.append(seq)

        return Delivery(seq, event, ack, nak, self.attempts.get(seq, 1))


def posted(
    i: int, peer: str, text: str, reps: list[tuple[str, str]], ws: str = "w"
) -> MessagePosted:
    return MessagePosted(
        workspace=ws,
        session_id="s",
        message_id=f"m{i}",
        peer_id=peer,
        content=text,
        metadata={},
        created_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        token_count=12,
        representations=[Representation(observer=o, observed=d) for o, d in reps],
    )


def service(model, turns: Turns | None = None, progress: Lines | None = None, **kw):
    parts = {
        "log": Log(),
        "dead": Dead(),
        "progress": progress or Lines(),
        "turns": turns or Turns(),
    }
    kw.setdefault("retry_delay_s", 0.01)
    svc = DeriverService(
        DeriverSettings(structured_attempts=2, **kw),
        model,
        parts["log"],
        parts["dead"],
        parts["progress"],
        parts["turns"],
    )
    return svc, parts


def observed(log: Log) -> list[ObservationWritten]:
    return [e for e in log.events if isinstance(e, ObservationWritten)]


async def test_local_reasoner_observations_are_published_then_messages_acked():
    svc, parts = service(local_deriver())
    s = Settled()
    await svc.deliver(
        0,
        [
            s.delivery(1, posted(1, "bob", "How was your week?", [("bob", "bob")])),
            s.delivery(
                2,
                posted(
                    2,
                    "alice",
                    "I adopted a puppy named Rex yesterday.",
                    [("alice", "alice"), ("bob", "alice")],
                ),
            ),
        ],
    )
    assert s.acked == []  # nothing is acknowledged before its batches are done
    await svc.flush()
    facts = {(e.observer, e.content, tuple(e.source_message_seqs)) for e in observed(parts["log"])}
    assert ("alice", "Alice adopted a puppy named Rex on 7 May 2023.", (2,)) in facts
    assert ("bob", "Alice adopted a puppy named Rex on 7 May 2023.", (2,)) in facts
    assert sorted(s.acked) == [1, 2]
    lines = parts["progress"].done_at
    assert lines == {
        RepKey("w", "bob", "bob"): 1,
        RepKey("w", "alice", "alice"): 2,
        RepKey("w", "bob", "alice"): 2,
    }


def _nothing_found(request: ModelRequest):
    assert request.tool_choice is not None
    return tool_reply(request.tool_choice.name or "", {"observations": []})


def _recording(seen: list[str]):
    def answer(request: ModelRequest):
        seen.append(request.messages[0].text())
        return _nothing_found(request)

    return answer


async def test_a_batch_shows_the_preceding_turn_of_another_speaker_as_context():
    seen: list[str] = []
    svc, parts = service(ScriptedModel(otherwise=_recording(seen)))
    s = Settled()
    await svc.deliver(
        0,
        [
            s.delivery(1, posted(1, "bob", "Where do you live now?", [("bob", "bob")])),
            s.delivery(2, posted(2, "alice", "Lisbon, since March.", [("alice", "alice")])),
        ],
    )
    await svc.flush()
    target, messages = parse_batch(next(t for t in seen if '"alice"' in t.split("\n")[0]))
    assert target == "alice"
    assert [(m.peer_id, m.is_context) for m in messages] == [("bob", True), ("alice", False)]
    # The log was asked only for the first message, whose session had no earlier turn here.
    assert parts["turns"].asked == [1]


async def test_the_turn_before_a_message_comes_from_the_log_when_delivery_order_cannot_tell():
    # The replica took the partition after bob's question: the log says what came before.
    question = posted(1, "bob", "Where do you live now?", [("bob", "bob")])
    seen: list[str] = []
    svc, _ = service(ScriptedModel(otherwise=_recording(seen)), Turns((1, question)))
    s = Settled()
    await svc.deliver(0, [s.delivery(2, posted(2, "alice", "Lisbon.", [("alice", "alice")]))])
    await svc.flush()
    _, messages = parse_batch(seen[0])
    assert [(m.peer_id, m.content, m.is_context) for m in messages] == [
        ("bob", "Where do you live now?", True),
        ("alice", "Lisbon.", False),
    ]


async def test_a_model_outage_waits_at_the_head_of_its_line_until_the_model_is_back():
    model = ScriptedModel(
        ModelUnavailable("overloaded", attempts=4),
        ModelUnavailable("still", attempts=4),
        otherwise=_nothing_found,
    )
    svc, parts = service(model)
    s = Settled()
    await svc.deliver(0, [s.delivery(7, posted(7, "a", "I love jazz.", [("a", "a")]))])
    await svc.flush()
    assert len(model.requests) >= 3 and s.naked == [] and parts["dead"].parked == []
    assert s.acked == [7] and parts["progress"].done_at == {RepKey("w", "a", "a"): 7}


async def test_malformed_output_is_retried_then_parked_with_the_reason():
    bad = tool_reply("DeriverOutput", {"facts": "not the schema"})
    svc, parts = service(ScriptedModel(bad, bad, text_reply("still no tool call")))
    s = Settled()
    await svc.deliver(0, [s.delivery(3, posted(3, "a", "I love jazz.", [("a", "a")]))])
    await svc.flush()
    assert observed(parts["log"]) == []
    (letter,) = parts["dead"].parked
    assert "malformed" in letter.reason and letter.detail["message_ids"] == ["m3"]
    assert (letter.workspace, letter.session_id, letter.stream_seq) == ("w", "s", 3)
    assert s.acked == [3]  # parked, not silently dropped: the dead letter holds it
    assert parts["progress"].done_at == {RepKey("w", "a", "a"): 3}  # done, as failed


@pytest.mark.parametrize(
    ("observation", "why"),
    [
        (
            {
                "fact": "Bob lives in Lisbon.",
                "source_message_index": 0,
                "source_span": "Where do you live now?",
            },
            "context",
        ),
        (
            {
                "fact": "Alice lives in Paris.",
                "source_message_index": 1,
                "source_span": "Paris, since March.",
            },
            "span",
        ),
        (
            {"fact": "Alice lives in Lisbon.", "source_message_index": 9, "source_span": "Lisbon"},
            "index",
        ),
    ],
)
async def test_ungrounded_or_misattributed_observations_are_dropped(observation, why):
    def reply(request: ModelRequest):
        assert request.tool_choice is not None
        return tool_reply(request.tool_choice.name or "", {"observations": [observation]})

    svc, parts = service(ScriptedModel(otherwise=reply))
    s = Settled()
    await svc.deliver(
        0,
        [
            s.delivery(1, posted(1, "bob", "Where do you live now?", [])),
            s.delivery(2, posted(2, "alice", "Lisbon, since March.", [("alice", "alice")])),
        ],
    )
    await svc.flush()
    assert observed(parts["log"]) == [], why


async def test_redelivery_yields_the_same_observation_ids():
    runs = []
    for _ in range(2):
        svc, parts = service(local_deriver())
        s = Settled()
        await svc.deliver(
            0, [s.delivery(1, posted(1, "a", "I moved to Lisbon last week.", [("a", "a")]))]
        )
        await svc.flush()
        runs.append([(e.event_id, e.observation_id) for e in parts["log"].events])
    assert runs[0] == runs[1] and runs[0]


class FlakyLines(Lines):
    """Fails once when work finishes, as a database pool timeout would."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_next_done = True

    async def done(
        self, key: RepKey, seq: int, observation_seq: int, sessions: Sequence[str] = ()
    ) -> None:
        if self.fail_next_done:
            self.fail_next_done = False
            raise TimeoutError("pool timeout")
        await super().done(key, seq, observation_seq, sessions)


async def test_work_is_acknowledged_only_after_its_progress_is_recorded():
    progress = FlakyLines()
    log = Log()
    svc = DeriverService(
        DeriverSettings(retry_delay_s=0.01), local_deriver(), log, Dead(), progress, Turns()
    )
    s = Settled()
    await svc.deliver(
        0, [s.delivery(5, posted(5, "a", "I moved to Lisbon last week.", [("a", "a")]))]
    )
    await svc.flush()
    assert s.acked == [5] and progress.done_at == {RepKey("w", "a", "a"): 5}
    # Published again on the retry, with the same ids: the log keeps one of each.
    assert len({e.event_id for e in log.events}) == 1


class _FailsOn:
    """The local reasoner, except that it breaks on one message's text, as a bug would."""

    def __init__(self, poison: str) -> None:
        self.poison = poison
        self.local = local_deriver()
        self.calls = 0

    async def complete(self, request: ModelRequest):
        if self.poison in request.messages[0].text():
            self.calls += 1
            raise KeyError("the reasoner broke on this message")
        return await self.local.complete(request)


async def test_one_message_that_breaks_the_deriver_holds_back_none_of_its_batch():
    model = _FailsOn("POISON")
    svc, parts = service(model, max_attempts=3)
    s = Settled()
    await svc.deliver(
        0,
        [
            s.delivery(1, posted(1, "a", "I adopted a puppy named Rex.", [("a", "a")])),
            s.delivery(2, posted(2, "a", "POISON here.", [("a", "a")])),
            s.delivery(3, posted(3, "a", "I moved to Lisbon in March.", [("a", "a")])),
        ],
    )
    await svc.flush()
    assert sorted(s.acked) == [1, 2, 3]  # derived alone, the others go through
    assert {e.source_message_ids[0] for e in observed(parts["log"])} == {"m1", "m3"}
    # The one at fault: the batch's failure, then three tries alone, then the dead letter.
    (letter,) = parts["dead"].parked
    assert "KeyError" in letter.reason and letter.stream_seq == 2 and letter.attempts == 3
    assert model.calls == 4


async def test_a_message_failing_on_its_last_attempt_is_parked_with_the_reason():
    svc, parts = service(_FailsOn("POISON"), max_attempts=3)
    s = Settled(attempts={2: 3})
    await svc.deliver(0, [s.delivery(2, posted(2, "a", "POISON here.", [("a", "a")]))])
    await svc.flush()
    assert s.acked == [2] and s.naked == []
    (letter,) = parts["dead"].parked
    assert "KeyError" in letter.reason and letter.stream_seq == 2 and letter.attempts == 3


async def test_an_outage_is_retried_however_often_it_was_delivered():
    outages = [ModelUnavailable("overloaded", attempts=4)] * 5
    model = ScriptedModel(*outages, otherwise=_nothing_found)
    svc, parts = service(model, max_attempts=2)
    s = Settled(attempts={7: 50})
    await svc.deliver(0, [s.delivery(7, posted(7, "a", "I love jazz.", [("a", "a")]))])
    await svc.flush()
    assert parts["dead"].parked == [] and s.acked == [7] and len(model.requests) >= 6


async def test_workspaces_take_turns_for_the_slots():
    order: list[str] = []

    def answer(request: ModelRequest):
        order.append(request.messages[0].text().split("\n")[0])
        return _nothing_found(request)

    svc, _ = service(ScriptedModel(otherwise=answer), max_concurrent_batches=1, token_target=1)
    s = Settled()
    backlog = [s.delivery(i, posted(i, "a", f"A {i}", [("a", "a")], ws="big")) for i in range(1, 9)]
    newcomer = s.delivery(9, posted(9, "b", "B 9", [("b", "b")], ws="small"))
    await svc.deliver(0, [*backlog, newcomer])
    await svc.flush()
    # The second slot turn goes to the other workspace, not to the rest of the backlog.
    assert ['"b"' in line for line in order].index(True) == 1
    assert sorted(s.acked) == list(range(1, 10))


class HeldLines(Lines):
    """Progress whose ``taken`` waits, for the workspace ``held``, until the gate opens: that
    workspace's batches stay running."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held = held
        self.gate = asyncio.Event()

    async def taken(self, key: RepKey, seq: int, sessions: Sequence[str] = ()) -> None:
        if key.workspace == self.held:
            await self.gate.wait()
        await super().taken(key, seq, sessions)


@pytest.mark.parametrize("kept", [1, 0])
async def test_a_workspace_with_nothing_running_takes_the_kept_slot_past_a_backlog(kept: int):
    progress = HeldLines("big")
    svc, _ = service(
        ScriptedModel(otherwise=_nothing_found),
        progress=progress,
        token_target=1,
        max_concurrent_batches=2,
        reserved_slots=kept,
    )
    s = Settled()
    reps = [("a", "a"), ("b", "b"), ("a", "b")]  # three lines: more than the shared slots
    backlog = [s.delivery(i, posted(i, "a", f"A {i}", reps, ws="big")) for i in range(1, 7)]
    await svc.deliver(0, backlog)
    newcomer = s.delivery(9, posted(9, "c", "C 9", [("c", "c")], ws="small"))
    await svc.deliver(0, [newcomer])

    async def newcomer_acked() -> None:
        while 9 not in s.acked:
            await asyncio.sleep(0.005)

    if kept:
        await asyncio.wait_for(newcomer_acked(), timeout=5.0)
        assert s.acked == [9]  # the backlog's batches all still run or wait
        # The kept slot is not the backlog's: it never runs more than the shared slots.
        assert len(svc._work) == 2 and {k.workspace for k in svc._running} == {"big"}
    else:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(newcomer_acked(), timeout=0.3)
        assert s.acked == []
    progress.gate.set()
    await svc.flush()
    assert sorted(s.acked) == [1, 2, 3, 4, 5, 6, 9]


async def test_a_backlog_waits_while_a_conversation_with_nothing_else_queued_is_derived():
    progress = HeldLines("small")
    svc, _ = service(ScriptedModel(otherwise=_nothing_found), progress=progress, token_target=1)
    s = Settled()
    await svc.deliver(0, [s.delivery(1, posted(1, "c", "C 1", [("c", "c")], ws="small"))])
    await asyncio.sleep(0)  # its batch starts
    assert precedence().busy  # the conversation's batch runs as foreground work
    backlog = [s.delivery(i, posted(i, "a", f"A {i}", [("a", "a")], ws="big")) for i in range(2, 8)]
    await svc.deliver(0, backlog)
    for _ in range(10):
        await asyncio.sleep(0)
    # The backlog's first batch has a slot, but waits before its first step.
    assert len(svc._work) == 2 and progress.taken_at == {}
    progress.gate.set()
    await svc.flush()
    assert sorted(s.acked) == list(range(1, 8)) and not precedence().busy
    waited = REGISTRY.get_sample_value("mnemo_background_wait_seconds_total", {"stage": "deriver"})
    assert waited is not None and waited > 0


async def test_each_representation_observing_a_conversations_message_is_derived_ahead_of_reads():
    # Reads that never stop hold every background step back (up to READS_MAX_WAIT_S): a
    # message observed by two representations is one conversation's, and neither of its two
    # batches may wait as a backlog's would.
    svc, _ = service(ScriptedModel(otherwise=_nothing_found), token_target=1)
    s = Settled()
    both = [("a", "a"), ("b", "a")]
    with precedence().answering():
        await svc.deliver(0, [s.delivery(1, posted(1, "a", "A 1", both, ws="chat"))])
        await asyncio.wait_for(svc.flush(), timeout=1.0)
    assert s.acked == [1]


async def test_a_backlogs_observations_say_so_and_a_conversations_do_not():
    svc, parts = service(local_deriver(), token_target=1)
    s = Settled()
    texts = [f"I moved to city number {i} in March." for i in range(1, 5)]
    # Four batches in one line: a backlog until its last two (see FairQueue.backlogged).
    await svc.deliver(
        0,
        [s.delivery(i, posted(i, "a", t, [("a", "a")], ws="big")) for i, t in enumerate(texts, 1)],
    )
    await svc.flush()
    chat = "I adopted a dog named Rex in May."
    await svc.deliver(0, [s.delivery(9, posted(9, "c", chat, [("c", "c")], ws="small"))])
    await svc.flush()
    marks = {(e.workspace, e.source_message_seqs[0]): e.backlog for e in observed(parts["log"])}
    assert marks[("big", 1)] and marks[("big", 2)]
    assert not marks[("big", 4)] and not marks[("small", 9)]


async def test_a_representations_batches_are_published_in_order_whatever_the_slots():
    svc, parts = service(local_deriver(), max_concurrent_batches=4, token_target=1)
    s = Settled()
    texts = [f"I moved to city number {i} in March." for i in range(1, 13)]
    await svc.deliver(
        0, [s.delivery(i, posted(i, "a", t, [("a", "a")])) for i, t in enumerate(texts, 1)]
    )
    await svc.flush()
    seqs = [e.source_message_seqs[0] for e in observed(parts["log"])]
    assert seqs == sorted(seqs) and len(seqs) == 12


@pytest.mark.parametrize(
    ("token_target", "marks"),
    [(1, [(2, 2), (4, 4)]), (1024, [(2, None), (4, 4)])],
    ids=["a-batch-a-message", "one-batch"],
)
async def test_a_batchs_last_observation_says_which_messages_it_formed(token_target, marks):
    # Only the second and fourth messages state a fact; a message a batch (the first two
    # batches yield nothing), or the four in one batch.
    svc, parts = service(local_deriver(), token_target=token_target)
    s = Settled()
    texts = [
        "How are you?",
        "I moved to Lisbon in March.",
        "Nice weather today.",
        "I adopted a dog named Rex in May.",
    ]
    await svc.deliver(
        0, [s.delivery(i, posted(i, "a", t, [("a", "a")])) for i, t in enumerate(texts, 1)]
    )
    await svc.flush()
    got = [(e.source_message_seqs[0], e.formed_through) for e in observed(parts["log"])]
    assert got == marks


async def test_a_released_partition_is_forgotten_and_its_work_done_afresh_by_the_next_owner():
    gate_open = False

    def answer(request: ModelRequest):
        if not gate_open:
            raise ModelUnavailable("down", attempts=1)
        return _nothing_found(request)

    svc, parts = service(ScriptedModel(otherwise=answer), retry_delay_s=60, idle_s=0.001)
    s = Settled()
    msg = posted(4, "a", "I love jazz.", [("a", "a")])
    await svc.deliver(3, [s.delivery(4, msg)])
    await asyncio.sleep(0.01)
    svc.tick()
    await asyncio.sleep(0.05)  # its first try fails; it waits out its (long) retry delay
    await svc.release(3)
    assert svc.in_flight == 0 and s.acked == []
    gate_open = True
    await svc.deliver(3, [s.delivery(4, msg)])  # the next owner's delivery of the same message
    await svc.flush()
    assert s.acked == [4] and parts["progress"].done_at == {RepKey("w", "a", "a"): 4}


async def test_reasoning_switched_off_is_not_derived_and_counts_no_work():
    model = ScriptedModel()  # any call would fail: none is scripted
    svc, parts = service(model)
    s = Settled()
    off = posted(1, "alice", "I adopted a puppy named Rex yesterday.", [("alice", "alice")])
    await svc.deliver(0, [s.delivery(1, off.model_copy(update={"reasoning": False}))])
    await svc.flush()
    assert s.acked == [1]
    assert model.requests == [] and parts["log"].events == []
    assert parts["progress"].taken_at == {} and parts["progress"].done_at == {}


async def test_the_applications_instructions_reach_the_deriver_prompt_per_batch():
    model = ScriptedModel(
        otherwise=lambda _: tool_reply("record_observations", {"observations": []})
    )
    svc, parts = service(model)
    s = Settled()
    told = posted(1, "alice", "I like tea.", [("alice", "alice")])
    told = told.model_copy(update={"instructions": "Only record food preferences."})
    plain = posted(2, "alice", "I like coffee.", [("alice", "alice")])
    await svc.deliver(0, [s.delivery(1, told), s.delivery(2, plain)])
    await svc.flush()
    # Messages under other instructions never share a prompt.
    systems = sorted({r.system for r in model.requests})
    assert len(systems) == 2
    assert {r.messages[0].text().count("<message ") for r in model.requests} == {1}
    assert "Only record food preferences." not in systems[0]
    assert "Only record food preferences." in systems[1]
    assert systems[1].startswith(systems[0])
    # One line for the representation, in order, its progress naming the session.
    assert parts["progress"].done_at == {RepKey("w", "alice", "alice"): 2}
    assert parts["progress"].sessions == {"s"}


async def test_a_replica_holding_its_limit_takes_no_more_until_work_completes():
    svc, _ = service(local_deriver(), held_messages=2)
    s = Settled()
    await svc.deliver(
        0, [s.delivery(i, posted(i, "a", f"I like tea number {i}.", [("a", "a")])) for i in (1, 2)]
    )
    assert len(svc.held) == 2
    room = asyncio.ensure_future(svc.held.room())
    await asyncio.sleep(0)
    assert not room.done()  # the feeds wait here before fetching
    await svc.flush()
    await asyncio.wait_for(room, 5)
    assert len(svc.held) == 0 and sorted(s.acked) == [1, 2]

"""The summarizer service with fakes at its ports: what is published, acked, requeued, parked."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from mnemo_runtime.deadletters import Letter
from mnemo_runtime.models import ChatModel, ModelRequest, ModelUnavailable
from mnemo_runtime.models.scripted import ScriptedModel, text_reply
from mnemo_schema.config import SummaryConfiguration
from mnemo_schema.events import MessagePosted
from mnemo_summarizer.cadence import Stored, Turn
from mnemo_summarizer.domain import parse_input
from mnemo_summarizer.local import local_reasoner
from mnemo_summarizer.ports import SessionRecord
from mnemo_summarizer.service import Delivery, SummarizerService
from mnemo_summarizer.settings import SummarizerSettings

from .conftest import Log, Progress

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
WS, SID = "ws1", "s1"


class History:
    def __init__(self, record: SessionRecord | None = None) -> None:
        self.record = record or SessionRecord()
        self.loads: list[int] = []

    async def caught_up(self, workspace: str, seq: int) -> None:
        return None

    async def load(self, workspace: str, session_id: str, before_seq: int) -> SessionRecord:
        self.loads.append(before_seq)
        return SessionRecord(
            configs=self.record.configs,
            latest=self.record.latest,
            messages=tuple(m for m in self.record.messages if m.seq < before_seq),
            instructions=self.record.instructions,
        )


class Dead:
    def __init__(self) -> None:
        self.parked: list[Letter] = []

    async def park(self, letter: Letter) -> int:
        self.parked.append(letter)
        return len(self.parked)


class Settled:
    def __init__(self, attempts: dict[int, int] | None = None) -> None:
        self.acked: list[int] = []
        self.naked: list[tuple[int, float]] = []
        self.attempts = attempts or {}

    def delivery(self, seq: int, session: str = SID, workspace: str = WS) -> Delivery:
        speaker = "caroline" if seq % 2 else "melanie"
        event = MessagePosted(
            workspace=workspace,
            session_id=session,
            message_id=f"m{seq}",
            peer_id=speaker,
            content=f"I adopted a dog named Rex{seq} on May {seq % 28 + 1}.",
            metadata={},
            created_at=AT,
            token_count=12,
        )

        async def ack() -> None:
            self.acked.append(seq)

        async def nak(delay: float) -> None:
            self.naked.append((seq, delay))

        return Delivery(seq, event, ack, nak, self.attempts.get(seq, 1))


def service(
    model: ChatModel,
    history: History | None = None,
    progress: Progress | None = None,
    **settings: Any,
) -> tuple[SummarizerService, Log, Dead]:
    log, dead = Log(), Dead()
    svc = SummarizerService(
        SummarizerSettings(**settings),
        model,
        log,
        history or History(),
        dead,
        lambda text: len(text.split()),
        progress or Progress(),
    )
    return svc, log, dead


async def test_sixty_messages_give_three_short_summaries_and_one_long():
    progress = Progress()
    svc, log, _ = service(local_reasoner(), progress=progress)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 61)])
    await svc.drain()
    got = [
        (s.summary_type, s.message_id, s.message_seq, s.messages_covered) for s in log.summaries()
    ]
    assert got == [
        ("short", "m20", 20, 20),
        ("short", "m40", 40, 40),
        ("short", "m60", 60, 60),
        ("long", "m60", 60, 60),
    ]
    assert sorted(bus.acked) == list(range(1, 61))
    assert progress.sessions == {(WS, SID): (60, 4)}
    for s in log.summaries():
        assert "Caroline:" in s.content and "Melanie:" in s.content
        assert s.token_count == len(s.content.split())
        assert s.causation_id is not None


async def test_each_summary_is_built_from_the_previous_one_of_its_type():
    model = ScriptedModel(otherwise=lambda r: text_reply(f"summary {len(model.requests)}"))
    svc, _, _ = service(model)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 41)])
    await svc.drain()
    second = parse_input(model.requests[1].messages[-1].text())
    assert second.previous == "summary 1"
    assert second.kind == "short" and second.word_limit == 150
    assert [m.content for m in second.messages][-1].startswith("I adopted a dog named Rex40")


async def test_a_redelivered_message_is_acked_without_counting_it_twice():
    svc, log, _ = service(local_reasoner())
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 21)])
    await svc.drain()
    await svc.deliver(0, [bus.delivery(20)])
    assert len(log.summaries()) == 1
    assert sorted(bus.acked) == sorted([*range(1, 21), 20])


async def test_a_message_delivered_again_while_its_summary_is_due_is_settled_once():
    svc, log, _ = service(_Slow(0.05))
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 21)])
    await svc.deliver(0, [bus.delivery(20)])  # the ack deadline passed: delivered again
    await svc.drain()
    assert len(log.summaries()) == 1
    assert sorted(bus.acked) == list(range(1, 21))  # the newest delivery settles it, once


async def test_a_model_outage_leaves_the_summary_due_while_every_session_is_counted():
    outage = ModelUnavailable("503", attempts=3)
    model = ScriptedModel(outage, otherwise=lambda r: text_reply("Caroline adopted a dog."))
    progress = Progress()
    svc, log, dead = service(model, progress=progress, retry_delay_s=0.05)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 22)])
    await svc.deliver(0, [bus.delivery(1, session="other")])
    # The summary waits to be tried again; nothing is handed back, the rest is counted. Its
    # message is not acknowledged, and its session's progress stops before it.
    assert log.summaries() == [] and dead.parked == [] and bus.naked == []
    assert 20 not in bus.acked and 21 in bus.acked
    assert progress.sessions == {(WS, SID): (19, 0), (WS, "other"): (1, 0)}
    await svc.drain()
    assert [s.message_id for s in log.summaries()] == ["m20"]
    assert sorted(bus.acked) == sorted([*range(1, 22), 1])
    assert progress.sessions[(WS, SID)] == (21, 1)
    state = svc.session(WS, SID)
    assert state is not None and state.last_seq == 21
    assert len(state.tracks["short"].pending) == 1 and state.pending() == 21


async def test_empty_answers_after_every_attempt_park_the_work_and_move_on():
    model = ScriptedModel(text_reply(""), text_reply("  "), text_reply(""))
    model.then(text_reply("Second window."))
    svc, log, dead = service(model, attempts=3)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 41)])
    await svc.drain()
    assert len(dead.parked) == 1
    letter = dead.parked[0]
    assert "malformed" in letter.reason
    assert (letter.workspace, letter.session_id) == (WS, SID)
    assert letter.detail["summary_type"] == "short"
    assert letter.detail["message_ids"] == [f"m{i}" for i in range(1, 21)]
    assert sorted(bus.acked) == list(range(1, 41)) and bus.naked == []
    assert [(s.message_id, s.content) for s in log.summaries()] == [("m40", "Second window.")]


async def test_a_restart_resumes_counting_from_the_stored_summaries_and_messages():
    stored = tuple(Turn(s, f"m{s}", "caroline", f"Old message {s}.", AT) for s in range(1, 46))
    history = History(
        SessionRecord(latest={"short": Stored("Caroline moved.", 40, 40)}, messages=stored)
    )
    model = ScriptedModel(otherwise=lambda r: text_reply("Caroline adopted Rex."))
    svc, log, _ = service(model, history)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(45, 61)])  # 45 is a redelivery
    await svc.drain()
    assert history.loads == [45]
    got = [(s.summary_type, s.message_seq, s.messages_covered) for s in log.summaries()]
    assert got == [("short", 60, 60), ("long", 60, 60)]
    first = parse_input(model.requests[0].messages[-1].text())
    assert first.previous == "Caroline moved."
    assert len(first.messages) == 20


async def test_session_configuration_sets_the_cadence():
    history = History(
        SessionRecord(configs=(None, SummaryConfiguration(messages_per_short_summary=3)))
    )
    svc, log, _ = service(local_reasoner(), history)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 7)])
    await svc.drain()
    assert [s.message_seq for s in log.summaries()] == [3, 6]


async def test_the_applications_instructions_reach_the_summarizer_prompt():
    model = ScriptedModel(otherwise=lambda r: text_reply("A summary."))
    history = History(SessionRecord(instructions="Mention every pet by name."))
    svc, log, _ = service(model, history, messages_per_short_summary=2)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 3)])
    await svc.drain()
    assert len(log.summaries()) == 1
    assert "Mention every pet by name." in model.requests[0].system


async def test_summary_event_ids_are_derived_so_a_republish_is_deduplicated():
    svc_a, log_a, _ = service(local_reasoner())
    svc_b, log_b, _ = service(ScriptedModel(otherwise=lambda r: text_reply("different")))
    for svc in (svc_a, svc_b):
        bus = Settled()
        await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 21)])
        await svc.drain()
    assert log_a.summaries()[0].event_id == log_b.summaries()[0].event_id


def test_the_request_names_the_stage_and_carries_the_prompt():
    from mnemo_summarizer.cadence import Job
    from mnemo_summarizer.domain import SUMMARIZER_PROMPT, request

    turns = (Turn(1, "m1", "caroline", "Line one\nline two", AT),)
    req: ModelRequest = request(Job("long", None, turns, 1), 600, 2048)
    assert req.system == SUMMARIZER_PROMPT and req.max_tokens == 2048
    parsed = parse_input(req.messages[0].text())
    assert parsed.kind == "long" and parsed.word_limit == 600 and parsed.previous is None
    assert [(m.peer_id, m.content) for m in parsed.messages] == [("caroline", "Line one line two")]


class _Broken:
    """A model that fails as a bug would, not as an outage."""

    async def complete(self, request: ModelRequest):
        raise KeyError("broken")


async def test_a_failure_of_its_own_is_retried_then_the_summary_parked_and_the_session_goes_on():
    svc, _, dead = service(
        _Broken(), messages_per_short_summary=2, max_attempts=2, retry_delay_s=0.01
    )
    bus = Settled(attempts={2: 1})
    await svc.deliver(0, [bus.delivery(1), bus.delivery(2), bus.delivery(3)])
    # One attempt left: tried again later; the session's later message is counted meanwhile.
    assert dead.parked == [] and 2 not in bus.acked and 3 in bus.acked
    await svc.drain()
    (letter,) = dead.parked
    assert "KeyError" in letter.reason and letter.detail["message_seq"] == 2
    assert sorted(bus.acked) == [1, 2, 3] and bus.naked == []
    # Delivered a second time by the bus already: parked at its first failure here.
    svc2, _, dead2 = service(_Broken(), messages_per_short_summary=2, max_attempts=2)
    bus2 = Settled(attempts={2: 2})
    await svc2.deliver(0, [bus2.delivery(1), bus2.delivery(2)])
    await svc2.drain()
    assert len(dead2.parked) == 1 and sorted(bus2.acked) == [1, 2]


class _Slow:
    """A model that takes ``delay`` seconds for each summary."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def complete(self, request: ModelRequest):
        await asyncio.sleep(self.delay)
        return text_reply("A summary.")


async def test_one_workspaces_summaries_hold_back_no_other_workspaces_messages():
    progress = Progress()
    svc, log, _ = service(_Slow(0.1), progress=progress, messages_per_short_summary=5)
    bus = Settled()
    # 40 messages of one session: 8 summaries to write, one at a time, 0.1 s each.
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 41)])
    await svc.deliver(0, [bus.delivery(41, session="s", workspace="ws2")])
    # Counted, recorded and acknowledged at once; the summaries are still being written.
    assert progress.sessions[("ws2", "s")] == (41, 0) and 41 in bus.acked
    assert len(log.summaries()) < 8
    await svc.drain()
    assert [s.message_seq for s in log.summaries()] == list(range(5, 41, 5))
    assert progress.sessions[(WS, SID)] == (40, 8)


async def test_the_summaries_of_two_workspaces_are_written_in_turns():
    svc, log, _ = service(_Slow(0.01), messages_per_short_summary=2, max_concurrent_summaries=1)
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 21)])  # ten due in ws1
    await svc.deliver(0, [bus.delivery(seq, workspace="ws2") for seq in (21, 22)])  # one in ws2
    await svc.drain()
    order = [s.workspace for s in log.summaries()]
    # ws2's one summary is written second (ws1's first was taken before it came), not last.
    assert order.index("ws2") <= 2 and len(order) == 11


async def test_a_redrive_summarizes_the_session_again_up_to_now():
    stored = {"short": Stored("Caroline adopted Rex.", 20, 20)}
    turns = tuple(
        Turn(s, f"m{s}", "caroline", f"I moved to Lisbon in week {s}.", AT) for s in range(21, 31)
    )
    svc, log, _ = service(local_reasoner(), History(SessionRecord(latest=stored, messages=turns)))
    assert await svc.redrive(WS, SID, ["short"]) == 1
    (summary,) = log.summaries()
    assert (summary.summary_type, summary.message_seq, summary.messages_covered) == (
        "short",
        30,
        30,
    )
    assert summary.content.strip()


class _Down(Progress):
    """The progress store, unreachable until ``up`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.up = False

    async def done(self, sessions: dict[tuple[str, str], tuple[int, int]]) -> None:
        if not self.up:
            raise TimeoutError("pool timeout")
        await super().done(sessions)


async def test_nothing_is_acknowledged_before_its_progress_is_recorded():
    log, dead, progress = Log(), Dead(), _Down()
    svc = SummarizerService(
        SummarizerSettings(),
        local_reasoner(),
        log,
        History(),
        dead,
        lambda t: len(t.split()),
        progress,
        record_pause_s=0.0,
    )
    bus = Settled()
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 4)])
    # Not acknowledged: delivered again, they are counted as seen and recorded then.
    assert bus.acked == []
    assert progress.sessions == {}
    progress.up = True
    await svc.deliver(0, [bus.delivery(seq) for seq in range(1, 4)])
    assert bus.acked == [1, 2, 3]
    assert progress.sessions == {(WS, SID): (3, 0)}

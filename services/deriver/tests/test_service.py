"""The deriver service with fakes at its ports: what is published, acked, requeued, parked."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from mnemo_deriver.service import Delivery, DeriverService
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.deadletters import Letter
from mnemo_runtime.deriver_contract import parse_batch
from mnemo_runtime.memory.rules import Rejected
from mnemo_runtime.models import ModelRequest, ModelUnavailable
from mnemo_runtime.models.local import LocalReasoner
from mnemo_runtime.models.scripted import ScriptedModel, text_reply, tool_reply
from mnemo_schema.events import Envelope, MessagePosted, Representation
from mnemo_schema.observations import ObservationWritten


class Log:
    def __init__(self) -> None:
        self.events: list[Envelope] = []

    async def publish(self, events: Sequence[Envelope]) -> list[int]:
        self.events.extend(events)
        return list(range(len(self.events) - len(events) + 1, len(self.events) + 1))


class Grounding:
    async def check(self, events: Sequence[ObservationWritten]) -> list[Rejected | None]:
        return [None for _ in events]


class Dead:
    def __init__(self) -> None:
        self.parked: list[Letter] = []

    async def park(self, letter: Letter) -> int:
        self.parked.append(letter)
        return len(self.parked)


class Progress:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def started(self, units: dict[tuple[str, str, str, str], int]) -> None:
        self.calls.append("started")

    async def finished(
        self, units: dict[tuple[str, str, str, str], int], last_seq: int = 0
    ) -> None:
        self.calls.append("finished")

    async def requeued(self, units: dict[tuple[str, str, str, str], int]) -> None:
        self.calls.append("requeued")


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


def posted(i: int, peer: str, text: str, reps: list[tuple[str, str]]) -> MessagePosted:
    return MessagePosted(
        workspace="w", session_id="s", message_id=f"m{i}", peer_id=peer, content=text,
        metadata={}, created_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC), token_count=12,
        representations=[Representation(observer=o, observed=d) for o, d in reps],
    )  # fmt: skip


def service(model, **kw):
    parts = {"log": Log(), "dead": Dead(), "progress": Progress()}
    svc = DeriverService(
        DeriverSettings(structured_attempts=2, **kw), model, parts["log"], Grounding(),
        parts["dead"], parts["progress"],
    )  # fmt: skip
    return svc, parts


async def test_local_reasoner_observations_are_published_then_messages_acked():
    svc, parts = service(LocalReasoner())
    s = Settled()
    await svc.deliver(
        [
            s.delivery(1, posted(1, "bob", "How was your week?", [("bob", "bob")])),
            s.delivery(2, posted(2, "alice", "I adopted a puppy named Rex yesterday.",
                                 [("alice", "alice"), ("bob", "alice")])),
        ]
    )  # fmt: skip
    assert s.acked == []  # nothing is acknowledged before its batches are done
    await svc.flush()
    facts = {(e.observer, e.content) for e in parts["log"].events}
    assert ("alice", "Alice adopted a puppy named Rex on 7 May 2023.") in facts
    assert ("bob", "Alice adopted a puppy named Rex on 7 May 2023.") in facts
    assert sorted(s.acked) == [1, 2]
    assert parts["progress"].calls.count("finished") == 3


async def test_a_batch_shows_the_preceding_turn_of_another_speaker_as_context():
    seen: list[str] = []

    def answer(request: ModelRequest):
        seen.append(request.messages[0].text())
        return tool_reply("record_observations", {"observations": []})

    svc, _ = service(ScriptedModel(otherwise=answer))
    s = Settled()
    await svc.deliver(
        [
            s.delivery(1, posted(1, "bob", "Where do you live now?", [("bob", "bob")])),
            s.delivery(2, posted(2, "alice", "Lisbon, since March.", [("alice", "alice")])),
        ]
    )
    await svc.flush()
    target, messages = parse_batch(next(t for t in seen if '"alice"' in t.split("\n")[0]))
    assert target == "alice"
    assert [(m.peer_id, m.is_context) for m in messages] == [("bob", True), ("alice", False)]


async def test_a_model_outage_hands_the_message_back_and_publishes_nothing():
    svc, parts = service(ScriptedModel(ModelUnavailable("overloaded", attempts=4)))
    s = Settled()
    await svc.deliver([s.delivery(7, posted(7, "a", "I love jazz.", [("a", "a")]))])
    await svc.flush()
    assert parts["log"].events == [] and s.acked == [] and s.naked == [7]
    assert parts["progress"].calls == ["started", "requeued"]


async def test_malformed_output_is_retried_then_parked_with_the_reason():
    bad = tool_reply("record_observations", {"facts": "not the schema"})
    svc, parts = service(ScriptedModel(bad, bad, text_reply("still no tool call")))
    s = Settled()
    await svc.deliver([s.delivery(3, posted(3, "a", "I love jazz.", [("a", "a")]))])
    await svc.flush()
    assert parts["log"].events == []
    (letter,) = parts["dead"].parked
    assert "malformed" in letter.reason and letter.detail["message_ids"] == ["m3"]
    assert (letter.workspace, letter.session_id, letter.stream_seq) == ("w", "s", 3)
    assert s.acked == [3]  # parked, not silently dropped: the dead letter holds it


@pytest.mark.parametrize(
    ("observation", "why"),
    [
        ({"fact": "Bob lives in Lisbon.", "source_message_index": 0, "source_span": "Where do you live now?"}, "context"),
        ({"fact": "Alice lives in Paris.", "source_message_index": 1, "source_span": "Paris, since March."}, "span"),
        ({"fact": "Alice lives in Lisbon.", "source_message_index": 9, "source_span": "Lisbon"}, "index"),
    ],
)  # fmt: skip
async def test_ungrounded_or_misattributed_observations_are_dropped(observation, why):
    reply = tool_reply("record_observations", {"observations": [observation]})
    svc, parts = service(ScriptedModel(lambda r: reply, lambda r: reply))
    s = Settled()
    await svc.deliver(
        [
            s.delivery(1, posted(1, "bob", "Where do you live now?", [])),
            s.delivery(2, posted(2, "alice", "Lisbon, since March.", [("alice", "alice")])),
        ]
    )
    await svc.flush()
    assert parts["log"].events == [], why


async def test_redelivery_yields_the_same_observation_ids():
    runs = []
    for _ in range(2):
        svc, parts = service(LocalReasoner())
        s = Settled()
        await svc.deliver(
            [s.delivery(1, posted(1, "a", "I moved to Lisbon last week.", [("a", "a")]))]
        )
        await svc.flush()
        runs.append([(e.event_id, e.observation_id) for e in parts["log"].events])
    assert runs[0] == runs[1] and runs[0]


class FlakyProgress(Progress):
    """Fails once when work finishes, as a database pool timeout would."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_next_finish = True

    async def finished(
        self, units: dict[tuple[str, str, str, str], int], last_seq: int = 0
    ) -> None:
        if self.fail_next_finish:
            self.fail_next_finish = False
            raise TimeoutError("pool timeout")
        await super().finished(units, last_seq)


async def test_a_transient_progress_failure_neither_loses_nor_repeats_work():
    progress = FlakyProgress()
    log = Log()
    svc = DeriverService(DeriverSettings(), LocalReasoner(), log, Grounding(), Dead(), progress)
    s = Settled()
    msg = posted(5, "a", "I moved to Lisbon last week.", [("a", "a")])
    await svc.deliver([s.delivery(5, msg)])
    await svc.flush()
    assert s.acked == [5] and s.naked == []
    assert progress.calls == ["started", "finished"]
    assert len(log.events) == 1


async def test_a_redelivered_message_after_a_failed_batch_is_processed_afresh():
    svc, parts = service(ScriptedModel(ModelUnavailable("down", attempts=1)))
    s = Settled()
    msg = posted(6, "a", "I moved to Lisbon last week.", [("a", "a")])
    await svc.deliver([s.delivery(6, msg)])
    await svc.flush()
    assert s.naked == [6]
    healthy = DeriverService(
        DeriverSettings(),
        LocalReasoner(),
        parts["log"],
        Grounding(),
        parts["dead"],
        parts["progress"],
    )
    await healthy.deliver([s.delivery(6, msg)])
    await healthy.flush()
    assert s.acked == [6] and len(parts["log"].events) == 1


class _FailsOn:
    """The local reasoner, except that it breaks on one message's text, as a bug would."""

    def __init__(self, poison: str) -> None:
        self.poison = poison
        self.local = LocalReasoner()

    async def complete(self, request: ModelRequest):
        if self.poison in request.messages[0].text():
            raise KeyError("the reasoner broke on this message")
        return await self.local.complete(request)


async def test_one_message_that_breaks_the_deriver_holds_back_none_of_its_batch():
    svc, parts = service(_FailsOn("POISON"))
    s = Settled()
    await svc.deliver(
        [
            s.delivery(1, posted(1, "a", "I adopted a puppy named Rex.", [("a", "a")])),
            s.delivery(2, posted(2, "a", "POISON here.", [("a", "a")])),
            s.delivery(3, posted(3, "a", "I moved to Lisbon in March.", [("a", "a")])),
        ]
    )
    await svc.flush()
    assert sorted(s.acked) == [1, 3]  # derived alone, the others go through
    assert s.naked == [2]  # the one at fault is tried again later
    assert {e.source_message_ids[0] for e in parts["log"].events} == {"m1", "m3"}
    assert parts["dead"].parked == []


async def test_a_message_failing_on_its_last_attempt_is_parked_with_the_reason():
    svc, parts = service(_FailsOn("POISON"), max_attempts=3)
    s = Settled(attempts={2: 3})
    await svc.deliver([s.delivery(2, posted(2, "a", "POISON here.", [("a", "a")]))])
    await svc.flush()
    assert s.acked == [2] and s.naked == []
    (letter,) = parts["dead"].parked
    assert "KeyError" in letter.reason and letter.stream_seq == 2 and letter.attempts == 3


async def test_an_outage_is_retried_however_often_it_was_delivered():
    svc, parts = service(ScriptedModel(ModelUnavailable("overloaded", attempts=4)), max_attempts=2)
    s = Settled(attempts={7: 50})
    await svc.deliver([s.delivery(7, posted(7, "a", "I love jazz.", [("a", "a")]))])
    await svc.flush()
    assert s.naked == [7] and parts["dead"].parked == []


async def test_reasoning_switched_off_is_not_derived_and_counts_no_work():
    model = ScriptedModel()  # any call would fail: none is scripted
    svc, parts = service(model)
    s = Settled()
    off = posted(1, "alice", "I adopted a puppy named Rex yesterday.", [("alice", "alice")])
    await svc.deliver([s.delivery(1, off.model_copy(update={"reasoning": False}))])
    await svc.flush()
    assert s.acked == [1]
    assert model.requests == [] and parts["log"].events == [] and parts["progress"].calls == []


async def test_the_applications_instructions_reach_the_deriver_prompt_per_batch():
    model = ScriptedModel(
        otherwise=lambda _: tool_reply("record_observations", {"observations": []})
    )
    svc, _ = service(model)
    s = Settled()
    told = posted(1, "alice", "I like tea.", [("alice", "alice")])
    told = told.model_copy(update={"instructions": "Only record food preferences."})
    plain = posted(2, "alice", "I like coffee.", [("alice", "alice")])
    await svc.deliver([s.delivery(1, told), s.delivery(2, plain)])
    await svc.flush()
    # Messages under other instructions never share a prompt.
    systems = sorted({r.system for r in model.requests})
    assert len(systems) == 2
    assert {r.messages[0].text().count("<message ") for r in model.requests} == {1}
    assert "Only record food preferences." not in systems[0]
    assert "Only record food preferences." in systems[1]
    assert systems[1].startswith(systems[0])

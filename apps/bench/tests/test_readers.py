import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fixtures import write_beam, write_locomo, write_longmemeval

from mnemo_bench.readers import read_beam, read_locomo, read_longmemeval
from mnemo_bench.readers.beam import flatten_ids
from mnemo_bench.readers.locomo import parse_evidence, parse_locomo_date

SHARED = Path(os.environ.get("MNEMO_DATASETS", Path(__file__).parents[3] / "../shared/datasets"))


def test_locomo_dates_and_evidence_defects() -> None:
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("soon") is None
    assert parse_evidence(["D8:6; D9:17"]) == ("D8:6", "D9:17")
    assert parse_evidence(["D:11:26", "D", "D1:3"]) == ("D11:26", "D1:3")
    assert parse_evidence(None) == ()


def test_locomo_reader(tmp_path: Path) -> None:
    (case,) = read_locomo(write_locomo(tmp_path))
    assert case.speakers == ("Ann", "Bob")
    assert [s.id for s in case.sessions] == ["session-1", "session-2"]
    turns = case.turns()
    assert turns[2].text == "[shares a photo: a dog on a beach]"
    assert turns[1].at == datetime(2023, 5, 8, 13, 57, tzinfo=UTC)
    by_cat = {q.category: q for q in case.questions}
    assert by_cat["2"].evidence == ("D2:1", "D1:2")
    assert by_cat["1"].evidence == ("D2:2",)  # "D9:9" points at no turn
    assert by_cat["1"].answer == "2023"
    assert by_cat["3"].evidence == ()
    assert by_cat["5"].answer == "Rex" and by_cat["5"].abstention


def test_beam_reader(tmp_path: Path) -> None:
    (case,) = read_beam(write_beam(tmp_path))
    assert case.id == "beam-1" and case.speakers == ("user", "assistant")
    assert [t.id for t in case.turns()] == ["0", "1", "2", "3", "4", "5"]
    assert case.sessions[1].turns[0].at == datetime(2024, 4, 2, tzinfo=UTC)
    q = {q.category: q for q in case.questions}
    assert q["event_ordering"].ordering == ("Budget app start", "Login", "Deployment")
    assert q["knowledge_update"].evidence == ("0", "4")
    assert q["abstention"].evidence == () and q["abstention"].answer == "Not mentioned."
    assert flatten_ids({"a": [1], "b": [1, 2]}) == ("1", "2")


def test_beam_prefers_truncated_chat(tmp_path: Path) -> None:
    root = write_beam(tmp_path)
    (root / "1" / "chat_trunecated.json").write_text(
        '[{"batch_number": 1, "turns": [[{"role": "user", "id": 9, "content": "short"}]]}]'
    )
    (case,) = read_beam(root)
    assert [t.id for t in case.turns()] == ["9"]


def test_longmemeval_reader(tmp_path: Path) -> None:
    cases = read_longmemeval(write_longmemeval(tmp_path))
    assert [c.id for c in cases] == ["q1", "q2_abs"]
    (q,) = cases[0].questions
    assert q.evidence == ("s-a:0",)
    assert q.asked_at == datetime(2023, 5, 30, 10, 0, tzinfo=UTC)
    assert cases[0].sessions[1].at == datetime(2023, 5, 21, 9, 0, tzinfo=UTC)
    assert cases[1].questions[0].abstention


@pytest.mark.skipif(not (SHARED / "locomo").exists(), reason="shared datasets not present")
def test_real_shared_files() -> None:
    locomo = read_locomo(SHARED / "locomo" / "locomo-dev5.json")
    assert len(locomo) == 5
    assert sum(len(c.turns()) for c in locomo) == 2760
    assert sum(len(c.questions) for c in locomo) == 999
    beam = read_beam(SHARED / "beam-100k")
    assert len(beam) == 10 and all(len(c.questions) == 20 for c in beam)
    known = {t.id for t in beam[0].turns()}
    assert all(set(q.evidence) <= known for q in beam[0].questions)

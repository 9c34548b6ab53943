"""Each stage of the training-data pipeline on the small hand-written corpus."""

from __future__ import annotations

from pathlib import Path

from corpus_fixtures import write_benchmarks, write_corpus

from mnemo_deriver.contract import DeriverOutput, ExtractedObservation, render_batch
from mnemo_train.corpus import BadLine, Conversation, read_corpus
from mnemo_train.decontaminate import BenchmarkIndex, benchmark_cases, decontaminate
from mnemo_train.dedup import deduplicate
from mnemo_train.filters import apply_filters
from mnemo_train.grounding import ground
from mnemo_train.strata import sample, stratum


def _read(tmp: Path) -> tuple[list[Conversation], list[BadLine]]:
    items = list(read_corpus(write_corpus(tmp)))
    return [i for i in items if isinstance(i, Conversation)], [
        i for i in items if isinstance(i, BadLine)
    ]


def test_lines_that_are_not_conversations_are_counted_with_why(tmp_path: Path) -> None:
    good, bad = _read(tmp_path)
    assert len(good) == 9  # the repeated "work" line is read; the pipeline refuses its id
    assert [b.line for b in bad] == [9, 10]
    assert "not JSON" in bad[0].reason and "messages" in bad[1].reason


def test_exact_then_near_duplicates_are_dropped(tmp_path: Path) -> None:
    good, _ = _read(tmp_path)
    kept, dropped = deduplicate(good[:4])
    assert [c.id for c in kept] == ["chat", "work"]
    assert {(d.id, d.of, d.kind) for d in dropped} == {
        ("chat-copy", "chat", "exact"),
        ("chat-near", "chat", "near"),
    }


def test_filters_name_the_rule_that_dropped_each(tmp_path: Path) -> None:
    good, _ = _read(tmp_path)
    kept, dropped = apply_filters(good)
    assert dict(dropped) == {"short": "too_short", "spam": "low_quality", "story": "role_play"}
    assert "chat" in {c.id for c in kept}


def test_a_conversation_copied_from_a_benchmark_is_dropped_with_its_source(tmp_path: Path) -> None:
    good, _ = _read(tmp_path)
    index = BenchmarkIndex(benchmark_cases(write_benchmarks(tmp_path)))
    kept, dropped = decontaminate(good, index)
    assert [(d.id, d.benchmark, d.source) for d in dropped] == [("copied", "locomo", "conv-b")]
    assert dropped[0].shared >= 2
    assert "chat" in {c.id for c in kept}


def test_strata_and_sampling_cover_every_stratum(tmp_path: Path) -> None:
    good, _ = _read(tmp_path)
    chat, work = good[0], good[3]
    assert stratum(chat) == "general/short/high" and stratum(work) == "work/short/high"
    many = [chat.model_copy(update={"id": f"c{i}"}) for i in range(5)] + [work]
    taken, sizes, picked = sample(many, budget=2, seed=1)
    assert sizes == {"general/short/high": 5, "work/short/high": 1}
    assert picked == {"general/short/high": 1, "work/short/high": 1}
    assert "work" in {c.id for c in taken}
    assert sample(many, budget=None)[0] == many


def test_grounding_keeps_verbatim_spans_of_the_targets_own_messages() -> None:
    from datetime import UTC, datetime

    from mnemo_deriver.contract import BatchMessage

    at = datetime(2024, 3, 11, tzinfo=UTC)
    batch = render_batch(
        "ann",
        [
            BatchMessage(0, "bob", "Did you get the dog?", at, is_context=True),
            BatchMessage(1, "ann", "Yes! I adopted Rex \u2014 a \u201cscruffy\u201d terrier.", at),
        ],
    )
    obs = [
        ExtractedObservation(
            fact="Ann adopted Rex.",
            source_message_index=1,
            source_span='I ADOPTED Rex - a "scruffy"',
        ),
        ExtractedObservation(fact="Out of range.", source_message_index=7, source_span="x"),
        ExtractedObservation(fact="Bob asked.", source_message_index=0, source_span="Did you get"),
        ExtractedObservation(
            fact="Not said.", source_message_index=1, source_span="I adopted a cat"
        ),
        ExtractedObservation(fact=" ", source_message_index=1, source_span="Yes"),
    ]
    kept, dropped = ground(batch, DeriverOutput(observations=obs))
    assert [o.fact for o in kept] == ["Ann adopted Rex."]
    assert dropped == {
        "index_out_of_range": 1,
        "not_the_targets_message": 1,
        "span_not_in_message": 1,
        "empty_fact": 1,
    }

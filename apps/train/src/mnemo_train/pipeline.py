"""``mnemo train deriver-data``: the eight stages, each counted in the report, resumable.

Stages 1-4 write the conversations they keep (and what they dropped, with why) to
``stages/``; a stage the report marks done is read back instead of being run again. Teacher
answers and judge scores are appended one conversation / batch at a time, so a crash loses at
most the call in flight.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mnemo_bench.state import RunState
from mnemo_deriver.contract import ExtractedObservation
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.models import ChatModel, MalformedOutput, structured
from mnemo_runtime.tokens import TokenCounter
from mnemo_train.agreement import (
    KAPPA_THRESHOLD,
    JudgeScores,
    accepted,
    bin_score,
    judge_request,
    kappa,
)
from mnemo_train.corpus import BadLine, Conversation, read_corpus
from mnemo_train.decontaminate import MIN_SHARED, BenchmarkIndex, N, benchmark_cases, decontaminate
from mnemo_train.dedup import deduplicate
from mnemo_train.filters import RULES, apply_filters
from mnemo_train.grounding import ground
from mnemo_train.records import sft_record
from mnemo_train.strata import sample
from mnemo_train.teacher import TeacherBatch, teach


@dataclass(frozen=True)
class Options:
    benchmarks: Path
    near_duplicate: float = 0.8
    ngram: int = N
    min_shared: int = MIN_SHARED
    budget: int | None = None
    seed: int = 0
    kappa_threshold: float = KAPPA_THRESHOLD
    deriver: DeriverSettings = field(default_factory=DeriverSettings)


class Report:
    """``report.json``: per stage, its counts and whether it is done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = (
            json.loads(path.read_text()) if path.exists() else {"stages": {}}
        )

    def done(self, stage: str) -> bool:
        return bool(self.data["stages"].get(stage, {}).get("done"))

    def record(self, stage: str, counts: dict[str, Any], done: bool = True) -> None:
        self.data["stages"][stage] = {**counts, "done": done}
        self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2))
        tmp.replace(self.path)


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    tmp.replace(path)


def _read_conversations(path: Path) -> list[Conversation]:
    return [Conversation.model_validate_json(line) for line in path.read_text().splitlines()]


class Pipeline:
    """The training-data run in ``out``."""

    def __init__(
        self,
        out: Path,
        options: Options,
        teacher: ChatModel,
        judges: tuple[ChatModel, ChatModel] | None,
    ) -> None:
        self.out = out
        self.options = options
        self.teacher = teacher
        self.judges = judges
        out.mkdir(parents=True, exist_ok=True)
        self.report = Report(out / "report.json")

    def _stage(self, name: str, run: Any) -> list[Conversation]:
        """Run a conversation stage once; read its output back when the report marks it done."""
        path = self.out / "stages" / f"{name}.jsonl"
        if self.report.done(name) and path.exists():
            return _read_conversations(path)
        kept, counts, dropped = run()
        _write_jsonl(self.out / "stages" / f"{name}.dropped.jsonl", dropped)
        _write_jsonl(path, [c.model_dump(mode="json") for c in kept])
        self.report.record(name, counts)
        return list(kept)

    def _read(self, corpus: Path) -> Any:
        conversations: list[Conversation] = []
        bad: list[dict[str, Any]] = []
        ids: set[str] = set()
        for item in read_corpus(corpus):
            if isinstance(item, BadLine):
                bad.append({"line": item.line, "reason": item.reason})
            elif item.id in ids:
                bad.append({"id": item.id, "reason": "repeated id"})
            else:
                ids.add(item.id)
                conversations.append(item)
        counts = {
            "conversations": len(conversations),
            "not_a_conversation": len(bad),
            "examples": bad[:20],
        }
        return conversations, counts, bad

    def _dedup(self, conversations: list[Conversation]) -> Any:
        kept, dropped = deduplicate(conversations, self.options.near_duplicate)
        kinds = Counter(d.kind for d in dropped)
        counts = {
            "in": len(conversations),
            "exact": kinds["exact"],
            "near": kinds["near"],
            "out": len(kept),
        }
        return kept, counts, [asdict(d) for d in dropped]

    def _filter(self, conversations: list[Conversation]) -> Any:
        kept, dropped = apply_filters(conversations)
        rules = Counter(rule for _, rule in dropped)
        counts = {
            "in": len(conversations),
            **{name: rules[name] for name, _ in RULES},
            "out": len(kept),
        }
        return kept, counts, [{"id": i, "rule": r} for i, r in dropped]

    def _decontaminate(self, conversations: list[Conversation]) -> Any:
        sources = benchmark_cases(self.options.benchmarks)
        index = BenchmarkIndex(sources, self.options.ngram)
        kept, dropped = decontaminate(conversations, index, self.options.min_shared)
        listed = [asdict(d) for d in dropped]
        counts = {
            "in": len(conversations),
            "benchmark_conversations": len(sources),
            "benchmarks": sorted({b for b, _ in sources}),
            "ngram": self.options.ngram,
            "min_shared": self.options.min_shared,
            "dropped": len(dropped),
            "out": len(kept),
            "dropped_list": listed,
        }
        return kept, counts, listed

    def _stratify(self, conversations: list[Conversation]) -> Any:
        kept, sizes, taken = sample(conversations, self.options.budget, self.options.seed)
        counts = {"in": len(conversations), "strata": sizes, "sampled": taken, "out": len(kept)}
        return kept, counts, []

    async def _teach(self, conversations: list[Conversation]) -> list[TeacherBatch]:
        state = RunState(self.out / "stages", "5-teacher.jsonl")
        count = TokenCounter()
        found: list[TeacherBatch] = []
        for c in conversations:
            row = state.result(c.id)
            if row is None:
                taught = await teach(self.teacher, c, self.options.deriver, count)
                state.append({"key": c.id, "batches": [t.to_row() for t in taught]})
            else:
                taught = [TeacherBatch.from_row(r) for r in row["batches"]]
            found += taught
        malformed = sum(t.output is None for t in found)
        self.report.record(
            "5-teacher",
            {
                "conversations": len(conversations),
                "batches": len(found),
                "malformed": malformed,
                "proposed": sum(len(t.output.observations) for t in found if t.output is not None),
            },
        )
        return found

    def _ground(self, taught: list[TeacherBatch]) -> dict[str, list[ExtractedObservation]]:
        grounded: dict[str, list[ExtractedObservation]] = {}
        dropped: Counter[str] = Counter()
        for t in taught:
            if t.output is None:
                continue
            grounded[t.key], why = ground(t.batch, t.output)
            dropped.update(why)
        kept = sum(len(v) for v in grounded.values())
        self.report.record(
            "6-grounding",
            {
                "proposed": kept + sum(dropped.values()),
                "kept": kept,
                **{k: dropped[k] for k in sorted(dropped)},
            },
        )
        return grounded

    async def _judge(
        self, taught: list[TeacherBatch], grounded: dict[str, list[ExtractedObservation]]
    ) -> bool:
        if self.judges is None:
            self.report.record("7-judges", {"skipped": "no judges (--no-judges)", "accepted": True})
            return True
        state = RunState(self.out / "stages", "7-judges.jsonl")
        faults: Counter[str] = Counter()
        pairs: dict[str, tuple[list[int], list[int]]] = {
            "atomicity": ([], []),
            "redundancy": ([], []),
        }
        for t in taught:
            obs = grounded.get(t.key, [])
            if not obs:
                continue
            row = state.result(t.key)
            if row is None:
                scores = [
                    await self._scores(j, t.batch, obs, name, faults)
                    for name, j in zip(("a", "b"), self.judges, strict=True)
                ]
                row = {"key": t.key, "a": scores[0], "b": scores[1], "faults": dict(faults)}
                state.append(row)
                faults.clear()
            for a, b in zip(row["a"], row["b"], strict=True):
                if a is None or b is None:
                    continue
                for axis, i in (("atomicity", 0), ("redundancy", 1)):
                    pairs[axis][0].append(bin_score(a[i]))
                    pairs[axis][1].append(bin_score(b[i]))
        totals: Counter[str] = Counter()
        for r in state.rows():
            totals.update(r.get("faults", {}))
        k_atom, k_red = kappa(*pairs["atomicity"]), kappa(*pairs["redundancy"])
        ok = accepted(k_atom, k_red, self.options.kappa_threshold)
        self.report.record(
            "7-judges",
            {
                "scored_items": len(pairs["atomicity"][0]),
                **dict(totals),
                "kappa_atomicity": k_atom,
                "kappa_redundancy": k_red,
                "threshold": self.options.kappa_threshold,
                "accepted": ok,
            },
        )
        return ok

    async def _scores(
        self,
        judge: ChatModel,
        batch: str,
        obs: list[ExtractedObservation],
        name: str,
        faults: Counter[str],
    ) -> list[list[float] | None]:
        """Per observation, [atomicity, redundancy] from one judge; None where it gave none."""
        try:
            answer = await structured(judge, judge_request(batch, obs), JudgeScores)
        except MalformedOutput:
            faults[f"judge_{name}_malformed"] += 1
            return [None] * len(obs)
        out: list[list[float] | None] = [None] * len(obs)
        for s in answer.scores:
            if 0 <= s.observation < len(obs) and out[s.observation] is None:
                out[s.observation] = [s.atomicity, s.redundancy]
            else:
                faults[f"judge_{name}_bad_number"] += 1
        faults[f"judge_{name}_unscored"] += sum(v is None for v in out)
        return out

    def _records(
        self, taught: list[TeacherBatch], grounded: dict[str, list[ExtractedObservation]], ok: bool
    ) -> None:
        if not ok:
            _write_jsonl(self.out / "sft.jsonl", [])
            self.report.record(
                "8-records", {"written": 0, "rejected": "both kappas below threshold"}
            )
            return
        records = [sft_record(t.key, t.batch, grounded[t.key]) for t in taught if t.key in grounded]
        _write_jsonl(self.out / "sft.jsonl", records)
        self.report.record(
            "8-records",
            {
                "written": len(records),
                "empty_targets": sum(not grounded[t.key] for t in taught if t.key in grounded),
            },
        )

    async def run(self, corpus: Path) -> dict[str, Any]:
        """Every stage in order; the report's data."""
        conversations = self._stage("0-read", lambda: self._read(corpus))
        conversations = self._stage("1-dedup", lambda: self._dedup(conversations))
        conversations = self._stage("2-filters", lambda: self._filter(conversations))
        conversations = self._stage("3-decontamination", lambda: self._decontaminate(conversations))
        conversations = self._stage("4-strata", lambda: self._stratify(conversations))
        taught = await self._teach(conversations)
        grounded = self._ground(taught)
        ok = await self._judge(taught, grounded)
        self._records(taught, grounded, ok)
        self.report.data["status"] = "accepted" if ok else "rejected"
        self.report.save()
        return self.report.data

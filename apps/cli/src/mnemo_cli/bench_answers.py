"""The offline chat on LoCoMo: paraphrased questions and the benchmark's own single-hop ones.

python -m mnemo_cli.bench_answers [--split tuning|held-out] [--qa N] prints JSON. Against the
stack ``make up`` started (or MNEMO_URL): each conversation is ingested through the SDK into a
workspace of its own, memory settles, then every question is asked through ``peer.chat`` at the
``minimal`` level. Paraphrased questions (``paraphrases.json``, written for this measure: their
words differ from the conversation's) count as answered when the answer holds one of the
expected phrases; LoCoMo's single-hop questions (category 4, the first ``--qa`` of each) when
the answer holds every content word of the gold answer.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

from honcho import Honcho
from honcho.api_types import MessageCreateParams

from mnemo_cli.local import gateway_url
from mnemo_cli.locomo import datasets_dir, load, turn_times

SPLITS = {"tuning": ["conv-26", "conv-30"], "held-out": ["conv-41", "conv-42", "conv-43"]}
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "and",
        "or",
        "for",
        "with",
        "her",
        "his",
        "their",
        "is",
        "was",
        "by",
    ]
)


def _peer(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", name).lower()


def _ingest(h: Honcho, conv: Any) -> None:
    a, b = _peer(conv.speaker_a), _peer(conv.speaker_b)
    for s in conv.sessions:
        session = h.session(f"s{s.number}")
        session.add_peers([h.peer(a), h.peer(b)])
        msgs = [
            MessageCreateParams(peer_id=_peer(t.speaker), content=t.text, created_at=when)
            for t, when in zip(s.turns, turn_times(s), strict=True)
        ]
        for i in range(0, len(msgs), 100):
            session.add_messages(msgs[i : i + 100])


def _settle(h: Honcho, timeout: float = 900.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = h.queue_status()
        if st.total_work_units and not st.pending_work_units and not st.in_progress_work_units:
            return
        time.sleep(1)
    raise SystemExit("memory did not settle")


def _holds_gold(answer: str, gold: str) -> bool:
    words = {w for w in _WORD.findall(gold.lower()) if w not in _STOP}
    return bool(words) and words <= set(_WORD.findall(answer.lower()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=list(SPLITS), default="tuning")
    ap.add_argument("--qa", type=int, default=40)
    args = ap.parse_args()
    paraphrases = json.loads((Path(__file__).parent / "paraphrases.json").read_text())
    raw = {
        c["sample_id"]: c
        for c in json.loads((datasets_dir() / "locomo" / "locomo-dev5.json").read_text())
    }
    convs = {c.sample_id: c for c in load(datasets_dir() / "locomo" / "locomo-dev5.json")}
    out: dict[str, Any] = {"split": args.split, "conversations": {}}
    for cid in SPLITS[args.split]:
        conv = convs[cid]
        h = Honcho(
            base_url=gateway_url(),
            workspace_id=f"answers-{cid}-{uuid.uuid4().hex[:6]}",
            timeout=120,
        )
        _ingest(h, conv)
        _settle(h)
        names = {_peer(conv.speaker_a), _peer(conv.speaker_b)}
        rows = []
        for p in paraphrases.get(cid, []):
            got = h.peer(p["peer"]).chat(p["q"], reasoning_level="minimal") or ""
            ok = any(e in got.lower() for e in p["expect"])
            rows.append({"kind": "paraphrase", "q": p["q"], "answer": got[:200], "ok": ok})
        qa = [q for q in raw[cid]["qa"] if q.get("category") == 4][: args.qa]
        for q in qa:
            about = next((n for n in names if n in q["question"].lower()), _peer(conv.speaker_a))
            got = h.peer(about).chat(q["question"], reasoning_level="minimal") or ""
            rows.append(
                {
                    "kind": "single-hop",
                    "q": q["question"],
                    "gold": str(q["answer"]),
                    "answer": got[:200],
                    "ok": _holds_gold(got, str(q["answer"])),
                }
            )
        out["conversations"][cid] = rows
    for kind in ("paraphrase", "single-hop"):
        got = [r["ok"] for rows in out["conversations"].values() for r in rows if r["kind"] == kind]
        out[kind] = {"n": len(got), "answered": sum(got)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""A small hand-written corpus: every stage of the pipeline has something to do with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _conv(
    cid: str, turns: list[tuple[str, str]], domain: str = "general", **extra: Any
) -> dict[str, Any]:
    return {
        "id": cid,
        "domain": domain,
        "messages": [
            {"speaker": s, "text": t, "time": f"2024-03-11T09:{i:02d}:00+00:00"}
            for i, (s, t) in enumerate(turns)
        ],
        **extra,
    }


CHAT = [
    ("Ann", "Morning Bob! I finally adopted a dog last weekend, a scruffy terrier called Rex."),
    ("Bob", "No way, congratulations! How is he settling in at your flat?"),
    (
        "Ann",
        "He is great, though he barks at the postman. I work night shifts at the hospital, so he keeps me company.",
    ),
    (
        "Bob",
        "That sounds lovely. I started a pottery class on Thursdays and my sister Eva joins me.",
    ),
    (
        "Ann",
        "I would love to try pottery some day. My brother Tom made me a mug last year and I still use it.",
    ),
    ("Bob", "You should come along next week then."),
]

WORK = [
    ("Lee", "I moved to Lisbon in January for a new job as a data engineer at a small startup."),
    ("Max", "Congrats! How do you like the city so far, and the new team?"),
    ("Lee", "I love the food, but my Portuguese is still terrible. I take lessons twice a week."),
    ("Max", "Keep at it. I learned Spanish the same way when I lived in Madrid."),
    (
        "Lee",
        "My manager says I can work remotely on Fridays, which helps since I commute by ferry.",
    ),
    ("Max", "Ferry commutes sound fun, at least in summer."),
]

# The benchmark conversation the test's datasets folder holds (LoCoMo format).
BENCHMARK_TURNS = [
    (
        "Caro",
        "I went to a support group yesterday and the stories there were so inspiring to me and everyone.",
    ),
    ("Mel", "That is wonderful to hear, I am really proud of you for going there and sharing."),
    (
        "Caro",
        "Thanks, I am thinking about studying counseling next year so that I can help people like me.",
    ),
    ("Mel", "You would be great at it, you always listen so well to everyone around you."),
]


def corpus_lines() -> list[str]:
    near = [(s, t.replace("scruffy", "scrappy")) for s, t in CHAT]
    shouty = [(s, t.upper().replace("  ", " ")) for s, t in CHAT]
    rows: list[Any] = [
        _conv("chat", CHAT),
        _conv("chat-copy", shouty),  # the same text after normalisation (case)
        _conv("chat-near", near),  # one word changed
        _conv("work", WORK, domain="work"),
        _conv("short", [("Ann", "Hi!"), ("Bob", "Hello there.")]),
        _conv("spam", [("Ann", "lol lol lol lol"), ("Bob", "lol lol lol lol")] * 10),
        _conv(
            "story",
            [
                (
                    "Kai",
                    "*smiles and draws my sword* I am Sir Kai of the northern keep, sworn to the crown.",
                ),
                (
                    "Ivy",
                    "Stay in character! *bows deeply* I am the queen's spymaster and I trust no knight.",
                ),
                (
                    "Kai",
                    "*laughs* Then you will trust me least of all, for I have betrayed two kings already.",
                ),
                (
                    "Ivy",
                    "*narrows eyes* Tell me of the second king, and perhaps I will spare your life tonight.",
                ),
            ],
        ),
        _conv("copied", BENCHMARK_TURNS),
    ]
    lines = [json.dumps(r) for r in rows]
    lines += ["this is not json", json.dumps({"id": "no-messages"}), json.dumps(rows[3])]
    return lines


def write_corpus(tmp: Path) -> Path:
    path = tmp / "corpus.jsonl"
    path.write_text("\n".join(corpus_lines()) + "\n")
    return path


def write_benchmarks(tmp: Path) -> Path:
    root = tmp / "datasets"
    (root / "locomo").mkdir(parents=True, exist_ok=True)
    item = {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Caro",
            "speaker_b": "Mel",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": s, "dia_id": f"D1:{i + 1}", "text": t}
                for i, (s, t) in enumerate(BENCHMARK_TURNS)
            ],
        },
        "qa": [],
    }
    (root / "locomo" / "bench.json").write_text(json.dumps([item]))
    return root

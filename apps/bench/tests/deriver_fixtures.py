"""A small hand-made conversation in LoCoMo's format, with reference facts per session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LOCOMO_WITH_FACTS: list[dict[str, Any]] = [
    {
        "sample_id": "conv-t",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Ann",
                    "dia_id": "D1:1",
                    "text": "Hi Bob! I adopted a dog named Rex yesterday.",
                },
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I started a pottery class."},
                {
                    "speaker": "Ann",
                    "dia_id": "D1:3",
                    "text": "I work as a nurse in Porto. How is the class?",
                },
                {
                    "speaker": "Bob",
                    "dia_id": "D1:4",
                    "text": "Fun. My sister Eva joins me on Fridays.",
                },
            ],
            "session_2_date_time": "10:00 am on 1 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "I moved to Lisbon last week."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Wow! I am learning to surf."},
            ],
        },
        "observation": {
            "session_1_observation": {
                "Ann": [
                    ["Ann adopted a dog named Rex.", "D1:1"],
                    ["Ann works as a nurse in Porto.", "D1:3"],
                    ["Ann plays the cello in an orchestra.", "D1:3"],
                ],
                "Bob": [
                    ["Bob started a pottery class.", "D1:2"],
                    ["Bob's sister Eva joins him at pottery on Fridays.", ["D1:4"]],
                ],
            },
            "session_2_observation": {
                "Bob": [["Bob moved to Lisbon.", "D2:1"]],
                "Ann": [["Ann is learning to surf.", "D2:2"]],
            },
        },
        "qa": [],
    }
]


def write_locomo_with_facts(tmp: Path) -> Path:
    path = tmp / "locomo-facts.json"
    path.write_text(json.dumps(LOCOMO_WITH_FACTS))
    return path

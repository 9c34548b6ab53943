"""Small hand-made datasets in each benchmark's published format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LOCOMO: list[dict[str, Any]] = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I started pottery."},
                {
                    "speaker": "Ann",
                    "dia_id": "D1:3",
                    "text": "",
                    "img_url": ["u"],
                    "blip_caption": "a dog on a beach",
                },
            ],
            "session_2_date_time": "10:00 am on 1 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "My pottery class moved to Friday."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Rex learned to swim."},
            ],
            # more dates than sessions, as in conv-26
            "session_3_date_time": "9:00 am on 2 July, 2023",
        },
        "qa": [
            {
                "question": "What is Ann's dog called?",
                "answer": "Rex",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "When does Bob do pottery?",
                "answer": "Friday",
                "evidence": ["D2:1; D1:2"],
                "category": 2,
            },
            {
                "question": "What did Ann share?",
                "answer": 2023,
                "evidence": ["D:2:2", "D9:9"],
                "category": 1,
            },
            {"question": "No evidence here?", "answer": "x", "category": 3},
            {
                "question": "What is Bob's dog called?",
                "adversarial_answer": "Rex",
                "evidence": ["D1:1"],
                "category": 5,
            },
        ],
    }
]

BEAM_CHAT: list[dict[str, Any]] = [
    {
        "batch_number": 1,
        "time_anchor": "March-15-2024",
        "turns": [
            [
                {
                    "role": "user",
                    "id": 0,
                    "content": "I started a budget app in Flask.",
                    "time_anchor": "March-15-2024",
                },
                {"role": "assistant", "id": 1, "content": "Great, let's plan it."},
            ],
            [
                {"role": "user", "id": 2, "content": "I added login today."},
                {"role": "assistant", "id": 3, "content": "Nice."},
            ],
        ],
    },
    {
        "batch_number": 2,
        "time_anchor": None,
        "turns": [
            [
                {
                    "role": "user",
                    "id": 4,
                    "content": "Now deploying to a VPS.",
                    "time_anchor": "April-02-2024",
                },
                {"role": "assistant", "id": 5, "content": "Use gunicorn."},
            ],
        ],
    },
]

BEAM_QUESTIONS: dict[str, list[dict[str, Any]]] = {
    "event_ordering": [
        {
            "question": "In what order did I work on things?",
            "answer": "a, b, c",
            "source_chat_ids": [0, 2, 4],
            "rubric": ["Budget app start", "Login", "Deployment"],
        }
    ],
    "knowledge_update": [
        {
            "question": "Where is it deployed?",
            "answer": "A VPS",
            "source_chat_ids": {"original_info": [0], "updated_info": [4]},
            "rubric": ["mentions VPS", "mentions gunicorn"],
        }
    ],
    "abstention": [
        {
            "question": "What is my cat's name?",
            "ideal_response": "Not mentioned.",
            "rubric": ["says it is not known"],
        }
    ],
}

LONGMEMEVAL: list[dict[str, Any]] = [
    {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "What colour is my car?",
        "answer": "red",
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["s-a", "s-b"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 09:00"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I bought a red car.", "has_answer": True},
                {"role": "assistant", "content": "Congrats!"},
            ],
            [
                {"role": "user", "content": "Recommend a podcast."},
                {"role": "assistant", "content": "Try one about history."},
            ],
        ],
        "answer_session_ids": ["s-a"],
    },
    {
        "question_id": "q2_abs",
        "question_type": "single-session-user",
        "question": "What colour is my bike?",
        "answer": "not mentioned",
        "question_date": "2023/05/30 (Tue) 10:00",
        "haystack_session_ids": ["s-c"],
        "haystack_dates": ["2023/05/22 (Mon) 08:00"],
        "haystack_sessions": [[{"role": "user", "content": "Hello."}]],
        "answer_session_ids": [],
    },
]


def write_locomo(tmp: Path) -> Path:
    path = tmp / "locomo.json"
    path.write_text(json.dumps(LOCOMO))
    return path


def write_beam(tmp: Path) -> Path:
    chat = tmp / "beam" / "1"
    chat.mkdir(parents=True)
    (chat / "chat.json").write_text(json.dumps(BEAM_CHAT))
    (chat / "probing_questions.json").write_text(json.dumps(BEAM_QUESTIONS))
    return tmp / "beam"


def write_longmemeval(tmp: Path) -> Path:
    path = tmp / "longmemeval_s.json"
    path.write_text(json.dumps(LONGMEMEVAL))
    return path

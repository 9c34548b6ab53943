"""Stage 8: SFT records in the chat format a served deriver answers in.

Each record is the Deriver Prompt (system), the rendered batch with the subject peer marked
(user) and the grounded observations as the arguments of the deriver's forced tool call
(assistant), with the tool's schema: the request the deriver sends, and the answer it expects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mnemo_deriver.contract import DERIVER_PROMPT, DeriverOutput, ExtractedObservation
from mnemo_deriver.domain import TOOL


def sft_record(
    key: str, batch: str, observations: Sequence[ExtractedObservation]
) -> dict[str, Any]:
    """One training example."""
    arguments = DeriverOutput(observations=list(observations)).model_dump_json()
    return {
        "id": key,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": TOOL.name,
                    "description": TOOL.description,
                    "parameters": TOOL.input_schema,
                },
            }
        ],
        "messages": [
            {"role": "system", "content": DERIVER_PROMPT},
            {"role": "user", "content": batch},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": TOOL.name, "arguments": arguments},
                    }
                ],
            },
        ],
    }


def prompt_and_target(record: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The messages before the answer, and the answer's JSON (the only tokens with a loss)."""
    *prompt, answer = record["messages"]
    return prompt, str(answer["tool_calls"][0]["function"]["arguments"])


def target_observations(record: dict[str, Any]) -> DeriverOutput:
    """The observations a record teaches."""
    return DeriverOutput.model_validate(json.loads(prompt_and_target(record)[1]))

"""Stage 6: keep an observation only if its span is verbatim in the message it cites.

The normalisation is the representation store's (``mnemo_schema.grounding.normalise``):
Unicode NFKC, curly quotes and dashes folded to ASCII, runs of whitespace to one space, case
folded. The cited message must also be one the target wrote, not a context-only turn.
"""

from __future__ import annotations

from collections import Counter

from mnemo_deriver.contract import DeriverOutput, ExtractedObservation, parse_batch
from mnemo_schema.grounding import span_in_message


def ground(batch: str, output: DeriverOutput) -> tuple[list[ExtractedObservation], Counter[str]]:
    """The grounded observations of one teacher answer, and why the others were dropped."""
    target, messages = parse_batch(batch)
    by_index = {m.index: m for m in messages}
    kept: list[ExtractedObservation] = []
    dropped: Counter[str] = Counter()
    for obs in output.observations:
        m = by_index.get(obs.source_message_index)
        if m is None:
            dropped["index_out_of_range"] += 1
        elif m.is_context or m.peer_id != target:
            dropped["not_the_targets_message"] += 1
        elif not obs.fact.strip():
            dropped["empty_fact"] += 1
        elif not span_in_message(obs.source_span, m.content):
            dropped["span_not_in_message"] += 1
        else:
            kept.append(obs)
    return kept, dropped

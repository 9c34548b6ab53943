"""One batch through the model: the request, the raw answer and what survives grounding.

The service runs every batch through ``extract``; the deriver benchmark runs it too, so what is
measured is exactly what the product does, raw answer included (the benchmark scores the
grounding of what the model proposed, not only of what was kept).
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo_deriver.batching import Batch
from mnemo_deriver.contract import DeriverOutput
from mnemo_deriver.domain import Dropped, Prepared, observations, prepare, request
from mnemo_runtime.models import ChatModel, structured
from mnemo_schema.observations import ObservationWritten


@dataclass(frozen=True)
class Extraction:
    """A batch as shown to the model, the model's validated answer, and its grounded part."""

    prepared: Prepared
    output: DeriverOutput
    events: list[ObservationWritten]
    dropped: list[Dropped]


async def extract(model: ChatModel, batch: Batch, max_tokens: int, attempts: int) -> Extraction:
    """One schema-constrained call for ``batch``; ``MalformedOutput`` if it stays invalid."""
    prepared = prepare(batch)
    output = await structured(
        model,
        request(prepared, max_tokens, batch.key.instructions),
        DeriverOutput,
        attempts=attempts,
    )
    events, dropped = observations(batch, prepared, output)
    return Extraction(prepared, output, events, dropped)

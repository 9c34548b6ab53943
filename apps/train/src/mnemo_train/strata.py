"""Stage 4: strata by domain, length and fact density; sampling across them.

Fact density is estimated before any model runs: the share of messages in which the speaker
says something about themselves (a first-person word). Sampling takes conversations from the
strata in turn, so that a budget smaller than the corpus still covers every stratum.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from mnemo_train.corpus import Conversation

_SELF = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)


def length_bucket(c: Conversation) -> str:
    n = len(c.messages)
    return "short" if n < 8 else "medium" if n < 32 else "long"


def density_bucket(c: Conversation) -> str:
    share = sum(1 for m in c.messages if _SELF.search(m.text)) / len(c.messages)
    return "low" if share < 0.3 else "mid" if share < 0.6 else "high"


def stratum(c: Conversation) -> str:
    """``domain/length/density``."""
    return f"{c.domain}/{length_bucket(c)}/{density_bucket(c)}"


def sample(
    conversations: Sequence[Conversation], budget: int | None, seed: int = 0
) -> tuple[list[Conversation], dict[str, int], dict[str, int]]:
    """Up to ``budget`` conversations taken round-robin over the strata (each shuffled by
    ``seed``); also the size of each stratum and how many were taken from it."""
    strata: dict[str, list[Conversation]] = {}
    for c in conversations:
        strata.setdefault(stratum(c), []).append(c)
    rng = random.Random(seed)
    queues = {k: rng.sample(v, len(v)) for k, v in sorted(strata.items())}
    limit = len(conversations) if budget is None else min(budget, len(conversations))
    taken: list[Conversation] = []
    while len(taken) < limit:
        for queue in queues.values():
            if queue and len(taken) < limit:
                taken.append(queue.pop())
    chosen = {c.id for c in taken}
    picked = {k: sum(1 for c in v if c.id in chosen) for k, v in sorted(strata.items())}
    # Keep the corpus order, so that later stages are reproducible whatever the strata.
    return (
        [c for c in conversations if c.id in chosen],
        {k: len(v) for k, v in sorted(strata.items())},
        picked,
    )

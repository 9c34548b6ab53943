"""Packing a context to a token budget and rendering a representation. No I/O.

Packing (spec §7): B' = B - tok(R) - tok(P); tok(S) <= 0.4 B'; tok(M) <= B' - tok(S).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

SUMMARY_SHARE = 0.4
LEVEL_HEADINGS = (
    ("explicit", "Explicit observations"),
    ("deductive", "Deductive observations"),
    ("inductive", "Inductive observations"),
    ("contradiction", "Contradictions"),
)


@dataclass(frozen=True)
class Fixed:
    """What the representation slice and card take: whether each is kept, and what is left."""

    representation: bool
    card: bool
    remaining: int


def fit_fixed(budget: int, representation_tokens: int | None, card_tokens: int | None) -> Fixed:
    """Keep the slice and the card if both fit; else the card alone, else the slice alone.

    The card is compact and stable, so it outranks the slice when only one fits. A budget too
    small for either leaves both out: the context is smaller, never invalid.
    """
    budget = max(budget, 0)
    rep, card = representation_tokens, card_tokens
    options = [(rep is not None, card is not None), (False, card is not None)]
    options += [(rep is not None, False), (False, False)]
    for keep_rep, keep_card in options:
        used = (rep or 0) * keep_rep + (card or 0) * keep_card
        if used <= budget:
            return Fixed(keep_rep, keep_card, budget - used)
    return Fixed(False, False, budget)  # pragma: no cover - (False, False) always fits


def summary_cap(remaining: int) -> int:
    """The most tokens the summary may take out of B'."""
    return math.floor(SUMMARY_SHARE * max(remaining, 0))


def choose_summary(remaining: int, short: int | None, long: int | None) -> str | None:
    """'long' if it fits and is strictly longer than the short one, else 'short' if it fits."""
    cap = summary_cap(remaining)
    if long is not None and long <= cap and (short is None or long > short):
        return "long"
    if short is not None and short <= cap:
        return "short"
    return None


class MessageWindow:
    """Takes messages newest-first while they fit; the first one that does not stops it."""

    def __init__(self, budget: int) -> None:
        self.left = max(budget, 0)
        self.full = self.left == 0
        self.taken = 0

    def offer(self, tokens: int) -> bool:
        """Whether a message of ``tokens`` is taken; once one is refused, all later ones are."""
        if self.full or tokens > self.left:
            self.full = True
            return False
        self.left -= tokens
        self.taken += 1
        return True


@dataclass(frozen=True)
class Observation:
    id: str
    level: str
    content: str
    tokens: int | None = None
    """Tokens of ``content``, when the store counted them."""


def representation_tokens(
    observations: Sequence[Observation], count: Callable[[Sequence[str]], list[int]]
) -> int:
    """Tokens of ``render_representation(observations)``, counting only what the store did not.

    The WordPiece tokenizer splits on whitespace and punctuation before anything else, so the
    rendered text counts as the sum of its parts: each heading, one token per bullet, and
    each observation's content.
    """
    levels = {o.level for o in observations}
    parts = [f"## {heading}" for level, heading in LEVEL_HEADINGS if level in levels]
    parts += [o.content for o in observations if o.tokens is None]
    known = sum(o.tokens for o in observations if o.tokens is not None)
    return known + len(observations) + sum(count(parts))


def slice_within(
    observations: Sequence[Observation],
    budget: int,
    count: Callable[[Sequence[str]], list[int]],
) -> list[Observation]:
    """The longest head of ``observations`` (best first) whose rendering fits ``budget``."""
    counted = [o.tokens for o in observations]
    missing = [i for i, n in enumerate(counted) if n is None]
    if missing:
        for i, n in zip(missing, count([observations[i].content for i in missing]), strict=True):
            counted[i] = n
    headings = dict(
        zip(
            (lv for lv, _ in LEVEL_HEADINGS),
            count([f"## {h}" for _, h in LEVEL_HEADINGS]),
            strict=True,
        )
    )
    used, levels = 0, set()
    for i, (obs, tokens) in enumerate(zip(observations, counted, strict=True)):
        cost = (tokens or 0) + 1 + (headings.get(obs.level, 0) if obs.level not in levels else 0)
        if used + cost > budget:
            return list(observations[:i])
        used += cost
        levels.add(obs.level)
    return list(observations)


def render_representation(observations: Iterable[Observation]) -> str:
    """Markdown grouped by level, one bullet per observation, in the given order."""
    by_level: dict[str, list[str]] = {}
    for obs in observations:
        by_level.setdefault(obs.level, []).append(obs.content)
    sections = [
        f"## {heading}\n" + "\n".join(f"- {line}" for line in by_level[level])
        for level, heading in LEVEL_HEADINGS
        if by_level.get(level)
    ]
    return "\n\n".join(sections)


def render_card(card: Sequence[str]) -> str:
    """The card as the text that is counted against the budget."""
    return "\n".join(card)


def merge_unique(*rankings: Iterable[str]) -> list[str]:
    """Ids of all rankings, first occurrence wins."""
    seen: dict[str, None] = {}
    for ranking in rankings:
        for item in ranking:
            seen.setdefault(item, None)
    return list(seen)

"""The representation's write-time invariants, enforced by the store rather than by prompts.

The grounding rule every writer of ``ObservationWritten`` is held to: an explicit observation cites
a message that fed its representation and a span found in it; a derived one cites live premises
of its representation. The memory projection applies it in its own transaction (the verdict that
counts); a writer may apply it first to tell a model what it got wrong. Also the normalisation
under which spans are found and two statements count as the same.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from mnemo_schema.observations import DERIVED_LEVELS, ObservationWritten

_QUOTES = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Unicode-, quote-, whitespace- and case-normalised text, for grounding and exact duplicates."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return _SPACE.sub(" ", text).strip().casefold()


def content_key(text: str) -> str:
    """The key under which two observations count as the same statement."""
    return normalise(text).rstrip(" .!")


def span_in_message(span: str, message: str) -> bool:
    """Whether ``span`` appears verbatim in ``message`` after normalisation."""
    s = normalise(span)
    return bool(s) and s in normalise(message)


class Rejected(ValueError):
    """An observation the store refuses, with the reason given back to the writer."""


_SALIENT = re.compile(r"\b(?:[A-Z][\w'-]*|\w*\d[\w-]*)")


def salient_tokens(text: str) -> frozenset[str]:
    """Names, numbers and dates in ``text``: what two near-identical sentences must share.

    Sentence embeddings barely move when one name or number changes ("Bob's sister is Anna" /
    "... is Maria"), so similarity alone would merge different facts.
    """
    return frozenset(t.casefold() for t in _SALIENT.findall(unicodedata.normalize("NFKC", text)))


@dataclass(frozen=True)
class CitedMessage:
    """A message an explicit observation cites, as the check needs it."""

    content: str
    # The representations the message feeds: {"observer": ..., "observed": ...} each.
    representations: list[dict[str, str]]


def derived_reason(e: ObservationWritten, missing: Collection[str]) -> str | None:
    """Why a derived observation is refused (None: accepted), given which of the premises it
    cites do not exist, live, in its representation."""
    if not e.premise_ids:
        return f"a {e.level} observation must cite the observations it rests on"
    if missing:
        return (
            f"cited observations {sorted(missing)} do not exist in the representation"
            f" ({e.observer}, {e.observed})"
        )
    return None


def explicit_reason(
    e: ObservationWritten, cited: Mapping[tuple[str, str], CitedMessage]
) -> str | None:
    """Why an explicit observation is refused (None: accepted), given the messages found for
    its citations by (workspace, message id)."""
    if not e.source_message_ids or not e.source_span:
        return "an explicit observation must cite its source message and a verbatim span"
    pair = {"observer": e.observer, "observed": e.observed}
    for mid in e.source_message_ids:
        msg = cited.get((e.workspace, mid))
        if msg is None:
            return f"source message {mid!r} does not exist"
        if pair not in msg.representations:
            return f"message {mid!r} does not feed the representation ({e.observer}, {e.observed})"
    if not any(
        span_in_message(e.source_span, cited[e.workspace, m].content) for m in e.source_message_ids
    ):
        return f"span {e.source_span!r} is not in the cited message"
    return None


# A representation: (workspace, observer, observed).
RepresentationKey = tuple[str, str, str]
# Each id (or alias) of ``ids`` that names a live observation of the representation -> its
# canonical id.
Resolve = Callable[[RepresentationKey, Sequence[str]], Awaitable[Mapping[str, str]]]


async def verdicts(
    events: Sequence[ObservationWritten],
    cited: Mapping[tuple[str, str], CitedMessage],
    resolve: Resolve,
) -> list[str | None]:
    """For each observation, None if the store accepts it, else why not; ``cited``: the messages
    the explicit ones cite, by (workspace, id), as the caller found them.

    Earlier observations of the same call count as existing for later ones, so a writer may
    send premises and their conclusion together.
    """
    out: list[str | None] = []
    accepted: dict[tuple[str, str, str], set[str]] = {}
    for e in events:
        here = accepted.setdefault((e.workspace, e.observer, e.observed), set())
        reason = await _reason(e, cited, here, resolve)
        out.append(reason)
        if reason is None:
            here.add(e.observation_id)
    return out


async def _reason(
    e: ObservationWritten,
    cited: Mapping[tuple[str, str], CitedMessage],
    batch: set[str],
    resolve: Resolve,
) -> str | None:
    if e.level in DERIVED_LEVELS:
        missing = set(e.premise_ids) - batch
        if missing:
            missing -= set(await resolve((e.workspace, e.observer, e.observed), sorted(missing)))
        return derived_reason(e, missing)
    if e.origin == "api":
        return None
    if e.source_message_seqs and len(e.source_message_seqs) != len(e.source_message_ids):
        return "source_message_seqs must give one position for each cited message"
    return explicit_reason(e, cited)

"""The representation's write-time invariants, enforced by the store rather than by prompts."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from mnemo_schema.observations import ObservationWritten

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})  # fmt: skip
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

"""The representation's write-time invariants, enforced by the store rather than by prompts."""

from __future__ import annotations

import re
import unicodedata

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

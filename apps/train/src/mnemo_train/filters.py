"""Stage 2: named filters. A conversation is dropped by the first rule that fires."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from mnemo_train.corpus import Conversation

MIN_MESSAGES = 4
MIN_WORDS = 30

_WORD = re.compile(r"[A-Za-z']+")
# Stage directions and persona set-ups: the speaker plays a character, so what they "say about
# themselves" is fiction, not facts about a person.
_ROLE_PLAY = re.compile(
    r"(?:^|\s)\*[a-z][^*\n]{1,60}\*(?:\s|$)|\brole[- ]?play|\bstay in character\b|\bin character\b"
    r"|\byou are now (?:a|an|my)\b|\bpretend (?:to be|you are)\b|\(\s*ooc\b|\bact as (?:a|an|my)\b",
    re.IGNORECASE,
)


def too_short(c: Conversation) -> bool:
    """Fewer than four messages or thirty words: too little to state facts in."""
    return len(c.messages) < MIN_MESSAGES or len(_WORD.findall(c.text())) < MIN_WORDS


def low_quality(c: Conversation) -> bool:
    """Mostly not words, or the same few words over and over, or one message repeated."""
    text = c.text()
    letters = sum(ch.isalpha() for ch in text)
    words = [w.lower() for w in _WORD.findall(text)]
    if not text.strip() or letters / len(text) < 0.6:
        return True
    if len(set(words)) / max(1, len(words)) < 0.25:
        return True
    texts = [m.text.strip().lower() for m in c.messages]
    return len(set(texts)) <= len(texts) // 2


def role_play(c: Conversation) -> bool:
    """Two or more messages with stage directions or persona instructions."""
    return sum(1 for m in c.messages if _ROLE_PLAY.search(m.text)) >= 2


RULES: Sequence[tuple[str, Callable[[Conversation], bool]]] = (
    ("too_short", too_short),
    ("low_quality", low_quality),
    ("role_play", role_play),
)


def apply_filters(
    conversations: Sequence[Conversation],
) -> tuple[list[Conversation], list[tuple[str, str]]]:
    """The conversations no rule drops, and (id, rule) for those one does."""
    kept: list[Conversation] = []
    dropped: list[tuple[str, str]] = []
    for c in conversations:
        rule = next((name for name, fires in RULES if fires(c)), None)
        if rule is None:
            kept.append(c)
        else:
            dropped.append((c.id, rule))
    return kept, dropped

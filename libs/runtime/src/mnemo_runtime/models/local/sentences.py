"""Sentences and clauses of a message, and which of them may state a fact (heuristic).

A clause is kept when it could be a self-disclosure: not a question, greeting, thanks or
conversational filler, not opening with a pronoun the clause cannot resolve ("it was great"),
not a suggestion ("let's"), and long enough to say something. Whether it speaks of the speaker
at all is the rewrite's business (``pronouns.mentions_self``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def _words(text: str) -> frozenset[str]:
    # Word lists read better as prose than as a column of quoted literals.
    return frozenset(text.split())


# Chat often ends a sentence with an emoji instead of a full stop ("Inspiring 💪 I emailed").
_BOUNDARY = re.compile(
    r"[.!?…]+[\"'”’)\]]*(?=\s)|\n|[\U0001F300-\U0001FAFF\u2600-\u27BF]+(?=\s+[A-Z])"
)
_ABBREVIATIONS = _words("mr mrs ms dr st jr sr vs etc prof approx e.g i.e")

_SUBJECTS = (
    r"(?:i|i'm|i've|i'll|i'd|we|we're|we've|we'll|it|it's|they|they're|they've|he|she|that|"
    r"this|there|you|you're)"
)
# What opens a question or a request inside a longer sentence: an auxiliary before its subject
# ("can you help", "should I use"), "how", "what" or "why" before a verb ("how do I", "what's
# the best"), "which" before what is chosen ("which library"), or a plea for advice ("any
# tips"). "who", "where" and "when" after a comma mostly open a relative clause ("my friend,
# who is a nurse"), and are left alone.
_ASKING = (
    r"(?:(?:can|could|would|will|should|shall|do|does|did|is|are|am|have|has|may|might|must)"
    r"(?:n't)?\s+(?:you|i|we|it|this|that|there|they|anyone|someone|one)\b"
    r"|(?:how|what|why)(?:'s\b|\s+(?:can|could|would|should|shall|do|does|did|is|are|was|were|"
    r"will|to|about|if|else|kind|sort|type|tools?|libraries|ways?|steps?|approach(?:es)?|"
    r"strateg(?:y|ies)|options?|changes?|best)\b)"
    r"|which\s+(?:one|kind|sort|type|tools?|librar(?:y|ies)|ways?|approach(?:es)?|options?|"
    r"strateg(?:y|ies)|method|framework)\b"
    r"|any\s+(?:ideas|tips|suggestions|advice|thoughts|recommendations)\b)"
)
_ASKING_OPENER = re.compile(_ASKING, re.IGNORECASE)
# Where one sentence carries two claims: a semicolon, or a dash or conjunction that opens a
# clause with its own subject ("... yesterday and it was so powerful"). A dash before a list
# ("- running, reading") stays, and "because" and "since" are not breaks: the reason belongs
# to the claim. A question after a statement is a clause of its own ("I'm building a tracker,
# so can you help me with the schema?"), so that the statement before it survives the question.
_BREAK = re.compile(
    r";\s+|(?:\s*[–—]+\s*|\s+-+\s+|,?\s+(?:and|but|so|though|although|whereas|plus)\s+)"
    r"(?=" + _SUBJECTS + r"\b)"
    r"|(?:,|\s*[–—]+|\s+-+)\s*(?:(?:so|and|but|or|then|also)\s+)?(?=" + _ASKING + r")",
    re.IGNORECASE,
)
# A clause about "it" or "they", or a question, may still carry the speaker's own subordinate
# clause: "It made me reflect ... since I started transitioning three years ago", "how do I
# speed it up, considering I'm on Flask 2.3".
_EMBEDDED = re.compile(
    r"\b(?:ever since|since|after|because|considering|given that)\s+(?=(?:i|i'm|i've|i'd)\b)",
    re.I,
)
_SPLICE = re.compile(
    r",\s+(?=(?P<own>i|i'm|i've|i'll|i'd)\b|(?:it|it's|it was|they|they're|they've)\b)",
    re.IGNORECASE,
)
_SUBORDINATORS = _words(
    "when if since after before because although though while as once until unless"
)
_FIRST_PERSON = _words("i i'm i've i'll i'd me my we we're we've our us")
# A conjunction preceded by a short noun phrase is a compound subject ("My sister and I went").
_DETERMINERS = _words("my our his her their the a an me")
_FUNCTION_WORDS = _words("it this that they he she there here what so")

_INTERJECTION = re.compile(
    r"^(?:(?:(?:oh+|ah+|aw+|wow+|whoa|woah|yeah|yea|yep|yup|ha(?:ha)+|hah|lol|omg|hey|hi|"
    r"hello|hm+|um+|uh+|ooh+|well|so|and|but|also|plus|anyway|anyways|honestly|actually|tbh|"
    r"btw|by the way|"
    r"ok|okay)(?=[\s,!.…])|(?:yes|no|nope|nah|sure|right|true|totally|great|awesome|cool|nice|"
    r"man|dude|gosh|absolutely|definitely|exactly)\s*[,!.…]+)[\s,!.…]*)+",
    re.IGNORECASE,
)
_COURTESY = re.compile(
    r"^(?:thanks|thank you|thx|ty|congrats|congratulations|good luck|happy birthday|cheers|"
    r"bye|goodbye|see you|see ya|talk (?:to you )?soon|take care|good night|good morning|"
    r"sorry to hear|glad to hear|nice to|great to|good to|welcome|you're welcome)\b",
    re.IGNORECASE,
)
_PHATIC = re.compile(
    r"^(?:(?:me|i) (?:too|neither|either)"
    r"|i (?:\w+ly |so |100% )*(?:agree|disagree|know|see|understand|get it|hear you|feel you|"
    r"feel the same|guess|suppose|bet|hope so|think so|mean|love (?:it|that|this)|"
    r"appreciate (?:it|that|you|this)|can imagine|can relate|relate|can't wait|cannot wait|"
    r"got it|got this|will|won't|do|don't|did|can|can't|have|am)"
    r"(?: (?:with you|with that|on that|to that|so much|too|as well|completely))?"
    r"|i'?m (?:so |really |very |just |doing |feeling )*(?:fine|good|great|okay|ok|well|alright|"
    r"sure|sorry|glad|happy|here|back|in|down|excited|thrilled|proud)"
    r"(?: (?:for|of|about) (?:you|that|it|this))?)$",
    re.IGNORECASE,
)
# Feelings about the listener's news are reactions, not facts about the speaker.
_REACTION = re.compile(
    r"\b(?:i'?m|i am)\b.*\b(?:glad|happy|proud|sorry|thrilled|excited) (?:for|of|that|to hear|"
    r"to see) you\b",
    re.IGNORECASE,
)
_UNRESOLVED_OPENERS = _words(
    """it it's its they they're they've they'll they'd them he he's she she's this that that's
    these those which who you you're you've you'll you'd your yours u ur here's here their
    his her"""
)
# Pointers at a photo and requests to the listener ("Keep me posted") are not disclosures.
_META_OPENERS = re.compile(
    r"^(?:here (?:is|are)|check|look|take a look|keep|let|tell|give|send|show|remind|"
    r"feel free|hit|please|make sure|don't forget|wish)\b",
    re.IGNORECASE,
)
# "Plus my full support": a possessive phrase with no verb is a fragment, not a claim.
_FRAGMENT = re.compile(r"^(?:my|our)\b(?:\W+\w+){0,3}\W*$", re.IGNORECASE)
_VERB_HINT = re.compile(r"\b(?:is|are|was|were|has|have|had|'s|'re)\b|'s\b", re.IGNORECASE)
# Remarks about the conversation itself ("Been a while since we talked").
_ABOUT_CHAT = re.compile(
    r"\b(?:since|when) (?:we|i) (?:last )?(?:chatted|talked|spoke|caught up|saw each other)\b",
    re.IGNORECASE,
)
# Suggestions and pep talk ("let's", "we can do it", "we all have our paths") state no fact.
_EXHORTATION = re.compile(
    r"\blet['’]?s\b|\bwe (?:all\b|can\b|could\b|should\b|must\b|got this\b|'?ve got this\b)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|u|ur)\b", re.IGNORECASE)
_TRAILING = re.compile(r"[^\w?!.]+$")
_EDGE = re.compile(r"^[^\w\"'(]+|[^\w\"')%]+$")
_VOCATIVE_LEAD = re.compile(r"^(?:(?:hey|hi|hello|dear|yo)\s+)?([A-Z][a-z]+)\s*[,!:]\s*")
_VOCATIVE_TAIL = re.compile(r",\s*([A-Z][a-z]+)\s*(?=[.!?…]*$)")
_VOCATIVE_MID = re.compile(r",\s*([A-Z][a-z]+)\s*,")


def split_sentences(content: str) -> list[str]:
    """The sentences of ``content``, each a verbatim substring of it."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(content):
        before = content[start : m.start()].rsplit(maxsplit=1)
        if m.group(0).startswith(".") and before and before[-1].lower() in _ABBREVIATIONS:
            continue
        out.append(content[start : m.end()].strip())
        start = m.end()
    out.append(content[start:].strip())
    return [s for s in out if s]


def split_clauses(sentence: str) -> list[str]:
    """The clauses of a sentence that may each carry their own claim."""
    clauses: list[str] = []
    start = 0
    for m in _BREAK.finditer(sentence):
        left = sentence[start : m.start()]
        if m.group(0).strip(" ,").lower() in {"and", "but"} and _noun_phrase(left):
            continue
        clauses.append(left)
        start = m.end()
    clauses.append(sentence[start:])
    return [piece for clause in clauses for piece in _split_splices(clause) if piece.strip()]


def _split_splices(clause: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for m in _SPLICE.finditer(clause):
        left = clause[start : m.start()]
        words = [w.strip(",").lower() for w in left.split()]
        # Only a clause about something else is cut off ("They've been there, I've known
        # them"): "When I was young, I ..." keeps its condition ("Hey Mel, since we last
        # chatted, I" too), "Yesterday, I ..." its time, "I'm sure with my effort, I" its frame.
        # A trailing "it was fun" is split off whatever precedes it, and then dropped.
        if (
            len(words) >= 3
            and not _SUBORDINATORS.intersection(words[:3])
            and (
                not m["own"]
                or words[0] in _UNRESOLVED_OPENERS
                or not _FIRST_PERSON.intersection(words)
            )
        ):
            pieces.append(left)
            start = m.end()
    pieces.append(clause[start:])
    return pieces


def embedded_clause(clause: str) -> str | None:
    """The speaker's own subordinate clause inside a clause about something else, if any."""
    m = _EMBEDDED.search(clause)
    return clause[m.end() :] if m else None


def _noun_phrase(left: str) -> bool:
    words = left.split()
    if not words or len(words) > 4:
        return False
    first = words[0].lower()
    if first in _DETERMINERS:
        return True
    return len(words) <= 2 and words[0][:1].isupper() and first not in _FUNCTION_WORDS


def is_question(sentence: str) -> bool:
    """Whether the sentence asks rather than states."""
    return _TRAILING.sub("", sentence).endswith("?")


def is_asking(clause: str) -> bool:
    """Whether a clause opens as a question or a request ("can you ...", "how do I ...")."""
    return _ASKING_OPENER.match(strip_interjections(clause)) is not None


def is_subordinate(clause: str) -> bool:
    """Whether a clause opens with a subordinator ("once I have HTTPS set up"): it belongs to
    the clause after it."""
    words = _WORD.findall(strip_interjections(clause))
    return bool(words) and words[0].lower() in _SUBORDINATORS


def addresses_listener(sentence: str) -> bool:
    """Whether the sentence speaks to or about the listener ("you", "your")."""
    return _SECOND_PERSON.search(sentence) is not None


def is_courtesy(sentence: str) -> bool:
    """Greetings, thanks, congratulations and goodbyes."""
    return _COURTESY.match(strip_interjections(sentence)) is not None


def strip_interjections(text: str) -> str:
    """``text`` without leading "Yeah,", "Wow!", "So", "Well," and the like."""
    return _INTERJECTION.sub("", text.strip(), count=1).strip()


class Cleaner:
    """Strips interjections, vocatives ("Thanks, Mel!") and edge punctuation from clauses."""

    def __init__(self, names: Iterable[str]) -> None:
        self._names = tuple(n.lower() for n in names if n)

    def _is_name(self, word: str) -> bool:
        w = word.lower()
        # Nicknames are usually a name's first letters: "Mel" for "Melanie".
        return any(n == w or (len(w) >= 3 and n.startswith(w)) for n in self._names)

    def clean(self, clause: str) -> str:
        """The clause as a fact's raw material."""
        text = strip_interjections(_EDGE.sub("", clause))
        lead = _VOCATIVE_LEAD.match(text)
        if lead and self._is_name(lead[1]):
            text = strip_interjections(text[lead.end() :])
        text = _VOCATIVE_MID.sub(lambda m: "," if self._is_name(m[1]) else m[0], text)
        text = _VOCATIVE_TAIL.sub(lambda m: "" if self._is_name(m[1]) else m[0], text)
        return _EDGE.sub("", text)


def opens_unresolved(clause: str) -> bool:
    """Whether the clause's subject is a pronoun it cannot resolve ("it", "they", "your")."""
    words = _WORD.findall(clause)
    return bool(words) and words[0].lower().replace("’", "'") in _UNRESOLVED_OPENERS


def may_state_fact(clause: str) -> bool:
    """Whether a cleaned clause could be a self-disclosure worth rewriting."""
    words = _WORD.findall(clause)
    # A contraction is two words: "I'm vegan" says as much as "I am vegan".
    if sum(2 if "'" in w or "’" in w else 1 for w in words) < 3:
        return False
    if opens_unresolved(clause) or _META_OPENERS.match(clause):
        return False
    if _FRAGMENT.match(clause) and not _VERB_HINT.search(clause):
        return False
    if _PHATIC.match(clause) or _REACTION.search(clause) or _ABOUT_CHAT.search(clause):
        return False
    if _EXHORTATION.search(clause):
        return False
    return _COURTESY.match(clause) is None

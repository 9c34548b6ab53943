"""First and second person rewritten in the third person, naming the peers (heuristic).

"I"/"me" become the speaker's name and "my" its possessive; "we"/"us" become "<name> and
others" (plural, so the verbs after them stay right, and true whether "we" is a family, friends
or the two people talking); "our" becomes the speaker's possessive, which is a simplification.
Reflexives become "themselves", the one form that needs no gender. "you" becomes the
listener's name only as an object ("proud of you"); a clause with "you" as its subject is about
the listener, not the speaker, and is rejected (``None``), as is any "you" when no listener is
known.
"""

from __future__ import annotations

import re

from mnemo_runtime.models.local.verbs import is_adverb, is_past, third_person


def _words(text: str) -> frozenset[str]:
    # Word lists read better as prose than as a column of quoted literals.
    return frozenset(text.split())


_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+%?|\s+|.", re.DOTALL)

_INFORMAL_WORDS = {"gonna": "going to", "wanna": "want to", "gotta": "have to"}
_INFORMAL = re.compile(r"\b(?:gonna|wanna|gotta|cuz)\b|(?<![A-Za-z])'cause\b", re.IGNORECASE)
# A clause that drops its subject ("Gonna start college", "Been busy") is the speaker's.
_DROPPED_SUBJECT = re.compile(
    r"^(?:(?P<be>going to(?! be\b)|planning to|planning on|hoping to|trying to|thinking about|"
    r"thinking of|looking forward to|working on|heading to|off to)|"
    # "Been busy" drops "I", but "Been a while" drops "it".
    r"(?P<have>been(?! (?:a|an|ages|forever|so long|too long|awhile|some time)\b)))\b",
    re.IGNORECASE,
)
_GERUND = re.compile(
    r"(?!(?:thing|something|nothing|anything|everything|morning|evening|during|wedding|"
    r"king|ring|spring|string|building|ceiling|feeling|meaning)\b)[A-Za-z]{2,}ing\b",
    re.IGNORECASE,
)
_FINITE = re.compile(
    r"(?i:\b(?:is|are|was|were|isn't|aren't|wasn't|has|have|had|does|do|did|can|will|would|"
    r"should|looks|seems|feels|makes|helps|sounds|takes|gives|means|keeps)\b)|'s\b|'re\b"
)
_WORDS = re.compile(r"[A-Za-z]+")
_ME = re.compile(r"\bme\b", re.IGNORECASE)
_PREPOSITIONS = _words(
    """of for to with about at from by on in without like than after before around behind
    near toward towards against beside besides into onto upon"""
)
# Verbs after which "you" is an object: "I told you", "I miss you".
_OBJECT_VERBS = _words(
    """tell told show showed shown ask asked thank thanked meet met see saw seen miss missed
    love loved need give gave send sent call called text texted help helped invite invited
    remind reminded let bring brought join joined owe got get inspire inspired"""
)
# Words that can follow "I" without being its verb ("I and my sister", "I myself").
_NOT_VERBS = _words("and or but nor the a an to of for with in on at myself")
_AUXILIARIES = _words(
    """are were have had do did can could will would should might must may need know think
    want got get 're 've 'll 'd"""
)


# Reflexives alone ("expressing ourselves is key") make a general remark, not a disclosure.
_SELF = re.compile(
    r"(?i:\b(?:i|i'm|i've|i'll|i'd|me|my|mine|we|we're|we've|we'll|we'd|our|ours)\b)|\bus\b"
)


def mentions_self(text: str) -> bool:
    """Whether ``text`` speaks of its speaker, counting a dropped subject ("Gonna move")."""
    return _SELF.search(normalise_informal(text)) is not None


def _possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def normalise_informal(text: str) -> str:
    """Spell out informal contractions ("gonna" -> "going to") and supply a dropped subject."""
    text = _INFORMAL.sub(_spell_out, text.replace("’", "'").replace("‘", "'"))
    dropped = _DROPPED_SUBJECT.match(text)
    if dropped:
        return ("I'm " if dropped["be"] else "I've ") + text[0].lower() + text[1:]
    return text


def _spell_out(m: re.Match[str]) -> str:
    return _INFORMAL_WORDS.get(m[0].lower(), "because")


def supply_subject(text: str) -> str | None:
    """A clause that drops its subject, given "I" back when the subject can only be the speaker.

    Call it only for sentences that do not address the listener: "Taking in kids in need -
    you're so kind" is about the listener. "Really made me think" drops "it", not "I": a
    past-tense opening whose object is the speaker has someone else as subject, and the clause
    is rejected (``None``).
    """
    lowered = text[0].lower() + text[1:] if text else text
    verb = next((w for w in _WORDS.findall(text) if not is_adverb(w)), "")
    if _GERUND.fullmatch(verb) and not _FINITE.search(text) and 2 <= len(text.split()) <= 8:
        # "Researching adoption agencies" answers "what are you up to?"; with a verb of its
        # own ("Painting is fun") the gerund is a subject, not an activity.
        return "I'm " + lowered
    if is_past(verb):
        return None if _ME.search(text) else "I " + lowered
    return text


def to_third_person(text: str, name: str, listener: str | None) -> str | None:
    """``text`` with the speaker as ``name`` and the listener as ``listener``; None if unsafe."""
    tokens = _TOKEN.findall(normalise_informal(text))
    words = [i for i, t in enumerate(tokens) if not t.isspace()]
    out = list(tokens)
    own, their = name, _possessive(name)
    group = f"{name} and others"
    for pos, i in enumerate(words):
        tok = tokens[i]
        low = tok.lower()
        prev = tokens[words[pos - 1]].lower() if pos > 0 else ""
        nxt = tokens[words[pos + 1]].lower() if pos + 1 < len(words) else ""
        if tok in {"I", "i"}:
            out[i] = own
            # "my sister and I love" keeps its plural verb.
            if prev not in {"and", "or"}:
                _agree(tokens, words, pos, out)
        elif low in {"i'm", "i've", "i'll", "i'd"}:
            suffix = low[2:]
            verb = {"m": "is", "ve": "has", "ll": "will", "d": "would"}[suffix]
            if suffix == "d" and nxt in {"been", "had", "already", "never"}:
                verb = "had"
            out[i] = f"{own} {verb}"
        elif low == "me" and not _hyphenated(tokens, i):  # "me-time" is not the speaker
            out[i] = own
        elif low in {"my", "mine"}:
            out[i] = their
        elif low in {"myself", "ourselves", "yourselves"}:
            out[i] = "themselves"
        elif low in {"we", "us"}:
            out[i] = group
        elif low in {"we're", "we've", "we'll", "we'd"}:
            out[i] = f"{group} " + {"re": "are", "ve": "have", "ll": "will", "d": "would"}[low[3:]]
        elif low in {"our", "ours"}:
            out[i] = their
        elif low in {"you", "your", "yours", "yourself"} or low.startswith("you'"):
            if listener is None:
                return None
            if low in {"your", "yours"}:
                out[i] = _possessive(listener)
            elif low == "yourself" or (low == "you" and _object_you(prev, nxt)):
                out[i] = listener
            else:
                return None
    return "".join(out)


def _hyphenated(tokens: list[str], i: int) -> bool:
    return (i + 1 < len(tokens) and tokens[i + 1] == "-") or (i > 0 and tokens[i - 1] == "-")


def _object_you(prev: str, nxt: str) -> bool:
    if nxt in _AUXILIARIES or nxt.startswith("'"):
        return False
    return prev in _PREPOSITIONS or prev in _OBJECT_VERBS


def _agree(tokens: list[str], words: list[int], pos: int, out: list[str]) -> None:
    """Conjugate the verb following the subject at ``words[pos]`` for a third person."""
    for j in words[pos + 1 :]:
        word = tokens[j]
        if word[:1].isalnum() and is_adverb(word):
            continue
        if word[:1].isalpha() and word.lower() not in _NOT_VERBS:
            out[j] = third_person(word)
        return

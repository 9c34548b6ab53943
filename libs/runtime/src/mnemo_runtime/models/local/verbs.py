"""Verb agreement when a first-person subject becomes a name: "I love" -> "Caroline loves".

Only the finite verb right after the subject changes; modals and past forms read the same for
every person. Forms that are both present and past ("read", "put") are left unchanged, since a
narrated past is the likelier reading in conversation.
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    # Word lists read better as prose than as a column of quoted literals.
    return frozenset(text.split())


# Words that may sit between a subject and its verb ("I really love", "I 100% agree").
ADVERBS = _words(
    """also just still always never often really totally even actually usually sometimes finally
    already recently truly definitely absolutely honestly seriously literally genuinely kinda
    sorta mostly rarely seldom almost nearly barely hardly ever once currently basically
    personally certainly probably maybe then now too so all both"""
)
# Verbs ending in -ly, which the adverb test must not skip over.
_LY_VERBS = _words("reply apply fly rely supply imply multiply comply ally bully")

_MODALS = _words(
    """can could will would shall should may might must ought cannot can't couldn't won't
    wouldn't shouldn't mightn't mustn't needn't used"""
)
_IRREGULAR_PAST = _words(
    """was were went got had made saw took came felt thought told said found gave knew left met
    ran bought brought began became kept lost paid sent sat spent stood taught understood won
    wrote ate drove flew grew heard held led meant built caught chose did drew fell fought
    forgot hid rode rang rose sang sold shot slept spoke stole struck swam threw woke wore
    broke dug fed froze hung lent lay shook shone sank slid spun stuck stung swore swept swung
    tore bent bit bled blew burnt dealt dreamt learnt leapt lit sought wept wound became
    didn't wasn't weren't hadn't"""
)
# Words ending in -ed that are not past tenses, where a clause may begin with them.
_ED_WORDS = _words("bed red shed wed sled bred fed hundred kindred sacred naked wicked")
# Present and past forms alike: changing them would guess the tense.
_SAME_FORMS = _words("read put cut hit let set quit shut hurt cost spread bet cast")
_SPECIAL = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "dont": "doesn't",
    "haven't": "hasn't",
    "havent": "hasn't",
    "aren't": "isn't",
    "ain't": "isn't",
}
_SIBILANT = re.compile(r"(?:s|x|z|ch|sh|o)$")
_CONSONANT_Y = re.compile(r"[^aeiou]y$")


def is_adverb(word: str) -> bool:
    """Whether ``word`` may stand between a subject and its verb."""
    w = word.lower()
    if w in ADVERBS or w.endswith("%") or w.isdigit():
        return True
    return len(w) > 4 and w.endswith("ly") and w not in _LY_VERBS


def is_past(word: str) -> bool:
    """Whether ``word`` is unmistakably a past-tense verb ("went", "moved", not "read")."""
    w = word.lower()
    if w in _IRREGULAR_PAST:
        return True
    return len(w) > 4 and w.endswith("ed") and not w.endswith("eed") and w not in _ED_WORDS


def third_person(verb: str) -> str:
    """The third-person singular of a verb as it follows "I" ("study" -> "studies")."""
    lower = verb.lower()
    if lower in _SPECIAL:
        result = _SPECIAL[lower]
    elif (
        lower in _MODALS
        or lower in _IRREGULAR_PAST
        or lower in _SAME_FORMS
        or (lower.endswith("ed") and not lower.endswith("eed"))
        or lower.endswith("n't")
        or not lower.isalpha()
    ):
        return verb
    elif _CONSONANT_Y.search(lower):
        result = lower[:-1] + "ies"
    elif _SIBILANT.search(lower):
        result = lower + "es"
    else:
        result = lower + "s"
    return result.capitalize() if verb[:1].isupper() else result

"""Terms of a text without a model: content words, lower-cased, stopwords dropped, lightly stemmed.

The base of every lexical comparison in the project: the extractive backend's relevance, the
roles' evidence checks and the run engine's hops and leads all read a text's terms the same way.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

__all__ = [
    "SHARED_PREFIX",
    "STOPWORDS",
    "bears_on",
    "clip",
    "said_terms",
    "same_term",
    "stem",
    "terms",
]

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before
    being below between both but by can could did do does doing done down during each either else
    ever few for from further get gets got had has have having he her here hers herself him himself
    his how however i if in into is it its itself just let like may me might more most much must my
    myself neither no nor not now of off on once one only or other our ours ourselves out over own
    per rather same shall she should so some such than that the their theirs them themselves then
    there these they this those through thus to too under until up upon us very via was we were what
    whatever when where whereas whether which while who whom whose why will with within without
    would yet you your yours yourself yourselves s t d ll m re ve tell know known describe explain
    give list name find please kind sort way ways thing things many much often several various
    """.split()  # noqa: SIM905 (a word list reads best as words)
)

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


#: British spellings a question may use of a word a document spells the American way (or the
#: other way round: both sides meet at the American form). General English, any corpus.
_SPELLING = {
    "licence": "license",
    "licences": "licenses",
    "licenced": "licensed",
    "licencing": "licensing",
    "defence": "defense",
    "offence": "offense",
    "colour": "color",
    "behaviour": "behavior",
    "favour": "favor",
    "centre": "center",
    "catalogue": "catalog",
}


def stem(word: str) -> str:
    """A light suffix stripper (plurals, -ation, -ing, -ed, -ly): "studies" matches "study"; a
    British spelling ("licence") as the American one."""
    word = _SPELLING.get(word, word)
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, replacement in (("sses", "ss"), ("ies", "y"), ("ied", "y")):
        if word.endswith(suffix):
            return word[: -len(suffix)] + replacement
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ation") and len(word) > 7:
        return word[:-3]  # association -> associat, as associated -> associat
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run
            break
    return word


def terms(text: str) -> list[str]:
    """The content terms of `text`, stemmed, in order (repeats kept)."""
    return [
        stem(word)
        for word in _WORD.findall(text.casefold())
        if word not in STOPWORDS and (len(word) > 1 or word.isdigit())
    ]


#: Letters two stemmed terms must share to count as one ("modifications" and "modified").
SHARED_PREFIX = 5


def same_term(a: str, b: str) -> bool:
    """Two stemmed terms alike, or sharing their first SHARED_PREFIX letters."""
    return a == b or (
        len(a) >= SHARED_PREFIX and len(b) >= SHARED_PREFIX and a[:SHARED_PREFIX] == b[:SHARED_PREFIX]
    )


def said_terms(asked: Iterable[str], said: Collection[str]) -> list[str]:
    """The `asked` terms that one of the `said` terms matches (`same_term`), in order."""
    return [term for term in asked if any(same_term(term, word) for word in said)]


def bears_on(text: str, question: str) -> bool:
    """Whether a text shares two content terms with a question (its only one, if it has one): "See
    the manual for more details." shares "manual" with "Which manuals cover installing on a
    laptop?", and nothing that question asks."""
    asked = set(terms(question))
    said = set(terms(text))
    return not asked or len(said_terms(asked, said)) >= min(2, len(asked))


_SPACE = re.compile(r"\s+")


def clip(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed, cut at a word boundary to at most `limit` characters."""
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"

"""Whether a research query is too broad for one run, and the narrower queries it splits into.

"Feasible" says a plan is well formed; this says whether its question is well scoped. A query that
asks for a whole field or a whole history ("survey the entire history of energy technology",
"everything about batteries", "a comprehensive overview of machine learning") cannot be answered
from a handful of sources per leaf: the run would return a thin report that looks complete. Such a
query is judged *too broad*, with the words that make it so, and split into facets: the planner
without a model plans one leaf per facet, every planner's result says "too broad" and offers the
facets as narrower queries for the manager to take to the user.

The judgement is by code, so it is the same for every backend: a sweeping word (entire, every,
everything, comprehensive, complete, survey ...) applied to a subject, or to several ("everything
about software licences and Debian packaging history": one split per subject, but not a comparison,
whose items the plan's structure splits), or a history or evolution of a subject without a period. A query naming a year or a span of years is never judged too broad by
its history alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Scope", "judge_scope"]

_SWEEPING = re.compile(
    r"\b(?:entire|entirety|everything|all aspects|all there is|every aspect|comprehensive(?:ly)?"
    r"|complete (?:history|overview|guide|survey|account)|full (?:history|overview|account)"
    r"|survey(?:ing)?|exhaustive(?:ly)?|in full)\b",
    re.IGNORECASE,
)
_HISTORY = re.compile(r"\b(?:history|evolution|development|story)\s+of\b", re.IGNORECASE)
_PERIOD = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b|\b(?:century|centuries|decade|era|age)\b", re.IGNORECASE
)
# Words between the sweeping word and the subject ("overview of", "aspects of", "about").
_CONNECTORS = re.compile(
    r"^(?:(?:history|evolution|development|story|overview|account|guide|survey|aspects?|there is|"
    r"to know|known|of|about|on|regarding|concerning|related to)\b[\s,:]*)+",
    re.IGNORECASE,
)
# Several subjects ("Rust and Go", "X vs Y"): the plan's structure splits those, not their scope.
_SEVERAL = re.compile(r"\s(?:and|or|vs\.?|versus)\s|,", re.IGNORECASE)
MAX_SUBJECT_WORDS = 8
#: The most subjects a sweeping query over several is split into.
MAX_SPLITS = 4
_COMPARISON = re.compile(r"\b(?:compar\w*|contrast\w*|vs\.?|versus|differ\w*)\b", re.IGNORECASE)
_HISTORY_WORD = re.compile(
    r"\b(?:the\s+)?(?:history|evolution|development|story)\b(?:\s+of\b)?", re.IGNORECASE
)


@dataclass(frozen=True)
class Scope:
    """A query's scope: ``too_broad`` with the words that make it so, and narrower queries."""

    too_broad: bool
    reason: str = ""
    splits: tuple[str, ...] = ()
    facets: tuple[str, ...] = ()  # a word or two naming each split, for a one-line summary


def judge_scope(query: str) -> Scope:
    """Too broad when the query sweeps over a whole subject; else focused (``too_broad`` False)."""
    text = " ".join(query.split()).rstrip("?.! ")
    sweeping = _SWEEPING.search(text)
    history = _HISTORY.search(text)
    if history and _PERIOD.search(text) and not sweeping:
        return Scope(too_broad=False)
    if not sweeping and not (history and _few_constraints(text)):
        return Scope(too_broad=False)
    if sweeping and (several := _several(text)).too_broad:
        return several
    subject = _subject(text)
    if not subject:
        return Scope(too_broad=False)
    marker = (sweeping or history).group(0)  # type: ignore[union-attr]
    if history:
        splits = (
            f"What were the origins and earliest forms of {subject}?",
            f"What were the key milestones in the development of {subject}, and when did they happen?",
            f"What is the state of {subject} today?",
            f"What are the open problems and the outlook for {subject}?",
        )
        facets = ("origins", "milestones", "today", "outlook")
    else:
        splits = (
            f"What are the main kinds of {subject}, and how does each work?",
            f"What are the key milestones in the development of {subject}?",
            f"What are the main uses of {subject} today, and what are their limits?",
            f"What are the open problems and the outlook for {subject}?",
        )
        facets = ("kinds", "milestones", "uses and limits", "outlook")
    return Scope(too_broad=True, reason=f"{marker.lower()} of {subject}", splits=splits, facets=facets)


def _several(text: str) -> Scope:
    """A sweeping word over several subjects ("everything about software licences and Debian
    packaging history"): too broad, split into one question per subject; but not a comparison
    ("compare all aspects of Rust and Go"), whose items the plan's structure splits."""
    if _COMPARISON.search(text):
        return Scope(too_broad=False)
    markers = list(_SWEEPING.finditer(text))
    tail = _CONNECTORS.sub("", text[markers[-1].end() :].strip()).strip(" ,.;:")
    parts = [part.strip(" ,.;:") for part in _SEVERAL.split(tail)]
    parts = [part for part in parts if part and part.casefold() not in {"and", "or"}]
    if len(parts) < 2 or any(len(part.split()) > MAX_SUBJECT_WORDS for part in parts):
        return Scope(too_broad=False)
    marker = markers[-1].group(0).lower()
    reason = f"{marker}, over {len(parts)} subjects: {'; '.join(parts)}"
    parts = parts[:MAX_SPLITS]  # more: the first few on offer, the user asked for all of them
    splits = []
    for part in parts:
        if _HISTORY_WORD.search(part):
            bare = " ".join(_HISTORY_WORD.sub(" ", part).split())
            splits.append(f"What were the key milestones in the development of {bare or part}?")
        else:
            splits.append(f"What are the main kinds of {part}, and how does each work?")
    return Scope(too_broad=True, reason=reason, splits=tuple(splits), facets=tuple(parts))


def _few_constraints(text: str) -> bool:
    """A history with nothing to narrow it: no period, and a subject of a few words."""
    return not _PERIOD.search(text) and 0 < len(_subject(text).split()) <= 4


def _subject(text: str) -> str:
    """What the query is about: the words after its last sweeping word ("energy technology"); empty
    when it names several subjects (a comparison, a list), which the plan's structure splits."""
    markers = [*_SWEEPING.finditer(text), *_HISTORY.finditer(text)]
    if not markers:
        return ""
    tail = text[max(marker.end() for marker in markers) :]
    subject = _CONNECTORS.sub("", tail.strip()).strip(" ,.;:")
    words = subject.split()
    if not words or len(words) > MAX_SUBJECT_WORDS or _SEVERAL.search(subject):
        return ""
    return subject

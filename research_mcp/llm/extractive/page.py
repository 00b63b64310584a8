"""The report's first page shared by characters: among the questions, then among each question's
lines of evidence (the extractive synthesizer's layout, ``synthesizer.py``)."""

from __future__ import annotations

import re

from research_mcp.answering.terms import terms

__all__ = [
    "FIRST_PAGE",
    "LEAD_CHARS",
    "LINES_PER_QUESTION",
    "LINE_CHARS",
    "collapsed",
    "excerpt",
    "line_limits",
    "page_budgets",
]

#: Characters of evidence the report's first page carries across its questions.
FIRST_PAGE = 2400
#: The most, and the least, characters a line of evidence shows (the facts view has it whole).
LEAD_CHARS = 900
LINE_CHARS = 160
#: Lines a question shows in equal shares before what short lines leave is given to more lines.
LINES_PER_QUESTION = 6

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\S+")


def page_budgets(lengths: dict[str, list[int]]) -> dict[str, int]:
    """Each question's characters of the first page: an equal share of `FIRST_PAGE`, and what the
    questions whose lines all show whole leave shared among those whose lines are cut."""
    base = FIRST_PAGE // max(1, len(lengths))
    limits = {question: line_limits(shown, base) for question, shown in lengths.items()}
    wanting = [
        question
        for question, shown in lengths.items()
        if len(limits[question]) < len(shown)
        or any(
            limit < min(length, LEAD_CHARS) for limit, length in zip(limits[question], shown, strict=False)
        )
    ]
    spare = sum(base - sum(limits[question]) for question in lengths if question not in wanting)
    extra = spare // len(wanting) if wanting else 0
    return {question: base + (extra if question in wanting else 0) for question in lengths}


def line_limits(lengths: list[int], budget: int) -> list[int]:
    """Characters each of a question's lines may show within `budget`, given each line's length: the
    best up to half of it (`LEAD_CHARS` at most), the next `LINES_PER_QUESTION - 1` an equal share of
    the rest (none under `LINE_CHARS`). A line shorter than its share shows whole and takes only its
    length; what short lines leave shows more lines, each up to the same share, while at least
    `LINE_CHARS` of the next one fits; what is still left shows more of the best line, then of the
    others."""
    if not lengths:
        return []
    lead = max(LINE_CHARS, min(LEAD_CHARS, budget // 2))
    more = min(len(lengths) - 1, LINES_PER_QUESTION - 1, max(0, budget - lead) // LINE_CHARS)
    share = min(LEAD_CHARS, (budget - lead) // more) if more else 0
    limits = [min(lengths[0], lead), *(min(length, share) for length in lengths[1 : 1 + more])]
    left = budget - sum(limits)
    for length in lengths[1 + more :] if share else []:
        if min(length, LINE_CHARS) > left:
            break
        limits.append(min(length, share, left))
        left -= limits[-1]
    grown = min(lengths[0], LEAD_CHARS, limits[0] + left)
    left -= grown - limits[0]
    limits[0] = grown
    return [limits[0], *_shared(lengths[1 : len(limits)], limits[1:], left)]


def _shared(lengths: list[int], limits: list[int], left: int) -> list[int]:
    """`limits` grown by `left` characters shared equally among the lines that have more to show
    (each to its length, `LEAD_CHARS` at most), what a line cannot take going to the others."""
    grown = list(limits)
    wanting = sorted(range(len(lengths)), key=lambda i: min(lengths[i], LEAD_CHARS) - limits[i])
    for done, index in enumerate(wanting):
        extra = min(min(lengths[index], LEAD_CHARS) - limits[index], left // (len(wanting) - done))
        grown[index] += max(0, extra)
        left -= max(0, extra)
    return grown


def collapsed(text: str) -> str:
    """`text` with its whitespace collapsed to single spaces, as a line of evidence shows it."""
    return _SPACE.sub(" ", text).strip()


def excerpt(text: str, question: str, limit: int) -> str:
    """At most `limit` characters of `text` (whitespace collapsed): the window saying most of the
    question's terms, cut at word boundaries, with an ellipsis where text was left out."""
    text = collapsed(text)
    if len(text) <= limit:
        return text
    asked = set(terms(question))
    words = [(match.start(), match.end()) for match in _WORD.finditer(text)]
    hits = [i for i, (a, b) in enumerate(words) if asked and any(t in asked for t in terms(text[a:b]))]
    start = 0
    if hits:
        best, best_count = 0, -1
        for h in hits:
            count = sum(1 for other in hits if 0 <= words[other][0] - words[h][0] < limit)
            if count > best_count:
                best, best_count = h, count
        start = max(0, words[best][0] - limit // 4)
        start = text.rfind(" ", 0, start) + 1 if start else 0
    piece = text[start : start + limit]
    if start + limit < len(text):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + piece

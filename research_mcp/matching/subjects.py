"""The subject a later part of a split question needs back when it names only the first part's kind of
thing: "Which fields does an fstab line have?" then "What does the sixth field do?" asks "What does
the sixth field of an fstab line do?"."""

from __future__ import annotations

import re

from research_mcp.matching.terms import same_term, stem, terms

__all__ = ["of_subject"]

_AUXILIARY = r"(?:do|does|did|can|could|will|would|should|must|may)"
_BE = r"(?:is|are|was|were)"
_PREPOSITION = r"(?:under|about|for|in|on|from|of|with|by|at)"
# "Which fields does an fstab line have?": fields of an fstab line.
_DOES = re.compile(
    rf"^(?:what|which)\s+(?P<kind>[\w'’-]+)\s+{_AUXILIARY}\s+(?P<subject>.+?)\s+[\w'’-]+\s*\??$",
    re.IGNORECASE,
)
# "What licence is zlib under?": the licence of zlib.
_IS = re.compile(
    rf"^(?:what|which)\s+(?P<kind>[\w'’-]+)\s+{_BE}\s+(?P<subject>.+?)(?:\s+{_PREPOSITION})?\s*\??$",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w'’-]+")
#: A longer subject is a clause, not a name to carry.
MAX_SUBJECT_WORDS = 6


def of_subject(part: str, first: str) -> str:
    """`part` with "of <subject>" after the word naming the first question's kind of thing, when
    `part` names that kind but not the subject; else `part` unchanged."""
    match = _DOES.match(first.strip()) or _IS.match(first.strip())
    if not match:
        return part
    subject = match.group("subject").strip()
    subject_terms = terms(subject)
    if not subject_terms or len(subject.split()) > MAX_SUBJECT_WORDS:
        return part
    said = terms(part)
    if any(same_term(term, other) for term in subject_terms for other in said):
        return part
    kind = stem(match.group("kind").casefold())
    for word in _WORD.finditer(part):
        if stem(word.group(0).casefold()) == kind:
            return f"{part[: word.end()]} of {subject}{part[word.end() :]}"
    return part

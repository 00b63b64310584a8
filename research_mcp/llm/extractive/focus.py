"""What a question asks about the thing a source is about, without a model.

A question that chains two things ("The 2011–12 VCU Rams men's basketball team ... represented
Virginia Commonwealth University which was founded in what year?") asks each of its sources about
one of them. Scored against the whole question, the university's "VCU was founded in 1838" shares
one word of twenty with it and loses to sentences about the team; scored against the clause about
the university ("Virginia Commonwealth University which was founded in what year"), it answers.

A source's title names its subject (a corpus document's or a web page's title, "Virginia
Commonwealth University"; a qualifier in brackets, "End of Days (film)", is dropped). Where the
question names that subject, its focus is the subject with the relative clause that follows the
name ("which was founded ..."), up to the next comma or the end; otherwise ("... the first track on
the box set Back to Mono?") the clause that ends with the name, from the relative word or comma that
opens it.
English puts what it says of a name in the clause next to it. A question that does not name the
source's subject has no focus: the source is scored against the question alone.
"""

from __future__ import annotations

import re

from research_mcp.matching.terms import terms

__all__ = ["focus", "names_subject", "subject"]

_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")
#: Where a clause ends after a name: punctuation.
_CLAUSE_END = re.compile(r"[,;:?!]")
#: Where a clause that ends with a name opens: punctuation or a relative word.
_CLAUSE_START = re.compile(r"[,;:]|\b(?:who|whom|whose|which|that|where|when)\b", re.IGNORECASE)
#: A clause that says something of the name just before it: a relative clause.
_RELATIVE = re.compile(r"^\W*(?:who|whom|whose|which|that|where|when)\b", re.IGNORECASE)
#: Content words a clause needs, besides the name, to say something about it.
MIN_CLAUSE_TERMS = 2


def subject(title: str) -> str:
    """What a source's title names: the title without a qualifier in brackets."""
    return _QUALIFIER.sub("", title).strip()


def _mention(text: str, title: str) -> re.Match[str] | None:
    name = subject(title)
    if not name:
        return None
    return re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text, re.IGNORECASE)


def names_subject(text: str, title: str) -> bool:
    """Whether `text` names the thing the source titled `title` is about."""
    return _mention(text, title) is not None


def focus(question: str, title: str) -> str:
    """The part of `question` about the thing `title` names, or "" when the question does not name it."""
    match = _mention(question, title)
    if match is None:
        return ""
    rest = question[match.end() :]
    if _RELATIVE.match(rest):
        end = _CLAUSE_END.search(rest, _RELATIVE.match(rest).end())  # type: ignore[union-attr]
        after = rest[: end.start()] if end else rest
        if len(terms(after)) >= MIN_CLAUSE_TERMS:
            return f"{match.group()}{after}".strip()
    starts = list(_CLAUSE_START.finditer(question, 0, match.start()))
    start = starts[-1].start() if starts else 0
    before = question[start : match.start()].lstrip(",;: ")
    if len(terms(before)) >= MIN_CLAUSE_TERMS:
        return f"{before}{match.group()}".strip()
    return ""

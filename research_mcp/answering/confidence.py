"""Confidence from the evidence: the ranker's probabilities and the agreement of independent sources.

A question's level follows its best passage's probability of holding the answer (the ranker's
calibrated output) and how far ahead of the other sources it is: `medium` from `ANSWERED`, or from
`CLEAR` when no other independent source comes near it (the best passage of every other source is
at most `RIVAL_SHARE` of it: the evidence points at one place); `high` from `HIGH` when a second,
independent source (not a copy: see `independent`) also has a passage from `ANSWERED`. The
thresholds are fitted on the dev halves of every evaluation set together, on each question's
verified facts as the finished research kept them (bench/evidence_rows.py, bench/fit_confidence.py):
so that a question said medium or high misses its answer rarely, and an answered one is seldom low.
"""

from __future__ import annotations

from collections.abc import Sequence

from research_mcp.core.citations import normalize
from research_mcp.core.contracts import ConfidenceLevel

__all__ = ["ANSWERED", "CLEAR", "HIGH", "LEVELS", "RIVAL_SHARE", "independent", "level_of", "lowest"]

ANSWERED = 0.4
HIGH = 0.6
#: A best passage from CLEAR (under ANSWERED) earns medium when every other source's best passage is
#: at most RIVAL_SHARE of its probability (fitted on dev, every set: see the module's docstring;
#: bench.fit_confidence's 0.2 gave HotpotQA's dev half an overconfident miss, a first hop whose
#: rival was 0.2 of it, so 0.15: no set's overconfident misses rise).
CLEAR = 0.3
RIVAL_SHARE = 0.15
LEVELS: tuple[ConfidenceLevel, ...] = ("low", "medium", "high")


def level_of(probability: float, *, agreeing: int = 1, rival: float | None = None) -> ConfidenceLevel:
    """The level a question's best probability earns, with `agreeing` independent sources from
    ANSWERED and `rival` the best probability of any other independent source (None: not known)."""
    if probability >= HIGH and agreeing >= 2:
        return "high"
    if probability >= ANSWERED:
        return "medium"
    clear = rival is not None and probability >= CLEAR and rival <= RIVAL_SHARE * probability
    return "medium" if clear else "low"


def lowest(levels: Sequence[ConfidenceLevel]) -> ConfidenceLevel:
    return min(levels, key=LEVELS.index) if levels else "low"


def independent(quotes: Sequence[tuple[int, str]]) -> int:
    """How many independent sources among `(source_id, quote)` pairs: a source whose quote is the
    same text as another's (a copy, the same page in another format) does not count again."""
    seen_sources: set[int] = set()
    seen_texts: set[str] = set()
    for source_id, quote in quotes:
        text = normalize(quote)
        if source_id in seen_sources or text in seen_texts:
            continue
        seen_sources.add(source_id)
        seen_texts.add(text)
    return len(seen_sources)

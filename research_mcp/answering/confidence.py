"""Confidence from the evidence: the ranker's probabilities and the agreement of independent sources.

A question's level follows its best passage's probability of holding the answer (the ranker's
calibrated output): `medium` from `ANSWERED`, `high` from `HIGH` when a second, independent source
(not a copy: see `independent`) also has a passage from `ANSWERED`. The thresholds are fitted on the
dev halves of every evaluation set together (bench/answer_table.py prints the calibration per set):
so that a question said medium or high misses its answer rarely, and an answered one is seldom low.
"""

from __future__ import annotations

from collections.abc import Sequence

from research_mcp.core.citations import normalize
from research_mcp.core.contracts import ConfidenceLevel

__all__ = ["ANSWERED", "HIGH", "LEVELS", "independent", "level_of", "lowest"]

ANSWERED = 0.4
HIGH = 0.6
LEVELS: tuple[ConfidenceLevel, ...] = ("low", "medium", "high")


def level_of(probability: float, *, agreeing: int = 1) -> ConfidenceLevel:
    """The level a question's best probability earns, with `agreeing` independent sources from ANSWERED."""
    if probability >= HIGH and agreeing >= 2:
        return "high"
    return "medium" if probability >= ANSWERED else "low"


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

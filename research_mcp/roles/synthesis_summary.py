"""A synthesis's summary lines, as its handle (and a run's) shows them: what it found first (a
disagreement between its sources before anything else), then its confidence, gaps and disagreements."""

from __future__ import annotations

from collections.abc import Mapping

from research_mcp.core.citations import CITATION
from research_mcp.core.contracts import SynthesisOutput

__all__ = ["NOT_COVERED", "synthesis_summary"]

#: The heading code puts over what could not be researched (roles/synthesizer.py writes it).
NOT_COVERED = "## Not covered (failed)"


def synthesis_summary(
    output: SynthesisOutput, failed: int = 0, *, headlines: Mapping[str, str] | None = None
) -> list[str]:
    """The handoff's two summary lines: what it found first (a disagreement between its sources
    before anything else: which side to believe is the first thing a reader must know), then its
    confidence, gaps and disagreements. `headlines`: the short line for each contradiction code found."""
    body = output.report.split(NOT_COVERED, 1)[0]
    lines = [line.strip("-*# ").strip() for line in body.splitlines()]
    prose = [
        line
        for line, raw in zip(lines, body.splitlines(), strict=True)
        if line and not raw.lstrip().startswith("#")
    ]
    # A line citing a fact before any other: a part that found nothing ("_No verified fact answers
    # this._") does not make the headline of a result whose other parts found facts.
    cited = [line for line in prose if CITATION.search(line) and not _note(line)]
    first = cited[0] if cited else prose[0] if prose else (lines[0] if lines else "")
    second = f"confidence {output.confidence.level}; {len(output.gaps)} gaps"
    if output.contradictions:
        first = (headlines or {}).get(output.contradictions[0], output.contradictions[0])
        count = len(output.contradictions)
        second += f"; {count} disagreement{'s' if count > 1 else ''} between sources"
    if failed:
        second += f"; {failed} failed parts or sources, named in the gaps"
    return [first[:200], second]


def _note(line: str) -> bool:
    """A line in italics: a note on the lines around it, no finding."""
    return len(line) > 2 and line.startswith("_") and line.endswith("_")

"""A synthesis's confidence in one plain sentence: what was found, what was not, why the level.

What a person reads (every view, the exports, the MCP App) is this sentence; the reasons code and
the backend gave, rule by rule, stay in the structured content (`StoredSynthesis.confidence_reasons`,
`ResearchResult.confidence_reasons`). The sentence never names a rule, a module or a threshold:

    "2 of 3 questions are answered by 7 verified facts from 2 independent sources; 1 is not
    answered; so confidence is medium, because part of what was asked is not answered."
"""

from __future__ import annotations

from typing import Any

from research_mcp.core.contracts import Confidence, ConfidenceCap, ConfidenceLevel
from research_mcp.roles.evidence import cap_confidence
from research_mcp.storage.outputs import ConfidenceCounts, StoredSynthesis

__all__ = ["gated_confidence", "plain_confidence"]


def _count(number: int, thing: str, things: str | None = None) -> str:
    return f"{number} {thing if number == 1 else things or thing + 's'}"


def _found(evidence: ConfidenceCounts) -> str:
    answered = evidence.questions - evidence.unanswered
    if evidence.cited_facts == 0:
        return "No verified fact supports the report"
    support = (
        f"{_count(evidence.cited_facts, 'verified fact')} from "
        f"{_count(evidence.independent_sources, 'independent source')}"
    )
    if evidence.questions <= 1:
        if not answered:
            return f"No verified fact answers the question; the report rests on {support}"
        if evidence.unclear:
            return f"{support[0].upper()}{support[1:]} bear on the question but may not answer it"
        return f"The question is answered by {support}"
    verb = "is" if answered == 1 else "are"
    return f"{answered} of {evidence.questions} questions {verb} answered by {support}"


def _missing(evidence: ConfidenceCounts) -> list[str]:
    parts = []
    if evidence.unanswered and evidence.questions > 1:
        parts.append(f"{evidence.unanswered} {'is' if evidence.unanswered == 1 else 'are'} not answered")
    if evidence.unclear and evidence.questions > 1:
        parts.append(f"{_count(evidence.unclear, 'answer')} may not say what was asked")
    if evidence.disagreements:
        parts.append(f"the sources disagree on {_count(evidence.disagreements, 'point')}")
    if evidence.failed:
        parts.append(
            f"{_count(evidence.failed, 'part or source', 'parts or sources')} could not be researched"
        )
    if evidence.unmet_criteria:
        parts.append(f"{_count(evidence.unmet_criteria, 'criterion', 'criteria')} of the plan not met")
    return parts


def _why(level: ConfidenceLevel, evidence: ConfidenceCounts) -> str:
    if level == "high":
        return "independent sources agree on the answers"
    if evidence.cited_facts == 0:
        return "nothing the report says is backed by a verified quote"
    if level == "low":
        if evidence.unmet_criteria and not evidence.unanswered:
            return "not everything the plan asked for is covered"
        if evidence.unanswered * 2 >= max(1, evidence.questions):
            return "most of what was asked is not answered by the documents read"
        return "the facts found do not clearly answer what was asked"
    if evidence.disagreements:
        return "the sources disagree"
    if evidence.unanswered or evidence.failed:
        return "part of what was asked is not answered"
    if evidence.unmet_criteria:
        return "not everything the plan asked for is covered"
    if evidence.unclear:
        return "some answers may not say what was asked"
    if evidence.independent_sources < 2 or not evidence.corroborated:
        return "no answer is backed by two independent sources"
    return "the facts answer what was asked only in part"


def plain_confidence(level: ConfidenceLevel, evidence: ConfidenceCounts) -> str:
    """One sentence a person reads: what was found, what was not, and why the level."""
    said = "; ".join([_found(evidence), *_missing(evidence)])
    return f"{said}; so confidence is {level}, because {_why(level, evidence)}."


def gated_confidence(output: StoredSynthesis, cap: ConfidenceLevel, unmet: list[str]) -> dict[str, Any]:
    """A kept synthesis's confidence capped for its phase's unmet criteria: the plain sentence said
    again with them, the reason added to the structured ones."""
    why = f"phase criteria unmet: {', '.join(unmet)}"
    capped = cap_confidence(output.confidence, cap, why)
    caps = [*output.confidence_caps, ConfidenceCap(rule="phase_criteria", level=cap, reason=why)]
    if capped.level == output.confidence.level or output.confidence_counts is None:
        return {"confidence": capped, "confidence_caps": caps}
    counts = output.confidence_counts.model_copy(update={"unmet_criteria": len(unmet)})
    return {
        "confidence_caps": caps,
        "confidence": Confidence(level=capped.level, reasoning=plain_confidence(capped.level, counts)),
        "confidence_reasons": [*output.confidence_reasons, f"Capped at {cap}: {why}"],
        "confidence_counts": counts,
    }

"""What a phase is judged on: its success criteria, each met or not, judged from a synthesis; an
unmet one as a gap naming the evidence; and the phase's own budget, spent or not (runs/phases.py
iterates while criteria are unmet and the budget allows)."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from research_mcp.answering.terms import said_terms, terms
from research_mcp.core.citations import normalize
from research_mcp.core.contracts import Budget, Phase
from research_mcp.runs.context import RunContext
from research_mcp.storage.outputs import StoredSynthesis

__all__ = ["PhaseSpending", "answered", "corroboration", "criteria_status", "theme_covered", "unmet_gap"]

_LEVELS = {"low": 0, "medium": 1, "high": 2}


def corroboration(fact_ids: list[int], sources: dict[int, tuple[int, int]]) -> int:
    """Sources agreeing on a finding: its facts' distinct sources, or a merged fact's corroborations."""
    known = [sources[f] for f in fact_ids if f in sources]
    return max(len({source for source, _ in known}), max((count for _, count in known), default=0))


def theme_covered(theme: str, said: Sequence[str]) -> bool:
    """A verified fact says every content term of the theme (a theme of stopwords only: its words)."""
    asked = list(dict.fromkeys(terms(theme)))
    if not asked:
        return any(theme.casefold() in text.casefold() for text in said)
    return any(len(said_terms(asked, set(terms(text)))) == len(asked) for text in said)


def answered(output: StoredSynthesis, extracted_for: Collection[str]) -> set[str]:
    """The questions a synthesis answered by its own evidence rules (roles/evidence.py), normalized:
    those a verified fact it cites was extracted for (`extracted_for`), less those a gap of it (or
    of a part, carried up under the part's title) says are not established. A gap saying no fact was
    found for one is a part's first reading, which a later one (the phase's iteration) answered."""
    found = {normalize(question) for question in extracted_for if question}
    for gap in output.as_gaps():
        if gap.kind == "not_established" and gap.question:
            found.discard(normalize(gap.question))
    return found


def criteria_status(
    phase: Phase,
    output: StoredSynthesis,
    source_of: dict[int, tuple[int, int]],
    said: Sequence[str] = (),
    established: Collection[str] = (),
) -> dict[str, bool]:
    """Each criterion of the phase, met or not, judged from a synthesis handoff's output; a theme
    from `said`, what the verified facts the synthesis cites say (statement and quote each), or from
    `established`, the questions the synthesis answered by its evidence rules (`answered`): "Which
    directory does adduser copy skeleton files from?" is answered by adduser.conf(5)'s "SKEL The
    directory from which skeletal user configuration files should be copied", which does not say
    "adduser" (its page's title does, which the evidence rules read)."""
    criteria = phase.criteria
    status: dict[str, bool] = {}
    if criteria.min_corroboration is not None:
        findings = output.key_findings
        status["corroboration"] = bool(findings) and all(
            corroboration(finding.fact_ids, source_of) >= criteria.min_corroboration for finding in findings
        )
    for theme in criteria.themes:
        status[f"theme:{theme}"] = normalize(theme) in established or theme_covered(theme, said)
    if criteria.contradictions_resolved:
        status["contradictions_resolved"] = not output.contradictions
    if criteria.min_confidence is not None:
        status["confidence"] = _LEVELS[output.confidence.level] >= _LEVELS[criteria.min_confidence]
    return status


def unmet_gap(
    phase: Phase, criterion: str, output: StoredSynthesis, source_of: dict[int, tuple[int, int]]
) -> str:
    """An unmet criterion as a gap a reader can act on: what was required, and the evidence found."""
    criteria = phase.criteria
    head = f"Phase {phase.name!r} criterion unmet: "
    if criterion == "corroboration":
        weakest = min(
            (corroboration(finding.fact_ids, source_of) for finding in output.key_findings), default=0
        )
        return head + (
            f"each key finding agreed by {criteria.min_corroboration} sources; "
            f"{len(output.key_findings)} key findings, the weakest agreed by {weakest}"
        )
    if criterion.startswith("theme:"):
        theme = criterion.split(":", 1)[1]
        return head + f"no verified finding of the report covers {theme!r}"
    if criterion == "contradictions_resolved":
        return (
            head
            + f"contradictions resolved; {len(output.contradictions)} remain: "
            + "; ".join(output.contradictions[:2])
        )
    return head + (
        f"confidence at least {criteria.min_confidence}; the synthesis reached {output.confidence.level} "
        f"({output.confidence.reasoning[:200]})"
    )


@dataclass
class PhaseSpending:
    """What a phase has spent since it started, against the phase's own budget."""

    budget: Budget | None
    tokens: int
    cost_usd: float
    started: float = field(default_factory=time.monotonic)
    sources: int = 0

    def exceeded(self, rc: RunContext) -> str | None:
        limits, spent = self.budget, rc.deps.budget
        if limits is None:
            return None
        if limits.max_tokens is not None and spent.tokens - self.tokens >= limits.max_tokens:
            return f"{spent.tokens - self.tokens} of its {limits.max_tokens} tokens spent"
        if limits.max_cost_usd is not None and spent.cost_usd - self.cost_usd >= limits.max_cost_usd:
            return f"${spent.cost_usd - self.cost_usd:.4f} of its ${limits.max_cost_usd:.4f} spent"
        if limits.max_seconds is not None and time.monotonic() - self.started >= limits.max_seconds:
            return f"its {limits.max_seconds:g} s time limit reached"
        return None

    def stop_reason(self, rc: RunContext) -> str | None:
        """Why no further iteration may start: tokens, cost or time spent, or every source read."""
        if self.sources_left() == 0:
            return f"its {self.sources} sources read"
        return self.exceeded(rc)

    def sources_left(self) -> int | None:
        if self.budget is None or self.budget.max_sources is None:
            return None
        return max(self.budget.max_sources - self.sources, 0)

"""The scout's quick scan: its first `SCANNED` candidates (after clustering) read by the extractor
role itself, on their first `SCAN_CHARS` characters, asked the scout's questions (else its topic).

Each scan is an extractor handoff of the scout's node (`<node>/scan`, so no leaf takes it for its
own reading); its facts are counted, quotes checked, and not kept as the run's facts: a leaf that
reads the source extracts it whole. What a scan finds moves the candidate's score by at most
`SCAN_WEIGHT` (verified facts answering the questions raise it, a source that says nothing on them
or cannot be read lowers it) and gives it one short line of why (`ScanFinding.note`).

The scans keep to a box of their own: the tokens of `RESEARCH_MCP_SWEEP_TOKENS` (the no-model
extractor spends none; 0 turns the scans off), what is left of the sweep's time box, and `SCANNED`
sources. When a box closes the scout scans no more and says so among its failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import anyio

from research_mcp.contracts import ExtractorOutput, Source
from research_mcp.errors import BudgetExhausted, ModelError, ResearchError
from research_mcp.llm.base import Usage
from research_mcp.role_inputs import ExtractorInput
from research_mcp.roles.base import BudgetTracker, HandoffContext, Place, RoleDeps, cache_key, perform
from research_mcp.roles.extractor import MAX_QUESTIONS, Extraction, located_facts
from research_mcp.sources.library import Candidate, ref_key
from research_mcp.storage.outputs import StoredExtraction, StoredOutput

__all__ = ["SCANNED", "SCAN_CHARS", "SCAN_WEIGHT", "ScanFinding", "Scans", "quick_scan"]

#: Candidates quick-scanned, the first after clustering.
SCANNED = 3
#: What a scan reads of a source.
SCAN_CHARS = 4000
#: The most a scan moves a candidate's score (0..1), up or down.
SCAN_WEIGHT = 0.2


@dataclass(frozen=True)
class ScanFinding:
    """What one quick scan found: its facts, those whose quote is in the text, and for each question
    asked the confidence of its best verified fact (0: none); or why the source could not be scanned."""

    facts: int = 0
    verified: int = 0
    best: tuple[float, ...] = ()
    error: str = ""

    @property
    def strength(self) -> float:
        """How well the opening answers a question, 0..1: the confidence of its best verified fact
        (a discovery leaf's questions are its siblings': a source need answer only one)."""
        return max(self.best, default=0.0)

    @property
    def adjustment(self) -> float:
        """The move of the candidate's score: up to +SCAN_WEIGHT for a confident verified answer,
        down to -SCAN_WEIGHT for none (or a source that cannot be read)."""
        if self.error or not self.verified:
            return -SCAN_WEIGHT
        return round(SCAN_WEIGHT * (2 * self.strength - 1), 4)

    @property
    def note(self) -> str:
        """One short line: why the scan moved the candidate."""
        if self.error:
            return f"unreadable: {self.error[:60]}"
        if not self.facts:
            return "nothing on the questions in its opening"
        if not self.verified:
            return f"{self.facts} facts, no quote found in the text"
        best = ", ".join(f"Q{n} {b:.2f}" for n, b in enumerate(self.best, 1) if b)
        return f"{self.verified} of {self.facts} quotes verified; confidence {best}"[:120]


@dataclass
class Scans:
    """The findings by candidate (its `ref_key`), and why scanning stopped early, if it did."""

    found: dict[str, ScanFinding] = field(default_factory=dict)
    stopped: str = ""


@dataclass
class _ScanBudget(BudgetTracker):
    """The scans' own token box, charged to the run's budget as well and checked with it."""

    run: BudgetTracker = field(default_factory=BudgetTracker)

    def check(self) -> None:
        self.run.check()
        super().check()

    def spend(self, usage: Usage) -> None:
        super().spend(usage)
        self.run.spend(usage)


class QuickScan(Extraction):
    """An extraction of a source's opening that keeps no facts: it only counts and checks them."""

    def __init__(self, source: Source, asked: ExtractorInput) -> None:
        super().__init__(source.model_copy(update={"text": source.text[:SCAN_CHARS]}), asked, "")
        self.truncated = len(source.text) > SCAN_CHARS

    def reuse_key(self, deps: RoleDeps) -> str:
        return cache_key(
            deps,
            self.name,
            {"content_hash": self.source.content_hash, "questions": self.asked.questions, "scan": SCAN_CHARS},
        )

    def reused(self, context: HandoffContext, stored: StoredOutput) -> None:
        """Nothing to link: a scan keeps no facts."""

    def check(self, context: HandoffContext, output: ExtractorOutput) -> StoredExtraction:
        verified = sum(fact.verified for fact in located_facts(self.source, output, self.asked.questions))
        return self.stored(
            output, verified=verified, unverified=len(output.facts) - verified, source_id=self.source.id
        )


async def quick_scan(
    deps: RoleDeps, candidates: Sequence[Candidate], questions: Sequence[str], place: Place, *, seconds: float
) -> Scans:
    """Scan the first `SCANNED` candidates within the token box, `seconds` and the run's budget,
    each asked `questions` (at least one)."""
    box = _ScanBudget(max_tokens=deps.settings.sweep_tokens, run=deps.budget)
    scan_deps = replace(deps, budget=box)
    asked = list(dict.fromkeys(questions))[:MAX_QUESTIONS]
    scans, chosen = Scans(), list(candidates[:SCANNED])
    if not deps.settings.sweep_tokens:  # scans turned off
        return scans
    with anyio.move_on_after(max(seconds, 0.0)) as timer:
        for candidate in chosen:
            if box.exceeded() and not deps.budget.exceeded():
                break
            finding = await _scan(scan_deps, candidate, asked, place)
            if finding is None:  # the token box closed during the scan's repairs
                break
            scans.found[ref_key(candidate.ref)] = finding
    done, total = len(scans.found), len(chosen)
    if timer.cancelled_caught or seconds <= 0:
        scans.stopped = f"The sweep's time box closed after {done} of {total} quick scans."
    elif done < total:
        scans.stopped = (
            f"The sweep's token box of {deps.settings.sweep_tokens:,} tokens closed after {done} of {total} "
            f"quick scans ({box.tokens:,} spent)."
        )
    return scans


async def _scan(deps: RoleDeps, candidate: Candidate, asked: list[str], place: Place) -> ScanFinding | None:
    try:
        source = await deps.sources.read(candidate.ref, title=candidate.title)
    except (BudgetExhausted, anyio.get_cancelled_exc_class()):
        raise
    except (ResearchError, OSError) as error:
        return ScanFinding(error=str(error) or type(error).__name__)
    role = QuickScan(
        source,
        ExtractorInput(
            source_id=source.id, source_ref=source.ref, source_title=source.title, questions=asked
        ),
    )
    assert isinstance(deps.budget, _ScanBudget)
    try:
        result = await perform(deps, role, place)
    except BudgetExhausted:
        if deps.budget.run.exceeded():
            raise
        return None
    except ModelError as error:
        return ScanFinding(error=f"scan failed: {error}")
    facts = result.output.facts
    located = located_facts(role.source, result.output, asked)
    best = [0.0] * len(asked)
    for fact, kept in zip(facts, located, strict=True):
        if kept.verified and fact.question_index is not None and fact.question_index < len(asked):
            best[fact.question_index] = max(best[fact.question_index], fact.confidence)
    return ScanFinding(facts=len(facts), verified=sum(kept.verified for kept in located), best=tuple(best))

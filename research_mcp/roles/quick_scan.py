"""The scout's quick scan: its top `SCANNED` candidates (after clustering, each search's first
results first) read by the extractor role itself, their first `SCAN_CHARS` characters asked the
scout's questions (else its topic). Each scan is an extractor handoff of node `<node>/scan` (no
leaf takes it for its reading); its quotes are checked, its facts not kept.

A confident verified answer raises the candidate's score (`rescored`), quotes not in the text or
an unreadable page lower it, a weak answer leaves it (it may be a bridge: bench/scout_sweep.py);
each scanned candidate gets a one-line `ScanFinding.note`. The scans' box: the tokens of
`RESEARCH_MCP_SWEEP_TOKENS`, the sweep's time left, `SCANNED` sources; when it closes, the scout
says so among its failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import anyio

from research_mcp.answering.confidence import ANSWERED
from research_mcp.core.contracts import ExtractorOutput, Source
from research_mcp.core.errors import BudgetExhausted, ModelError, ResearchError
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.llm.base import Usage
from research_mcp.roles.base import BudgetTracker, HandoffContext, Place, RoleDeps, cache_key, perform
from research_mcp.roles.extractor import MAX_QUESTIONS, Extraction, located_facts
from research_mcp.sources.library import Candidate, ref_key
from research_mcp.storage.outputs import StoredExtraction, StoredOutput

__all__ = ["SCANNED", "SCAN_CHARS", "SCAN_WEIGHT", "ScanFinding", "Scans", "quick_scan", "rescored"]

#: Candidates quick-scanned, the top after clustering.
SCANNED = 3
#: What a scan reads of a source.
SCAN_CHARS = 4000
#: The most a scan moves a candidate's score (0..1): what a fully confident verified answer gains,
#: and what a failed scan (quotes none of them in the text, an unreadable page) loses.
SCAN_WEIGHT = 0.2
#: The confidence from which a scan's best verified fact counts as an answer: where the no-key
#: ranker's calibrated probability earns `medium` (a model's confidences are higher still).
CONFIDENT = ANSWERED


@dataclass(frozen=True)
class ScanFinding:
    """What one quick scan found: its facts, those whose quote is in the text, and for each question
    asked the confidence of its best verified fact (0: none); or why the source could not be scanned."""

    facts: int = 0
    verified: int = 0
    best: tuple[float, ...] = ()
    error: str = ""
    #: What each of `best` answers, as the note names it: "Q1" (a question), "topic".
    labels: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """It gave facts whose quotes are none of them in the text, or it could not be read: a
        credibility failure (a scan that found nothing is only weak)."""
        return bool(self.error) or (self.facts > 0 and not self.verified)

    @property
    def strength(self) -> float:
        """How well the opening answers a question: the confidence of its best verified fact when
        above CONFIDENT, else 0 (a weaker answer says little: a page a question needs may be a bridge to
        its answer). A discovery leaf's questions are its siblings': a source need answer only one."""
        best = max(self.best, default=0.0)
        return best if best > CONFIDENT else 0.0

    @property
    def note(self) -> str:
        """One short line: why the scan moved the candidate."""
        if self.error:
            return f"unreadable: {self.error[:60]}"
        if not self.facts:
            return "nothing on the questions in its opening"
        if not self.verified:
            return f"{self.facts} facts, no quote found in the text"
        labels = self.labels or tuple(f"Q{n}" for n in range(1, len(self.best) + 1))
        best = ", ".join(f"{label} {b:.2f}" for label, b in zip(labels, self.best, strict=False) if b)
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


def rescored(ranked: Sequence[tuple[str, float, bool]], scans: Scans) -> list[float]:
    """The scores of the ranked candidates, each `(ref key, the ranker's score, included)`, after
    the scans: one whose scan found a verified answer given with confidence gains up to
    SCAN_WEIGHT (`ScanFinding.strength` from CONFIDENT, as a share of the strongest scan's), one whose scan failed loses SCAN_WEIGHT, the others keep
    theirs."""
    scores = []
    strongest = max((finding.strength for finding in scans.found.values()), default=0.0)
    for key, score, _ in ranked:
        finding = scans.found.get(key)
        if finding is not None and finding.failed:
            score -= SCAN_WEIGHT
        elif finding is not None and finding.strength:
            # The strongest scanned answer gains all of it, a weaker one its share above CONFIDENT.
            score += SCAN_WEIGHT * (finding.strength - CONFIDENT) / max(strongest - CONFIDENT, 1e-9)
        scores.append(round(min(1.0, max(0.0, score)), 4))
    return scores


async def quick_scan(
    deps: RoleDeps,
    candidates: Sequence[Candidate],
    topic: str,
    questions: Sequence[str],
    place: Place,
    *,
    seconds: float,
) -> Scans:
    """Scan the first `SCANNED` candidates within the token box, `seconds` and the run's budget,
    each asked the `questions`, or the `topic` when there are none."""
    box = _ScanBudget(max_tokens=deps.settings.sweep_tokens, run=deps.budget)
    scan_deps = replace(deps, budget=box)
    # The scout's questions (without repeats already), numbered as the curation numbers them; the
    # topic when there are none (asked beside them, a topic's own words outscore every question).
    asked = list(questions[:MAX_QUESTIONS]) or [topic]
    labels = tuple(f"Q{n}" for n in range(1, len(asked) + 1)) if questions else ("topic",)
    scans, chosen = Scans(), list(candidates[:SCANNED])
    if not deps.settings.sweep_tokens:  # scans turned off
        return scans
    with anyio.move_on_after(max(seconds, 0.0)) as timer:
        for candidate in chosen:
            if box.exceeded() and not deps.budget.exceeded():
                break
            finding = await _scan(scan_deps, candidate, asked, labels, place)
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


async def _scan(
    deps: RoleDeps, candidate: Candidate, asked: list[str], labels: tuple[str, ...], place: Place
) -> ScanFinding | None:
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
    return ScanFinding(
        facts=len(facts), verified=sum(kept.verified for kept in located), best=tuple(best), labels=labels
    )

"""The models every layer shares: compact return, handoff, source, fact, plan tree, role outputs
and the finished-run result.

Role output models (`PlannerOutput`, `ExtractorOutput`, `SynthesisOutput`, `ScoutOutput`) are used
twice: their JSON schema is what a model backend is asked to fill, and the same model validates
the answer. Keep their field descriptions short: they are sent with every call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from research_mcp.core.gaps import NOT_ESTABLISHED, UNANSWERED, Gap

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BUDGET_CAPS",
    "FINISHED",
    "NOT_ESTABLISHED",
    "RETRYABLE",
    "UNANSWERED",
    "Answer",
    "Budget",
    "ClaimedFact",
    "CompactReturn",
    "Confidence",
    "ConfidenceCap",
    "CriterionVerdict",
    "Embedder",
    "ExtractorOutput",
    "ExtractorTaskSpec",
    "Fact",
    "Finding",
    "FollowUpQuestion",
    "LinkedSource",
    "Phase",
    "PhaseCriteria",
    "PlanNode",
    "PlannerOutput",
    "RankedCandidate",
    "ReportPage",
    "ResearchMetadata",
    "ResearchResult",
    "ScoutOutput",
    "Source",
    "SourceMetadata",
    "SourceRef",
    "SynthesisOutput",
]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, shape ``(len(texts), dim)``, dtype float32, each row of unit length."""
        ...


ConfidenceLevel = Literal["high", "medium", "low"]
NodeKind = Literal["executor", "leaf", "discovery"]
RoleName = Literal["planner", "executor", "extractor", "synthesizer", "scout"]
HandoffStatus = Literal["running", "done", "failed", "cancelled"]
# "partial": finished, but some parts failed; they are named in the gaps, and
# execute_plan(run_id, retry=true) retries them alone.
# "no_sources": finished, but no search found a source and no known fact applied: nothing was
# researched; the run's error says how to add sources (RESEARCH_MCP_CORPUS, TAVILY_API_KEY, leaf sources).
RunStatus = Literal[
    "pending", "running", "done", "partial", "failed", "cancelled", "budget_exhausted", "no_sources"
]
FINISHED: frozenset[RunStatus] = frozenset({"done", "partial", "budget_exhausted", "no_sources"})  # a report
RETRYABLE: frozenset[RunStatus] = frozenset({"partial"})  # finished, but a retry may fill its gaps
View = Literal["summary", "report", "sources", "facts", "confidence", "gaps", "followups", "tree", "handoff"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- the compact return: what crosses into the host -------------------------------------------


class CompactReturn(BaseModel):
    """Handle to work kept in the store; `next` suggests calls."""

    id: str
    kind: Literal["plan", "run", "extraction", "curation"]
    status: str
    summary: list[str] = Field(max_length=3)
    metrics: dict[str, int | float | str] = Field(default_factory=dict)
    next: list[str] = Field(default_factory=list)
    backend: str

    def render(self) -> str:
        """The short text rendering sent beside the structured content, for hosts that show only text."""
        text = "\n".join([f"{self.kind} {self.id}: {self.status} ({self.backend})", *self.summary])
        return text + ("\nnext: " + " | ".join(self.next) if self.next else "")


# --- plans -------------------------------------------------------------------------------------


# The largest budget each field takes: finite, and small enough to store (SQLite integers are 64-bit).
BUDGET_CAPS = {
    "max_tokens": 100_000_000,
    "max_cost_usd": 10_000,
    "max_seconds": 604_800,
    "max_sources": 10_000,
}


class Budget(_Strict):
    """Limits; unset means none."""

    max_tokens: int | None = Field(default=None, description="Tokens.")
    max_cost_usd: float | None = Field(default=None, description="USD.")
    max_seconds: float | None = Field(default=None, description="Seconds.")
    max_sources: int | None = Field(default=None, description="Sources.")

    # Checked here rather than with `gt=`/`le=` so that the tool schemas, sent on every turn, stay small.
    @field_validator("max_tokens", "max_cost_usd", "max_seconds", "max_sources")
    @classmethod
    def _finite_and_capped(cls, value: float | None, info: ValidationInfo) -> float | None:
        cap = BUDGET_CAPS[str(info.field_name)]
        if value is not None and not (math.isfinite(value) and 0 < value <= cap):
            raise ValueError(f"give a finite number above 0 and at most {cap:,}")
        return value


class ExtractorTaskSpec(_Strict):
    """What an extractor is asked; passed to it verbatim."""

    questions: list[Annotated[str, Field(min_length=3, max_length=500)]] = Field(min_length=1, max_length=10)
    expected_format: str = Field(default="", max_length=500)
    acceptance_criteria: list[Annotated[str, Field(max_length=300)]] = Field(
        default_factory=list, max_length=10
    )
    priority: int = Field(default=3, ge=1, le=5, description="1 highest.")
    budget: Budget | None = None
    discovery_intense: bool = False


class PhaseCriteria(_Strict):
    """Success criteria checked after each iteration of a phase."""

    min_corroboration: int | None = Field(default=None, ge=1, description="Sources agreeing per key fact.")
    themes: list[str] = Field(
        default_factory=list, max_length=10, description="Themes the findings must cover."
    )
    contradictions_resolved: bool = False
    min_confidence: ConfidenceLevel | None = None


class Phase(_Strict):
    name: str = Field(max_length=120)
    criteria: PhaseCriteria = Field(default_factory=PhaseCriteria)
    budget: Budget | None = None
    max_iterations: int = Field(default=2, ge=1, le=5)


class PlanNode(_Strict):
    """A node of the plan tree: an executor (interior), an ingestion leaf or a discovery leaf."""

    id: str = Field(default="", max_length=40, description="Assigned by the server; leave empty.")
    kind: NodeKind
    title: str = Field(min_length=1, max_length=200)
    questions: list[Annotated[str, Field(min_length=3, max_length=500)]] = Field(
        default_factory=list, max_length=10
    )
    sources: list[Annotated[str, Field(max_length=2000)]] = Field(
        default_factory=list,
        max_length=20,
        description="Leaf sources: URLs or corpus:<id>. Empty: the leaf searches.",
    )
    search_queries: list[Annotated[str, Field(max_length=300)]] = Field(default_factory=list, max_length=6)
    task_specs: list[ExtractorTaskSpec] = Field(default_factory=list, max_length=10)
    phases: list[Phase] = Field(default_factory=list, max_length=5)
    budget: Budget | None = None
    children: list[PlanNode] = Field(default_factory=list, max_length=12)

    def walk(self) -> list[PlanNode]:
        """This node and all below it, depth first."""
        nodes = [self]
        for child in self.children:
            nodes.extend(child.walk())
        return nodes


class PlannerOutput(_Strict):
    """The planner's answer: a plan tree whose root is an executor."""

    root: PlanNode
    rationale: str = Field(default="", max_length=2000)


# --- sources and facts -------------------------------------------------------------------------


class SourceMetadata(BaseModel):
    """Where a source came from: for a web page its final URL and content type, for a corpus
    document its folder and path."""

    model_config = ConfigDict(extra="allow")

    final_url: str | None = None
    content_type: str | None = None
    root: str | None = None
    path: str | None = None


class Source(BaseModel):
    """A source as stored: its text and hash make citations checkable."""

    id: int
    ref: str = Field(description="URL, corpus:<id> or text:<hash>.")
    kind: Literal["web", "corpus", "text"]
    title: str = ""
    content_hash: str
    text: str
    fetched_at: datetime
    metadata: SourceMetadata = Field(default_factory=SourceMetadata)


class SourceRef(BaseModel):
    """A source as reported to the host."""

    id: str
    url_or_path: str
    title: str
    relevance: float | None = None
    reason: str = Field(default="", description="Why it is relevant: the cited facts it gives or backs.")


class ClaimedFact(_Strict):
    """One atomic fact as an extractor model claims it, before code checks it: its statement and the
    passage it says is verbatim, the question by its index in those it was asked. It is the model's
    answer schema (limits and descriptions it is shown), not a `Fact`: it names no source, and its
    quote is not yet looked up in one (`roles.extractor.located_facts` makes the `Fact`)."""

    statement: str = Field(min_length=3, max_length=1000, description="The fact in your words.")
    quote: str = Field(min_length=3, max_length=1500, description="Verbatim passage of the source.")
    question_index: int | None = Field(default=None, ge=0, description="Index of the question it answers.")
    confidence: float = Field(default=0.7, ge=0, le=1)


class Fact(BaseModel):
    """A fact: a statement and the verbatim quote that backs it, with where it comes from (its source,
    the span of the quote there, the question it was found for) and how far it is checked (`verified`:
    the quote was found in the source). The one model of a fact: an extraction makes it, the store
    keeps it as is (`Store.add_facts`, which gives it its `id`) and every reader gets it back.
    `question` is blank ("") in a fact lent to a user from another user's research (`Store.as_lent`)."""

    #: Its row in the store; 0 before it is stored (SQLite's ids start at 1).
    id: int = 0
    statement: str
    quote: str
    source_id: int
    location: tuple[int, int] | None = Field(
        default=None, description="Character span of the quote in the source text."
    )
    confidence: float
    verified: bool
    question: str | None = None
    corroborations: int = 1


class Answer(_Strict):
    question: str = Field(max_length=500)
    answer: str = Field(max_length=2000)
    fact_indexes: list[int] = Field(default_factory=list, description="Indexes into facts.")


class Confidence(_Strict):
    level: ConfidenceLevel
    reasoning: str = Field(max_length=1000)


class ConfidenceCap(BaseModel):
    """A rule of code capping a synthesis's confidence: `rule`, its stable name (what tests and code
    match on); `level`, the highest confidence it allows; `reason`, what it found, in words."""

    model_config = ConfigDict(frozen=True)

    rule: str
    level: ConfidenceLevel
    reason: str


class FollowUpQuestion(_Strict):
    question: str = Field(max_length=500)
    confidence: float = Field(ge=0, le=1)
    rationale: str = Field(max_length=500)


class LinkedSource(_Strict):
    ref: str = Field(max_length=2000, description="URL or citation found in the source.")
    context: str = Field(max_length=500)
    priority: int = Field(default=3, ge=1, le=5)


class ExtractorOutput(_Strict):
    """What an extractor returns for one source and its questions."""

    facts: list[ClaimedFact] = Field(default_factory=list, max_length=40)
    answers: list[Answer] = Field(default_factory=list, max_length=10)
    confidence: Confidence
    follow_up_questions: list[FollowUpQuestion] = Field(default_factory=list, max_length=5)
    source_identified_gaps: list[Annotated[str, Field(max_length=500)]] = Field(
        default_factory=list, max_length=5
    )
    linked_candidate_sources: list[LinkedSource] = Field(default_factory=list, max_length=8)


class Finding(_Strict):
    statement: str = Field(max_length=1000)
    fact_ids: list[int] = Field(default_factory=list, description="Ids of the facts supporting it.")


class CriterionVerdict(_Strict):
    """The synthesizer's judgement of one acceptance criterion it was given (by its number)."""

    index: int = Field(ge=0, description="The criterion's number, C<index>.")
    met: bool
    evidence: str = Field(default="", max_length=300, description="Why, citing facts as [F12].")


class SynthesisOutput(_Strict):
    """A synthesizer's report over its inputs; cites facts as [F<id>] only."""

    report: str = Field(max_length=20000, description="Markdown; cite facts as [F12].")
    key_findings: list[Finding] = Field(default_factory=list, max_length=15)
    confidence: Confidence
    gaps: list[Annotated[str, Field(max_length=500)]] = Field(default_factory=list, max_length=10)
    contradictions: list[Annotated[str, Field(max_length=500)]] = Field(default_factory=list, max_length=10)
    suggested_followups: list[Annotated[str, Field(max_length=300)]] = Field(
        default_factory=list, max_length=5
    )
    criteria: list[CriterionVerdict] = Field(
        default_factory=list, max_length=20, description="A verdict on each acceptance criterion given."
    )
    _typed: dict[str, Gap] = PrivateAttr(default_factory=dict)  # by text: never in a model's schema

    def set_gaps(self, gaps: Sequence[Gap]) -> None:
        """The gaps as code typed them (the no-model backend writes them so): their texts in `gaps`."""
        self.gaps = [gap.text for gap in gaps]
        self._typed = {gap.text: gap for gap in gaps}

    def as_gaps(self) -> list[Gap]:
        """Each of `gaps` with its kind: as code typed it, else (a language model's words) `other`."""
        return [self._typed.get(text) or Gap(text=text) for text in self.gaps]


class RankedCandidate(_Strict):
    index: int = Field(ge=0, description="Index of the candidate in the list given.")
    include: bool = True
    score: float = Field(ge=0, le=1)
    tags: list[Literal["authoritative", "recent", "broad", "specific", "diverse", "primary", "secondary"]] = (
        Field(default_factory=list)
    )
    rationale: str = Field(default="", max_length=300)


class ScoutOutput(_Strict):
    """The scout's curation: candidates ranked and tagged."""

    ranked: list[RankedCandidate] = Field(default_factory=list, max_length=40)
    coverage_note: str = Field(default="", max_length=1000)


# --- results ----------------------------------------------------------------------


class ResearchMetadata(BaseModel):
    searches: int = 0
    sources_read: int = 0
    llm_calls: int = 0
    reused_answers: int = 0  # answers read back from an earlier identical request: no model call
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    citations_made: int = 0
    citations_verified: int = 0
    citations_dropped: int = 0
    backend: str = ""


class ResearchResult(BaseModel):
    """A finished run, as report_results assembles it."""

    findings: str
    sources: list[SourceRef]
    confidence: Confidence
    gaps: list[str]
    metadata: ResearchMetadata
    suggested_followups: list[str]
    confidence_reasons: list[str] = Field(
        default_factory=list,
        description="Why the confidence is at its level, rule by rule, for programs; "
        "`confidence.reasoning` says it in one sentence for people.",
    )


class ReportPage(BaseModel):
    """One page of a view, within max_tokens."""

    id: str
    view: str
    text: str
    cursor: str | None = Field(description="Pass to continue; null on the last page")
    page_tokens: int

    @field_validator("text")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        return value.replace("\x00", "")

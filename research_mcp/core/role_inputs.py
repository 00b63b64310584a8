"""What each role is given, stored with its handoff: the planner's query, the extractor's source
and questions, the synthesizer's inputs, the scout's candidates. The payload variants add what a
model reads (the source text, the facts and child reports fetched from the store)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from research_mcp.core.contracts import Budget, ConfidenceLevel, ExtractorTaskSpec, Fact, PlannerOutput
from research_mcp.core.gaps import GapList

__all__ = [
    "ChildReport",
    "ExtractorInput",
    "ExtractorPayload",
    "PlannerInput",
    "ScoutCandidate",
    "ScoutInput",
    "SourceInsight",
    "SynthesisInput",
    "SynthesisPayload",
]


class PlannerInput(BaseModel):
    query: str
    suggested_plan: PlannerOutput | None = None
    budget: Budget | None = None
    known_facts: int = 0
    violations: list[str] = Field(
        default_factory=list, description="Feasibility violations of the last attempt."
    )


class ExtractorInput(BaseModel):
    source_id: int
    source_ref: str
    source_title: str
    questions: list[str]
    task_spec: ExtractorTaskSpec | None = None
    context: str = ""


class ExtractorPayload(ExtractorInput):
    """The extractor's input with the source text it reads."""

    source_text: str


class ChildReport(BaseModel):
    title: str
    report: str
    confidence: ConfidenceLevel
    gaps: GapList = Field(default_factory=list)


class SourceInsight(BaseModel):
    """What an extractor said its source leaves open: a follow-up question, a gap the source itself
    names (its limitations), or a source it cites; kept with the source it came from (read by this
    run, or by an earlier one: `earlier`)."""

    source_id: int
    kind: Literal["follow_up", "gap", "link"]
    text: str
    context: str = ""
    #: Kept in the knowledge base by an earlier run (the source is not among this run's): its title
    #: or address, so a reader can find it.
    earlier: str = ""


class SynthesisInput(BaseModel):
    title: str
    questions: list[str]
    input_handoffs: list[str] = Field(description="Handoffs whose facts and reports this synthesis reads.")
    discovery: bool = False
    task_specs: list[ExtractorTaskSpec] = Field(
        default_factory=list, description="The leaf's task specs: their acceptance criteria and format."
    )


class SynthesisPayload(SynthesisInput):
    """The synthesizer's input with the facts, child reports and source insights it reads from the store."""

    facts: list[Fact]
    child_reports: list[ChildReport] = Field(default_factory=list)
    insights: list[SourceInsight] = Field(default_factory=list)


class ScoutCandidate(BaseModel):
    index: int
    ref: str
    title: str
    snippet: str = ""
    score: float = 0.0
    origin: Literal["web", "corpus"] = "web"
    published: str | None = None
    #: The quick scan: the source's opening paragraph (a corpus document's, a mapped page's), when
    #: read; a web search result's snippet is already Tavily's extract of the page.
    lead: str = ""
    #: What the extractor's quick scan of the candidate found (roles/quick_scan.py), when scanned.
    scan: str = ""


class ScoutInput(BaseModel):
    topic: str
    queries: list[str]
    candidates: list[ScoutCandidate]
    #: The questions the sources are for (a discovery leaf's and its sibling leaves'): each kept
    #: candidate is tagged with those it covers.
    questions: list[str] = Field(default_factory=list)

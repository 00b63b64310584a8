"""What a handoff holds: its role's input and output, as models.

A handoff's output is typed by its role. What a role's model answered is extended with the keys the
run engine adds when it commits the handoff (`StoredSynthesis.fact_ids`, `cited`, `citations`,
`failures`...); docs/STORE.md lists them. Reading is lenient (keys a newer version wrote are
ignored, lists are not capped as the model's answer is); writing is strict (`stored_output` refuses
a key no model declares).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from research_mcp.core.contracts import (
    ConfidenceCap,
    ExtractorOutput,
    Finding,
    HandoffStatus,
    PlannerOutput,
    RoleName,
    ScoutOutput,
    SynthesisOutput,
)
from research_mcp.core.gaps import Gap, GapList
from research_mcp.core.role_inputs import (
    ExtractorInput,
    PlannerInput,
    ScoutInput,
    SourceInsight,
    SynthesisInput,
)

__all__ = [
    "OUTPUTS",
    "AcceptanceCheck",
    "CachedOutput",
    "CitationCounts",
    "CuratedSource",
    "Handoff",
    "HandoffInput",
    "StoredCuration",
    "StoredExtraction",
    "StoredOutput",
    "StoredPlanning",
    "StoredSynthesis",
    "stored_output",
]

ModelT = TypeVar("ModelT", bound=BaseModel)


class _Reusable(BaseModel):
    """Marks an output reused from an earlier handoff of the same inputs (no model call)."""

    cached: bool = False
    cached_from: str | None = None


class StoredPlanning(PlannerOutput, _Reusable):
    """A planner handoff's output: the plan tree as the planner answered it."""

    model_config = ConfigDict(extra="ignore")


class StoredExtraction(ExtractorOutput, _Reusable):
    """An extractor handoff's output: its answer, plus the facts stored from it and their checks."""

    model_config = ConfigDict(extra="ignore")

    fact_ids: list[int] = Field(default_factory=list)
    verified: int = 0
    unverified: int = 0
    insight_triggers: list[str] = Field(default_factory=list)
    source_id: int | None = None


class CitationCounts(BaseModel):
    """A report's citations: made, verified, dropped (outside its scope); links dropped (not its sources)."""

    made: int = 0
    verified: int = 0
    dropped: int = 0
    links_dropped: int = 0


class AcceptanceCheck(BaseModel):
    """One acceptance criterion (or expected format) of a task spec, judged on a synthesis: by code
    where it can be read off the report and its cited facts, else by the model, else unchecked."""

    spec: int
    criterion: str
    met: bool | None = None
    by: Literal["code", "model", "unchecked"] = "unchecked"
    evidence: str = ""


class ConfidenceCounts(BaseModel):
    """What a synthesis's confidence stands on, counted by code (roles/confidence_words.py words it):
    its questions, those not answered and not clearly answered, the verified facts its report cites
    and their independent sources (copies of one document count once), disagreements between
    sources, parts not researched, phase criteria unmet, and whether any answer is backed by two
    independent sources."""

    questions: int = 0
    unanswered: int = 0
    unclear: int = 0
    cited_facts: int = 0
    independent_sources: int = 0
    disagreements: int = 0
    failed: int = 0
    unmet_criteria: int = 0
    corroborated: bool = False


class StoredSynthesis(SynthesisOutput, _Reusable):
    """A synthesizer handoff's output: its report, plus what code added when it was committed.

    `fact_ids`: the facts in its scope; `cited`: those its report cites; `citations`: citations
    made, verified and dropped; `failures`: parts not researched, and why (also in `gaps`);
    `prior_fact_ids`: known facts from earlier research; `finished_nodes`: for a partial report
    (a run stopped by its budget), the nodes that had finished; `unmet_criteria`: the phase criteria
    still unmet when the phase stopped (also in `gaps`, and capping `confidence`); `acceptance`: each
    task spec criterion and expected format, judged; `evidence_gaps`: the gaps code found (unanswered
    questions, lists cut short, criteria unmet, what sources say they leave open), carried up to the
    parent synthesis; `insights`: what the extractors said their sources leave open, carried up."""

    model_config = ConfigDict(extra="ignore")

    # Not capped as the model's answer is: code appends failures to the report and gaps.
    report: str
    key_findings: list[Finding] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    contradictions: list[str] = Field(default_factory=list)
    suggested_followups: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    fact_ids: list[int] = Field(default_factory=list)
    cited: list[int] = Field(default_factory=list)
    citations: CitationCounts = Field(default_factory=CitationCounts)
    prior_fact_ids: list[int] = Field(default_factory=list)
    finished_nodes: list[str] = Field(default_factory=list)
    unmet_criteria: list[str] = Field(default_factory=list)
    acceptance: list[AcceptanceCheck] = Field(default_factory=list)
    evidence_gaps: GapList = Field(default_factory=list)
    #: `gaps` with their kinds, one for one (none for a synthesis stored before gaps were typed).
    typed_gaps: GapList = Field(default_factory=list)
    insights: list[SourceInsight] = Field(default_factory=list)
    #: The reasons the backend and code gave for the confidence level, rule by rule (`confidence`'s
    #: reasoning is the plain sentence a person reads), and what that sentence counts.
    confidence_reasons: list[str] = Field(default_factory=list)
    confidence_counts: ConfidenceCounts | None = None
    #: The caps code's rules put on `confidence`, each by its rule's name (none stored before caps were).
    confidence_caps: list[ConfidenceCap] = Field(default_factory=list)

    def as_gaps(self) -> list[Gap]:
        """Each of `gaps` with its kind; stored before gaps were typed, each of kind `other`."""
        if len(self.typed_gaps) == len(self.gaps):
            return list(self.typed_gaps)
        return [Gap(text=text) for text in self.gaps]


class CuratedSource(BaseModel):
    """One source a scout kept, best first."""

    ref: str
    title: str
    score: float
    tags: list[str] = Field(default_factory=list)
    rationale: str = ""
    origin: Literal["web", "corpus"] = "web"
    #: Coverage tags: the numbers (from 1) of the curation's `questions` this source bears on.
    covers: list[int] = Field(default_factory=list)
    #: Which of the curation's `angles` (numbers from 1) found it.
    found_by: list[int] = Field(default_factory=list)
    #: Its opening, or the search's snippet.
    lead: str = ""
    #: What the extractor's quick scan found in it (one line), when it was scanned.
    scan: str = ""
    #: Copies of it folded into it (the same document under another name or in another format):
    #: one source with it, never a second one (research_mcp/core/copies.py).
    copies: list[str] = Field(default_factory=list)


class StoredCuration(ScoutOutput, _Reusable):
    """A scout handoff's output: its ranking, plus the sources kept and the searches behind them:
    the angles searched, the questions the sources were tagged against and which no source covers."""

    model_config = ConfigDict(extra="ignore")

    sources: list[CuratedSource] = Field(default_factory=list)
    searches: int = 0
    candidates: int = 0
    failures: list[str] = Field(default_factory=list)
    angles: list[str] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    uncovered: list[int] = Field(default_factory=list)
    #: Candidates the extractor quick-scanned (roles/quick_scan.py).
    scanned: int = 0
    #: Candidates left out, with the reason (duplicate, off-topic, ...): at most a few.
    excluded: list[CuratedSource] = Field(default_factory=list)


StoredOutput = StoredPlanning | StoredExtraction | StoredSynthesis | StoredCuration
HandoffInput = PlannerInput | ExtractorInput | SynthesisInput | ScoutInput

OUTPUTS: dict[str, type[StoredOutput]] = {
    "planner": StoredPlanning,
    "extractor": StoredExtraction,
    "synthesizer": StoredSynthesis,
    "scout": StoredCuration,
}
INPUTS: dict[str, type[BaseModel]] = {
    "planner": PlannerInput,
    "extractor": ExtractorInput,
    "synthesizer": SynthesisInput,
    "scout": ScoutInput,
}


def stored_output(role: str, data: dict[str, Any]) -> StoredOutput:
    """A role's output as it is committed: its answer plus what code added, every key declared."""
    model = OUTPUTS[role]
    unknown = set(data) - set(model.model_fields)
    if unknown:
        raise ValueError(
            f"a {role} handoff's output has no field {sorted(unknown)}; add it to {model.__name__}"
        )
    return model.model_validate(data)


class Handoff(BaseModel):
    """A role's full output as kept in the store; `input` and `output` typed by its role."""

    model_config = ConfigDict(frozen=True)

    id: str
    run_id: str | None
    node_id: str | None
    role: RoleName
    status: HandoffStatus
    input: HandoffInput
    output: StoredOutput | None
    summary: list[str]
    backend: str
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    started_at: datetime
    finished_at: datetime | None
    attempt: int
    iteration: int
    error: str | None
    # The pruned run it was kept from (it found facts another run cited); None for any other.
    kept_after: str | None = None
    caller: str | None = None  # who asked for a handoff made outside a run; a run's is the run's caller

    @model_validator(mode="before")
    @classmethod
    def _by_role(cls, data: Any) -> Any:
        """Parse the JSON columns, and `input` and `output` with the models of the handoff's role."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        role = data.get("role")
        # JSON text from SQLite is parsed by pydantic itself (model_validate_json: no dict in between).
        for column, models in (("input", INPUTS), ("output", OUTPUTS)):
            value = data.get(column)
            if role in models and isinstance(value, str | bytes):
                data[column] = models[role].model_validate_json(value)
            elif role in models and isinstance(value, dict):
                data[column] = models[role].model_validate(value)
        if isinstance(data.get("summary"), str):
            data["summary"] = json.loads(data["summary"])
        return data

    def output_as(self, kind: type[ModelT]) -> ModelT | None:
        """The output if it is a `kind` (e.g. StoredSynthesis), else None (other role, or no output)."""
        return self.output if isinstance(self.output, kind) else None

    def input_as(self, kind: type[ModelT]) -> ModelT | None:
        """The input if it is a `kind` (e.g. ExtractorInput), else None."""
        return self.input if isinstance(self.input, kind) else None

    @property
    def fact_ids(self) -> list[int]:
        """The facts an extraction recorded, or a synthesis had in scope; none for other roles."""
        if isinstance(self.output, StoredExtraction | StoredSynthesis):
            return list(self.output.fact_ids)
        return []

    @property
    def failures(self) -> list[str]:
        """What a synthesis or a scout's searches could not research, and why."""
        if isinstance(self.output, StoredSynthesis | StoredCuration):
            return list(self.output.failures)
        return []


class CachedOutput(BaseModel):
    """A finished handoff's output, reusable for the same inputs."""

    model_config = ConfigDict(frozen=True)

    handoff_id: str
    output: StoredOutput
    summary: list[str]
    model: str

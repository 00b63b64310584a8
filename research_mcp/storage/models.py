"""What the store returns: one model per kind of row (handoffs and their outputs: `outputs.py`).

Rows come back as pydantic models, parsed once here: JSON columns (a plan's tree, a run's budget, an
event's data) are read into their own models, so no code outside storage subscripts a row.
Pydantic rather than dataclasses because the JSON columns hold the same models the roles produce
(`PlannerOutput`, `Budget`, `SynthesisOutput`...) and one validation step parses and checks them;
`Source` and `Fact` were pydantic already.

Rows are frozen: a row is what the store held when it was read; change it through a Store method.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from research_mcp.core.contracts import Budget, NodeKind, PlannerOutput, RunStatus

__all__ = [
    "Citation",
    "CorpusChunk",
    "CorpusDocumentInfo",
    "CorpusFailure",
    "CorpusFileState",
    "InsightKind",
    "KnownFact",
    "KnownInsight",
    "NewInsight",
    "NewNode",
    "NodeStatus",
    "PlanEstimate",
    "Run",
    "RunEvent",
    "RunNode",
    "RunUsage",
    "StoredCorpusDocument",
    "StoredPlan",
    "compress_text",
    "decompress_text",
]

NodeStatus = Literal["pending", "running", "done", "failed", "cancelled"]


class _Row(BaseModel):
    """A row as read: frozen; columns a later migration adds are ignored until a field names them.
    `json_columns` hold JSON text in SQLite and are parsed here."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    json_columns: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _parse_json_columns(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls.json_columns:
            data = dict(data)
            for column in cls.json_columns:
                if isinstance(data.get(column), str):
                    data[column] = json.loads(data[column])
        return data


# --- plans, runs, nodes, events ------------------------------------------------------------------


class PlanEstimate(BaseModel):
    """What a plan should take, worked out before anything runs."""

    model_calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    wall_s: float
    calls_by_role: dict[str, int] = Field(default_factory=dict)


class StoredPlan(_Row):
    """A `plans` row: the plan tree the planner built and code checked."""

    json_columns = ("tree", "reasons", "estimate", "suggested", "budget")

    id: str
    query: str
    tree: PlannerOutput
    status: Literal["feasible", "infeasible"]
    reasons: list[str] = Field(default_factory=list)
    estimate: PlanEstimate | None = None
    suggested: PlannerOutput | None = None
    backend: str
    handoff_id: str | None = None
    created_at: str
    budget: Budget | None = None  # given to plan_research; a run given none spends within it
    caller: str | None = None  # who made it over HTTP (see server/callers.py); None: the local host


class Run(_Row):
    """A `runs` row: one execution of one or more plans."""

    json_columns = ("plan_ids", "budget")

    id: str
    plan_ids: list[str]
    status: RunStatus
    backend: str
    budget: Budget | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = None
    result_handoff_id: str | None = None
    attempt: int = 0
    owner: str | None = None
    caller: str | None = None  # who started it over HTTP (see server/callers.py); None: the local host


class RunNode(_Row):
    """A `nodes` row: one plan-tree node of a run and where it stands."""

    run_id: str
    node_id: str
    plan_id: str | None = None
    parent_id: str | None = None
    kind: NodeKind
    title: str
    status: NodeStatus
    handoff_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    runs_started: int = 0


class NewNode(BaseModel):
    """A plan-tree node a run will execute, registered pending (`Store.ensure_nodes`)."""

    model_config = ConfigDict(frozen=True)

    node_id: str  # the plan's id and the node's, "plan/node" (`ids.NodeKey`)
    plan_id: str | None
    parent_id: str | None
    kind: NodeKind
    title: str


class RunEvent(_Row):
    """An `events` row as stored; `events.from_row` reads it as its typed event."""

    json_columns = ("data",)

    id: int
    run_id: str
    node_id: str | None = None
    kind: str
    message: str
    data: dict[str, Any] | None = None
    at: str


class RunUsage(_Row):
    """A run's spending, summed over its handoffs and model calls."""

    handoffs: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0
    reused: int = 0  # handoffs answered with an earlier identical one's output, no model asked


# --- sources and facts ---------------------------------------------------------------------------


class Citation(_Row):
    """One place a fact was found: a source and the verbatim quote there."""

    source_id: int
    quote: str
    start: int | None = None
    end: int | None = None


class KnownFact(_Row):
    """A verified canonical fact with what the knowledge index and the freshness rule need."""

    id: int
    statement: str
    run_id: str | None = None
    source_id: int
    question: str | None = None
    ref: str
    kind: str  # the source's kind: web, corpus or text
    fetched_at: str
    owner: str | None = None  # the caller whose research found it (its run's, or its handoff's)


#: What an extraction said its source leaves open: a follow-up question its extractor raised, a gap
#: the source names itself (its limitations), or a source it cites.
InsightKind = Literal["follow_up", "source_gap", "linked_source"]


class NewInsight(BaseModel):
    """One insight of an extraction, kept with its source (`InsightTables.add_insights`)."""

    source_id: int
    ref: str
    kind: InsightKind
    text: str
    context: str = ""


class KnownInsight(_Row):
    """An insight kept in the knowledge base: with its source, the extraction and run that found
    it, and the questions that extraction asked."""

    id: int
    source_id: int
    ref: str
    title: str = ""
    kind: InsightKind
    text: str
    context: str = ""
    run_id: str | None = None
    handoff_id: str
    created_at: str
    questions: list[str] = Field(default_factory=list)
    owner: str | None = None  # the caller whose research found it


# --- the corpus ----------------------------------------------------------------------------------


class CorpusFileState(_Row):
    """What the indexer compares with a file on disk to know whether to read it again."""

    id: int
    path: str
    size: int
    mtime_ns: int
    content_hash: str
    reader_version: int = 0  # the readers' version that made its stored text


class CorpusFailure(_Row):
    """A file that could not be indexed, as it was then (size, time) and why."""

    root: str
    path: str
    size: int
    mtime_ns: int
    error: str
    failed_at: float  # Unix time


class CorpusDocumentInfo(_Row):
    """A corpus document's identity: where it is and its title."""

    id: int
    root: str
    path: str
    title: str


class StoredCorpusDocument(CorpusDocumentInfo):
    """A `corpus_documents` row with its text (stored zlib-compressed since 0.2; plain in older rows)."""

    content_hash: str
    text: str

    @field_validator("text", mode="before")
    @classmethod
    def _decompress(cls, value: object) -> object:
        return decompress_text(value) if isinstance(value, bytes) else value


def compress_text(text: str) -> bytes:
    """A whole text as `corpus_documents.text` and `sources.text` keep it: read whole, rarely, and
    searched through chunks and facts, so kept compressed (about a third of its size)."""
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 6)


def decompress_text(data: bytes) -> str:
    return zlib.decompress(data).decode("utf-8", "surrogatepass")


class CorpusChunk(_Row):
    """A passage of a corpus document, as embedded."""

    id: int
    doc_id: int
    title: str
    text: str

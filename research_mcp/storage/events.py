"""Every kind of run event, as the `events` table stores it: one model per kind, told apart by `kind`.

An event is one line of a run's progress log; the engine reads some back when a run resumes, to take
the decisions it recorded (`SourcesChosen`, `SecondHop`, `PhaseGate`, `InsightsGiven`, `RetryStarted`).
`kind`, `message` and `node_id` are columns; the other fields are the row's JSON `data`.
`from_row` reads a stored row: a kind this version does not know, or data it cannot parse, comes
back as an `UnreadEvent` that resume logic skips, so a database written by another version loads.
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from research_mcp.storage.outputs import AcceptanceCheck

__all__ = [
    "AcceptanceRejudged",
    "AttemptStarted",
    "Event",
    "EventBase",
    "HopChoice",
    "InsightsGiven",
    "IterationDone",
    "KeptAsTask",
    "Lead",
    "LeadKind",
    "NoSources",
    "NodeBudgetSpent",
    "NodeDone",
    "NodeFailed",
    "NodeStarted",
    "PhaseBudgetSpent",
    "PhaseGate",
    "PhaseMet",
    "PhaseUnmet",
    "PriorFindings",
    "Recovered",
    "RetryStarted",
    "SearchFailed",
    "Searched",
    "SecondHop",
    "SourceFailed",
    "SourcesChosen",
    "SpecBudgetSpent",
    "StopReason",
    "StoredEvent",
    "UnreadEvent",
    "data_of",
    "from_row",
    "kind_of",
]

logger = logging.getLogger(__name__)


class StopReason(StrEnum):
    """Why a phase stopped iterating with criteria unmet."""

    MAX_ITERATIONS = "max_iterations"
    BUDGET = "budget"


class EventBase(BaseModel):
    """What every event has: a line for people, and the plan node it concerns (its `NodeKey`)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    message: str
    node_id: str | None = None


# --- a run's attempts ------------------------------------------------------------------------------


class AttemptStarted(EventBase):
    """An attempt of the run started; the corpus folders it searches."""

    kind: Literal["attempt"] = "attempt"
    corpus: list[str] = []


class Recovered(EventBase):
    """What was tidied after a process died mid-run: `Store.recover_run` answers it, the run
    records it as it is."""

    kind: Literal["recovered"] = "recovered"
    nodes_completed: int = 0  # final handoff committed, node not yet marked: marked done
    handoffs_interrupted: int = 0  # left running: closed as failed, their work done again
    nodes_reset: int = 0  # left running: back to pending


class RetryStarted(EventBase):
    """Asked to retry: the failed nodes, and the nodes reopened because parts of them failed.
    Decisions recorded before it are taken afresh."""

    kind: Literal["retry"] = "retry"
    failed: list[str] = []
    reopened: list[str] = []


class KeptAsTask(EventBase):
    """The run was started as an MCP task, kept for `ttl_ms`."""

    kind: Literal["task"] = "task"
    ttl_ms: int | None = None


# --- plan nodes ------------------------------------------------------------------------------------


class NodeStarted(EventBase):
    kind: Literal["node_started"] = "node_started"


class NodeDone(EventBase):
    kind: Literal["node_done"] = "node_done"


class NodeFailed(EventBase):
    kind: Literal["node_failed"] = "node_failed"


class NodeBudgetSpent(EventBase):
    """A node's own budget ran out before a source was read."""

    kind: Literal["node_budget"] = "node_budget"


# --- a leaf's sources ------------------------------------------------------------------------------


class Searched(EventBase):
    kind: Literal["search"] = "search"
    query: str = ""


class SearchFailed(EventBase):
    kind: Literal["search_failed"] = "search_failed"


class SourcesChosen(EventBase):
    """The sources a leaf took (reference keys), what it could not read, and how many more it found
    that its own `max_sources` left unread."""

    kind: Literal["sources_chosen"] = "sources_chosen"
    refs: list[str]
    failures: list[str] = []
    beyond_budget: int = 0


class NoSources(EventBase):
    kind: Literal["no_sources"] = "no_sources"


class SourceFailed(EventBase):
    kind: Literal["source_failed"] = "source_failed"


class SpecBudgetSpent(EventBase):
    """A task spec's budget stopped its reads; the message is the note the leaf's synthesis gets."""

    kind: Literal["spec_budget"] = "spec_budget"


class PriorFindings(EventBase):
    """Facts from earlier runs that bear on a leaf."""

    kind: Literal["prior_findings"] = "prior_findings"
    fact_ids: list[int] = []


class InsightsGiven(EventBase):
    """What earlier runs' sources left open that a leaf was given (`source_insights` ids)."""

    kind: Literal["known_insights"] = "known_insights"
    insight_ids: list[int]


class HopChoice(BaseModel):
    """One source a leaf's second hop reads (runs/hops.py): why (`context`, what its extractor is
    told) and what it is asked besides the leaf's questions (`question`: for a bridge, the name that
    led there); `again`, a source the first pass read, asked again with what a bridge leads to ask.
    The hop chooses these, records them in its `SecondHop` event and reads them back as they are."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    ref: str
    context: str
    question: str = ""
    again: bool = False


LeadKind = Literal["bridge", "follow_up", "link", "open"]


class Lead(BaseModel):
    """Something a leaf's second hop may follow (runs/leads.py finds them): a name the facts give
    (bridge), a question a source left open (follow_up), a source one cites (link), or what the
    first sources left open (open: the gap's words, searched with the leaf's question). `ref` is
    where it led, once followed: the `SecondHop` event records the leads followed, as they are."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: LeadKind
    text: str
    weight: float | None = None  # how strongly the facts point to it; an open gap has none
    source_id: int | None = None  # the source it came from; an open gap has none
    # The fact (or the extractor's rationale) the lead came from: what a reader of the next source
    # needs to know to connect it with the first.
    because: str = ""
    ref: str | None = None


class SecondHop(EventBase):
    """The sources a second hop chose, the leads it followed to them, and how many more leads the
    leaf's own `max_sources` left unfollowed."""

    kind: Literal["second_hop"] = "second_hop"
    chosen: list[HopChoice]
    followed: list[Lead] = []
    beyond_budget: int = 0


# --- phases ----------------------------------------------------------------------------------------


class PhaseGate(EventBase):
    """A phase's criteria (met or not) when the decision to iterate was taken, and what the iteration
    asks to settle the unmet ones (None in events written before it was recorded)."""

    kind: Literal["phase_gate"] = "phase_gate"
    phase: str
    iteration: int
    status: dict[str, bool]
    settling: list[str] | None = None


class PhaseMet(EventBase):
    kind: Literal["phase_met"] = "phase_met"
    criteria: dict[str, bool] = {}


class PhaseUnmet(EventBase):
    kind: Literal["phase_unmet"] = "phase_unmet"
    criteria: dict[str, bool] = {}
    stopped: StopReason | None = None


class PhaseBudgetSpent(EventBase):
    kind: Literal["phase_budget"] = "phase_budget"


class IterationDone(EventBase):
    """One iteration of a phase: why it ran, what it added, the criteria before and after."""

    kind: Literal["iteration"] = "iteration"
    iteration: int
    why: list[str] = []
    changed: dict[str, list[str]] = {}
    criteria_before: dict[str, bool] = {}
    criteria_after: dict[str, bool] = {}
    kept_iteration: int = 0


class AcceptanceRejudged(EventBase):
    """A leaf's acceptance criteria judged again after an iteration, in synthesis `handoff_id`."""

    kind: Literal["acceptance"] = "acceptance"
    iteration: int
    handoff_id: str
    before: list[AcceptanceCheck] = []
    after: list[AcceptanceCheck] = []


Event = Annotated[
    AttemptStarted
    | Recovered
    | RetryStarted
    | KeptAsTask
    | NodeStarted
    | NodeDone
    | NodeFailed
    | NodeBudgetSpent
    | Searched
    | SearchFailed
    | SourcesChosen
    | NoSources
    | SourceFailed
    | SpecBudgetSpent
    | PriorFindings
    | InsightsGiven
    | SecondHop
    | PhaseGate
    | PhaseMet
    | PhaseUnmet
    | PhaseBudgetSpent
    | IterationDone
    | AcceptanceRejudged,
    Field(discriminator="kind"),
]


class UnreadEvent(EventBase):
    """A stored event this version cannot read: its kind unknown, or its data in another shape."""

    kind: str
    data: dict[str, Any] | None = None
    problem: str


StoredEvent = Event | UnreadEvent

_EVENT: TypeAdapter[Event] = TypeAdapter(Event)
_COLUMNS = {"kind", "message", "node_id"}


def kind_of(event_type: type[EventBase]) -> str:
    """The `kind` column of this type of event."""
    return str(event_type.model_fields["kind"].default)


def data_of(event: Event) -> dict[str, Any] | None:
    """The event's `data` column: its fields but the columns, None when it has none."""
    return event.model_dump(mode="json", exclude=_COLUMNS) or None


def from_row(kind: str, message: str, node_id: str | None, data: Any) -> StoredEvent:
    """A stored row as its event. Rows written before events were typed hold the phase criteria
    as the whole of `data`; they are read into `criteria`."""
    fields = dict(data) if isinstance(data, dict) else {}
    if kind in ("phase_met", "phase_unmet") and fields and not isinstance(fields.get("criteria"), dict):
        fields = {"criteria": fields}
    try:
        return _EVENT.validate_python({**fields, "kind": kind, "message": message, "node_id": node_id})
    except ValidationError as error:
        problem = f"{error.error_count()} problems, first: {error.errors()[0]['msg']}"
        logger.debug("event %r of node %s not read (%s); it is skipped", kind, node_id, problem)
        return UnreadEvent(kind=kind, message=message, node_id=node_id, data=data, problem=problem)

"""One snapshot of a run's state, read from the store in one place.

Everything that shows a run reads it here: the MCP handle (`service.run_handle`), the progress the
host is sent while it waits (`RunManager.wait`), the terminal's live view and `research-mcp runs`
(cli/progress.py), the report's metadata (reports/assembly.py) and the exports (cli/exports.py). Nodes done,
sources read, facts, tokens, cost and elapsed time are each counted once, by `read_snapshot`, so the
handle, the terminal and the export of a run cannot disagree.

A node's state is its row's status (pending, running, done, failed, cancelled), except that a node
finished before the run's current attempt started is `cached`: a resumed run read it back and did
not run it again. Both count as done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from research_mcp.core.contracts import PlanNode
from research_mcp.core.errors import NotFound
from research_mcp.core.ids import FINAL_NODE
from research_mcp.storage.models import Run
from research_mcp.storage.store import Store

__all__ = [
    "NodeState",
    "PlanTree",
    "RunRow",
    "RunSnapshot",
    "RunTotals",
    "elapsed_s",
    "latest_run_id",
    "node_counts",
    "plan_tree",
    "read_snapshot",
    "recent_runs",
    "run_totals",
]

DONE_STATES = ("done", "cached")


@dataclass(frozen=True)
class NodeState:
    """One plan node of a run, as the run has left it so far."""

    key: str  # plan_id/node_id, as in the nodes table
    node_id: str
    kind: str
    title: str
    state: str
    questions: tuple[str, ...] = ()
    children: tuple[NodeState, ...] = ()

    def walk(self, depth: int = 0) -> list[tuple[int, NodeState]]:
        """This node and its descendants, parents first, with their depth."""
        found = [(depth, self)]
        for child in self.children:
            found += child.walk(depth + 1)
        return found

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.node_id,
            "kind": self.kind,
            "title": self.title,
            "state": self.state,
            "questions": list(self.questions),
            "children": [child.as_dict() for child in self.children],
        }


@dataclass(frozen=True)
class PlanTree:
    plan_id: str
    query: str
    root: NodeState


@dataclass(frozen=True)
class RunTotals:
    """A run's figures, as every view shows them."""

    nodes_done: int
    nodes_total: int
    sources: int
    facts: int
    facts_verified: int
    tokens: int
    cost_usd: float
    elapsed_s: float
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0
    reused: int = 0  # answers read back from earlier identical requests instead of asking a model

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes_done": self.nodes_done,
            "nodes_total": self.nodes_total,
            "sources": self.sources,
            "facts": self.facts,
            "facts_verified": self.facts_verified,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "elapsed_s": round(self.elapsed_s, 2),
        }


@dataclass(frozen=True)
class RunSnapshot:
    """A run's row, its nodes' states and its totals, read together."""

    id: str
    status: str
    error: str | None
    backend: str
    plan_ids: list[str]
    created_at: str
    started_at: str | None
    finished_at: str | None
    result_handoff_id: str | None
    totals: RunTotals
    states: dict[str, str] = field(default_factory=dict)  # node key -> state

    def trees(self, store: Store) -> list[PlanTree]:
        """The run's plan trees (one per plan), each node with its state; a final synthesis node last."""
        trees = []
        for plan_id in self.plan_ids:
            plan = store.get_plan(plan_id)
            trees.append(PlanTree(plan_id, plan.query, _node(plan_id, plan.tree.root, self.states)))
        if len(trees) > 1:
            state = self.states.get(FINAL_NODE, "pending")
            final = NodeState(FINAL_NODE, FINAL_NODE, "executor", "Answer to all subqueries", state)
            trees.append(PlanTree(FINAL_NODE, "one answer to all the plans", final))
        return trees


@dataclass(frozen=True)
class RunRow:
    """One line of `research-mcp runs`."""

    id: str
    status: str
    query: str
    backend: str
    created_at: str
    totals: RunTotals

    def as_dict(self) -> dict[str, Any]:
        t = self.totals
        return {
            "id": self.id,
            "status": self.status,
            "query": self.query,
            "backend": self.backend,
            "nodes_done": t.nodes_done,
            "nodes_total": t.nodes_total,
            "cost_usd": round(t.cost_usd, 6),
            "tokens": t.tokens,
            "elapsed_s": round(t.elapsed_s, 2),
            "created_at": self.created_at,
        }


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def elapsed_s(run: Run) -> float:
    """Seconds the run's current attempt has taken: to its end, or to now while it goes on."""
    started = _time(run.started_at)
    if started is None:
        return 0.0
    finished = _time(run.finished_at) if run.status != "running" else None
    return max(0.0, ((finished or datetime.now(UTC)) - started).total_seconds())


def _node_states(store: Store, run: Run) -> dict[str, str]:
    started = run.started_at or ""
    states = {}
    for node in store.nodes_for_run(run.id):
        state: str = node.status
        if state == "done" and started and (node.finished_at or "") < started:
            state = "cached"
        states[node.node_id] = state
    return states


def _node(plan_id: str, node: PlanNode, states: dict[str, str]) -> NodeState:
    key = f"{plan_id}/{node.id}"
    return NodeState(
        key=key,
        node_id=node.id,
        kind=node.kind,
        title=node.title,
        state=states.get(key, "pending"),
        questions=tuple(node.questions),
        children=tuple(_node(plan_id, child, states) for child in node.children),
    )


def node_counts(store: Store, run: Run) -> tuple[int, int]:
    """Nodes done (run now or read back) and nodes known, of a run."""
    states = _node_states(store, run)
    return sum(1 for state in states.values() if state in DONE_STATES), len(states)


def read_snapshot(store: Store, run: Run | str) -> RunSnapshot:
    """The run (as the store returns it, or its id) with its node states and its totals."""
    if isinstance(run, str):
        run = store.get_run(run)
    states = _node_states(store, run)
    usage = store.run_usage(run.id)
    facts, verified = store.fact_counts(run.id)
    totals = RunTotals(
        nodes_done=sum(1 for state in states.values() if state in DONE_STATES),
        nodes_total=len(states),
        sources=store.sources_read(run.id),
        facts=facts,
        facts_verified=verified,
        tokens=usage.tokens_in + usage.tokens_out,
        cost_usd=usage.cost_usd,
        elapsed_s=elapsed_s(run),
        tokens_in=usage.tokens_in,
        tokens_out=usage.tokens_out,
        llm_calls=usage.llm_calls,
        reused=usage.reused,
    )
    return RunSnapshot(
        id=run.id,
        status=run.status,
        error=run.error,
        backend=run.backend,
        plan_ids=list(run.plan_ids),
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        result_handoff_id=run.result_handoff_id,
        totals=totals,
        states=states,
    )


def plan_tree(store: Store, run: Run) -> list[PlanTree]:
    """The run's plan trees, each node with its state (see `RunSnapshot.trees`)."""
    return read_snapshot(store, run).trees(store)


def run_totals(store: Store, run: Run) -> RunTotals:
    """Nodes done, sources read, facts (verified and all), tokens, cost and elapsed time of a run."""
    return read_snapshot(store, run).totals


def latest_run_id(store: Store) -> str | None:
    """The newest run's id (what `last` stands for), or None before the first run."""
    run = store.latest_run()
    return run.id if run is not None else None


def recent_runs(store: Store, limit: int) -> list[RunRow]:
    """The `limit` most recent runs, newest first."""
    rows = []
    for run in store.recent_runs(limit):
        snapshot = read_snapshot(store, run)
        queries = []
        for plan_id in snapshot.plan_ids:
            try:
                queries.append(store.get_plan(plan_id).query)
            except NotFound:
                queries.append(plan_id)
        rows.append(
            RunRow(
                id=snapshot.id,
                status=snapshot.status,
                query=" + ".join(queries),
                backend=snapshot.backend,
                created_at=snapshot.created_at,
                totals=snapshot.totals,
            )
        )
    return rows

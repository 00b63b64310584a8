"""What a run has done so far, read from the store: its plan tree with each node's state, its totals,
and the list of recent runs. The terminal's live view, `research-mcp runs` and the exports read it.

A node's state is its row's status (pending, running, done, failed, cancelled), except that a node
finished before the run's current attempt started is `cached`: a resumed run read it back and did
not run it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from research_mcp.contracts import PlanNode
from research_mcp.errors import NotFound
from research_mcp.storage.models import Run
from research_mcp.storage.store import Store

__all__ = [
    "NodeState",
    "PlanTree",
    "RunRow",
    "RunTotals",
    "elapsed_s",
    "plan_tree",
    "recent_runs",
    "run_totals",
]


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
    nodes_done: int
    nodes_total: int
    sources: int
    facts: int
    facts_verified: int
    tokens: int
    cost_usd: float
    elapsed_s: float


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


def plan_tree(store: Store, run: Run) -> list[PlanTree]:
    """The run's plan trees (one per plan), each node with its state; a final synthesis node last."""
    states = _node_states(store, run)
    trees = []
    for plan_id in run.plan_ids:
        plan = store.get_plan(plan_id)
        trees.append(PlanTree(plan_id, plan.query, _node(plan_id, plan.tree.root, states)))
    if len(trees) > 1:
        final = NodeState(
            "final", "final", "executor", "Answer to all subqueries", states.get("final", "pending")
        )
        trees.append(PlanTree("final", "one answer to all the plans", final))
    return trees


def run_totals(store: Store, run: Run) -> RunTotals:
    """Nodes done, sources read, facts (verified and all), tokens, cost and elapsed time of a run."""
    run_id = run.id
    states = _node_states(store, run)
    usage = store.run_usage(run_id)
    facts, verified = store.fact_counts(run_id)
    return RunTotals(
        nodes_done=sum(1 for state in states.values() if state in ("done", "cached")),
        nodes_total=len(states),
        sources=store.sources_read(run_id),
        facts=facts,
        facts_verified=verified,
        tokens=usage.tokens_in + usage.tokens_out,
        cost_usd=usage.cost_usd,
        elapsed_s=elapsed_s(run),
    )


def recent_runs(store: Store, limit: int) -> list[RunRow]:
    """The `limit` most recent runs, newest first."""
    rows = []
    for run in store.recent_runs(limit):
        queries = []
        for plan_id in run.plan_ids:
            try:
                queries.append(store.get_plan(plan_id).query)
            except NotFound:
                queries.append(plan_id)
        rows.append(
            RunRow(
                id=run.id,
                status=run.status,
                query=" + ".join(queries),
                backend=run.backend,
                created_at=run.created_at,
                totals=run_totals(store, run),
            )
        )
    return rows

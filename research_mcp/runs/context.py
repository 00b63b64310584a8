"""The run context: what every part of the run engine shares while it walks one plan of a run,
and the names a plan's nodes go by in the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from research_mcp.core.contracts import Budget, PlanNode
from research_mcp.core.ids import NodeKey
from research_mcp.roles.base import RoleDeps
from research_mcp.roles.outline import sections
from research_mcp.roles.planner import TOKENLESS
from research_mcp.storage.models import NewNode

__all__ = ["RunContext", "leaf_questions", "node_key", "plan_nodes", "report_outline"]


@dataclass
class RunContext:
    deps: RoleDeps
    run_id: str
    plan_id: str
    on_node_done: Callable[[], None] = lambda: None
    # What each node (by key) could not research, and why: sources not read, searches and parts failed.
    failures: dict[str, list[str]] = field(default_factory=dict)
    asked_by_leaf: dict[tuple[str, str], set[str]] | None = None  # see runs/prior.py
    # Which node took each source first (by reference key): a sibling is handed it only last.
    taken_by: dict[str, str] = field(default_factory=dict)
    # Siblings take in plan order, whichever finished searching first: each leaf's turn waits for
    # its earlier siblings' (runs/reading.py), so a run asked twice hands out the same sources.
    take_turns: dict[str, tuple[list[anyio.Event], anyio.Event]] = field(default_factory=dict)
    # Each leaf's share of the run's budget by node id, when priorities divide it (runs/shares.py).
    shares: dict[str, Budget] = field(default_factory=dict)
    # Sources each leaf (by key) found beyond its own max_sources, left unread (runs/reading.py), and
    # leads its second hop left unfollowed for the same reason (runs/hops.py).
    beyond_budget: dict[str, int] = field(default_factory=dict)
    leads_beyond_budget: dict[str, int] = field(default_factory=dict)


def node_key(plan_id: str, node_id: str) -> str:
    return str(NodeKey(plan_id, node_id))


def plan_nodes(plan_id: str, root: PlanNode) -> list[NewNode]:
    """The plan's nodes as the store registers them for a run, parents before children."""
    rows: list[NewNode] = []

    def visit(node: PlanNode, parent: str | None) -> None:
        key = node_key(plan_id, node.id)
        rows.append(NewNode(node_id=key, plan_id=plan_id, parent_id=parent, kind=node.kind, title=node.title))
        for child in node.children:
            visit(child, key)

    visit(root, None)
    return rows


def leaf_questions(node: PlanNode) -> list[str]:
    if node.questions:
        return list(node.questions)
    return [question for spec in node.task_specs for question in spec.questions] or [node.title]


def report_outline(rc: RunContext, node: PlanNode) -> list[str]:
    """The outline an executor's report is written from: with a model backend and several parts
    (discovery leaves aside), a section per part, then the whole; none otherwise."""
    parts = [(child.title, leaf_questions(child)) for child in node.children if child.kind != "discovery"]
    if len(parts) < 2 or rc.deps.model.name in TOKENLESS:
        return []
    return sections(parts)

"""The run context: what every part of the run engine shares while it walks one plan of a run,
and the names a plan's nodes go by in the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from research_mcp.contracts import PlanNode
from research_mcp.ids import NodeKey
from research_mcp.roles.base import RoleDeps
from research_mcp.storage.models import NewNode

__all__ = ["RunContext", "leaf_questions", "node_key", "plan_nodes"]


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

"""Feasibility of a plan tree, checked by code: never trusted from the model."""

from __future__ import annotations

from research_mcp.core.contracts import PlanNode

__all__ = [
    "HOP_SOURCES",
    "MAX_EXECUTOR_LEVELS",
    "MAX_NODES",
    "SOURCES_PER_LEAF",
    "assign_ids",
    "check_feasible",
    "leaf_reading",
]

MAX_EXECUTOR_LEVELS = 3
MAX_NODES = 60
#: Sources a searching leaf reads first (runs/reading.py), and at most how many more its second hop
#: adds where what those found leads (runs/hops.py). The plan's estimate counts both.
SOURCES_PER_LEAF = 3
HOP_SOURCES = 2


def leaf_reading(node: PlanNode) -> tuple[int, int]:
    """(first, hop): the sources a leaf reads first and at most on its second hop, within the node's
    `max_sources`. A leaf given its sources reads them all first (as many as its `max_sources`
    allows); its hop follows only the sources they cite, which cannot be known before they are read,
    so none is counted for it."""
    limit = node.budget.max_sources if node.budget is not None else None
    if node.sources:
        return len(node.sources) if limit is None else min(len(node.sources), limit), 0
    first = SOURCES_PER_LEAF if limit is None else min(SOURCES_PER_LEAF, limit)
    hop = HOP_SOURCES if limit is None else max(0, min(HOP_SOURCES, limit - first))
    return first, hop


def check_feasible(root: PlanNode) -> list[str]:
    """Every rule the tree breaks, as sentences a user can act on; empty when feasible."""
    violations: list[str] = []
    if root.kind != "executor":
        violations.append(f"the root must be an executor, not a {root.kind} node")
    nodes = root.walk()
    if len(nodes) > MAX_NODES:
        violations.append(f"the plan has {len(nodes)} nodes; at most {MAX_NODES} are allowed")

    def visit(node: PlanNode, executor_depth: int, path: str) -> None:
        where = f"{path}{node.title!r}"
        if node.kind == "executor":
            executor_depth += 1
            if executor_depth > MAX_EXECUTOR_LEVELS:
                violations.append(
                    f"executor {where} is at executor level {executor_depth}; at most {MAX_EXECUTOR_LEVELS} "
                    "executor levels are allowed (an executor may have at most two executor ancestors)"
                )
            if not node.children:
                violations.append(f"executor {where} has no children")
            if node.sources or node.task_specs:
                violations.append(f"executor {where} carries sources or task specs; only leaves read sources")
        else:
            if node.children:
                violations.append(f"{node.kind} {where} has children; only executors may have children")
            if node.phases:
                violations.append(f"{node.kind} {where} has phases; only executors iterate in phases")
            if node.kind == "leaf" and not (node.questions or node.task_specs):
                violations.append(f"leaf {where} has no questions for its extractors")
        for child in node.children:
            visit(child, executor_depth, f"{where} > ")

    visit(root, 0, "")
    return violations


def assign_ids(root: PlanNode, prefix: str = "n") -> PlanNode:
    """A copy of the tree with positional ids: n, n.1, n.1.2 ..."""

    def renumber(node: PlanNode, ident: str) -> PlanNode:
        children = [renumber(child, f"{ident}.{index}") for index, child in enumerate(node.children, 1)]
        return node.model_copy(update={"id": ident, "children": children})

    return renumber(root, prefix)

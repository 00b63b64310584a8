"""A run engine to test one module at a time: a temporary store, a scripted model, and the run
context a walk of one plan shares (what runs/manager.py builds for each plan of a run)."""

from __future__ import annotations

from typing import Any

import anyio

from research_mcp.core.config import Settings
from research_mcp.core.contracts import PlanNode
from research_mcp.core.feasibility import assign_ids
from research_mcp.llm.base import ModelBackend
from research_mcp.roles.base import BudgetTracker, RoleDeps
from research_mcp.runs.context import RunContext, plan_nodes
from research_mcp.sources.library import SourceLibrary
from research_mcp.storage.store import Store

__all__ = ["PLAN_ID", "deps_for", "leaf", "tree", "walk"]

PLAN_ID = "plan_000000000001"


def leaf(title: str, *sources: str, **extra: Any) -> PlanNode:
    questions = extra.pop("questions", [f"What is known about {title}?"])
    return PlanNode(kind="leaf", title=title, questions=questions, sources=list(sources), **extra)


def tree(*children: PlanNode, **extra: Any) -> PlanNode:
    """An executor over `children`, with the positional ids a planned tree gets."""
    return assign_ids(
        PlanNode(kind="executor", title=extra.pop("title", "root"), children=list(children), **extra)
    )


def deps_for(store: Store, model: ModelBackend, budget: BudgetTracker | None = None) -> RoleDeps:
    return RoleDeps(
        store=store,
        model=model,
        sources=SourceLibrary(store),
        settings=Settings(),
        limiter=anyio.CapacityLimiter(2),
        budget=budget or BudgetTracker(),
    )


def walk(
    store: Store, model: ModelBackend, root: PlanNode, *, budget: BudgetTracker | None = None
) -> RunContext:
    """A run of `root` registered in `store`, and the context its walk shares."""
    run_id = store.create_run([PLAN_ID], model.name, None)
    store.ensure_nodes(run_id, plan_nodes(PLAN_ID, root))
    return RunContext(deps=deps_for(store, model, budget), run_id=run_id, plan_id=PLAN_ID)

"""The mechanisms the no-model planner adds to the leaves its splits give (llm/extractive/planner.py):

- a comparison gets a discovery leaf beside its item leaves, whose scout sweeps for every item;
- a question of several parts gets a phase on its executor whose criteria are its parts (each a theme
  a verified fact must cover), iterated at most ``COVERAGE_ITERATIONS`` times;
- every leaf carries a task spec: its questions and the form its findings take.
"""

from __future__ import annotations

from research_mcp.answering.terms import clip
from research_mcp.core.contracts import ExtractorTaskSpec, Phase, PhaseCriteria, PlanNode

__all__ = ["COVERAGE_ITERATIONS", "LEAF_FORMAT", "coverage_phase", "discovery_leaf", "with_task_spec"]

#: A list is a form code can enforce (roles/acceptance.py reshapes a report that lacks it).
LEAF_FORMAT = "A bulleted list of the key findings, each citing the facts that establish it"
COVERAGE_ITERATIONS = 2


def discovery_leaf(items: list[str], comparison: str) -> PlanNode:
    """A leaf whose scout sweeps for every compared item, for the item leaves beside it."""
    return PlanNode(
        kind="discovery",
        title=clip(f"Sources on {', '.join(items[:-1])} and {items[-1]}", 200),
        questions=[clip(comparison, 500)],
        search_queries=[clip(item, 300) for item in items[:6]],
    )


def with_task_spec(leaf: PlanNode) -> PlanNode:
    """The leaf with a task spec carrying its questions and the form its findings take."""
    if leaf.kind != "leaf" or leaf.task_specs or not leaf.questions:
        return leaf
    spec = ExtractorTaskSpec(questions=list(leaf.questions), expected_format=LEAF_FORMAT)
    return leaf.model_copy(update={"task_specs": [spec]})


def coverage_phase(parts: list[str]) -> Phase:
    """A phase met when the verified facts cover every part of the question."""
    return Phase(
        name="cover every part",
        criteria=PhaseCriteria(themes=[clip(part, 300) for part in parts[:10]]),
        max_iterations=COVERAGE_ITERATIONS,
    )

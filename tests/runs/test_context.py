"""runs/context.py: the names a plan's nodes go by in the store, and the questions a leaf asks."""

from __future__ import annotations

from research_mcp.core.contracts import ExtractorTaskSpec, PlanNode
from research_mcp.runs.context import leaf_questions, node_key, plan_nodes
from tests.runs.walk import PLAN_ID, leaf, tree


def test_a_node_is_stored_under_its_plan_and_its_position() -> None:
    assert node_key(PLAN_ID, "n.2.1") == f"{PLAN_ID}/n.2.1"


def test_a_plans_nodes_are_registered_parents_before_children_each_naming_its_parent() -> None:
    root = tree(tree(leaf("a"), leaf("b"), title="inner"), leaf("c"))
    rows = plan_nodes(PLAN_ID, root)
    assert [(row.node_id.split("/")[1], row.parent_id, row.kind) for row in rows] == [
        ("n", None, "executor"),
        ("n.1", f"{PLAN_ID}/n", "executor"),
        ("n.1.1", f"{PLAN_ID}/n.1", "leaf"),
        ("n.1.2", f"{PLAN_ID}/n.1", "leaf"),
        ("n.2", f"{PLAN_ID}/n", "leaf"),
    ]


def test_a_leaf_asks_its_questions_else_its_task_specs_else_its_title() -> None:
    asked = leaf("solar", questions=["How efficient are panels?"])
    spec = ExtractorTaskSpec(questions=["What do panels cost?"])
    by_spec = PlanNode(kind="leaf", title="solar", task_specs=[spec])
    assert leaf_questions(asked) == ["How efficient are panels?"]
    assert leaf_questions(by_spec) == ["What do panels cost?"]
    assert leaf_questions(PlanNode(kind="leaf", title="solar")) == ["solar"]

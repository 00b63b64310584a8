from research_mcp.core.contracts import CompactReturn, PlanNode


def test_a_compact_return_refuses_more_than_three_summary_lines() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        CompactReturn(id="x", kind="run", status="done", summary=["a", "b", "c", "d"], backend="scripted")


def test_walk_visits_every_node_depth_first() -> None:
    tree = PlanNode(
        kind="executor",
        title="root",
        children=[
            PlanNode(kind="leaf", title="a", questions=["what is a?"]),
            PlanNode(
                kind="executor", title="b", children=[PlanNode(kind="leaf", title="c", questions=["c?!"])]
            ),
        ],
    )
    assert [node.title for node in tree.walk()] == ["root", "a", "b", "c"]

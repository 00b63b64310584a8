"""The nested arguments in the shapes their schemas publish: a suggested plan as a flat list of nodes
(each naming its parent by index), a task spec whose questions are the tool's. The shapes hosts sent
before (the plan tree, a task spec with its own questions, priority and budget) still give the same
results."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store

TEXT = "Emperor penguins breed in the Antarctic winter. Adelie penguins nest on rocky coasts in summer."

TREE = {
    "root": {
        "kind": "executor",
        "title": "penguins",
        "children": [
            {
                "kind": "leaf",
                "title": "emperors",
                "questions": ["When do emperors breed?"],
                "sources": [TEXT],
            },
            {
                "kind": "executor",
                "title": "others",
                "children": [{"kind": "leaf", "title": "adelies", "questions": ["Where do Adelies nest?"]}],
            },
        ],
    }
}
FLAT = [
    {"kind": "executor", "title": "penguins"},
    {
        "parent": 0,
        "kind": "leaf",
        "title": "emperors",
        "questions": ["When do emperors breed?"],
        "sources": [TEXT],
    },
    {"parent": 0, "kind": "executor", "title": "others"},
    {"parent": 2, "kind": "leaf", "title": "adelies", "questions": ["Where do Adelies nest?"]},
]
# What a strict client sends: every field, null for the ones it leaves out.
STRICT_FLAT = [
    {"parent": None, "kind": "executor", "title": "penguins", "questions": None, "sources": None},
    {
        "parent": 0,
        "kind": "leaf",
        "title": "emperors",
        "questions": ["When do emperors breed?"],
        "sources": [TEXT],
    },
    {"parent": 0, "kind": "executor", "title": "others", "questions": None, "sources": None},
    {
        "parent": 2,
        "kind": "leaf",
        "title": "adelies",
        "questions": ["Where do Adelies nest?"],
        "sources": None,
    },
]


async def planned(client: Client, suggested: Any) -> dict[str, Any]:
    result = await client.call_tool(
        "plan_research", {"query": "penguin breeding", "suggested_plan": suggested}
    )
    assert not result.is_error, result.content
    stored = Store(Settings().database_path).get_plan(result.structured_content["id"])  # type: ignore[index]
    assert stored.suggested is not None
    return {
        "suggested": stored.suggested.model_dump(),
        "tree": stored.tree.model_dump(),
        "status": stored.status,
    }


async def test_a_flat_plan_is_planned_exactly_as_the_same_tree_sent_nested() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        nested = await planned(client, TREE)
        flat = await planned(client, FLAT)
        strict = await planned(client, STRICT_FLAT)
    assert flat == nested
    assert strict == nested
    assert nested["suggested"]["root"]["children"][1]["children"][0]["title"] == "adelies"


@pytest.mark.parametrize(
    ("suggested", "says"),
    [
        ([{"parent": 0, "kind": "executor", "title": "a"}], "suggested_plan[0].parent must be null"),
        (
            [{"kind": "executor", "title": "a"}, {"kind": "leaf", "title": "b"}],
            "suggested_plan[1].parent is null, but only the first node is the root",
        ),
        (
            [{"kind": "executor", "title": "a"}, {"parent": 1, "kind": "leaf", "title": "b"}],
            "suggested_plan[1].parent is 1: give the index of an earlier node (0 to 0)",
        ),
        (
            [{"kind": "executor", "title": "a"}, {"parent": 0, "kind": "leaf"}],
            "suggested_plan[1].title: required",
        ),
        (
            [{"kind": "executor", "title": "a", "children": []}],
            "suggested_plan[0].children: unknown field; leave it out",
        ),
        ([{"kind": "branch", "title": "a"}], "suggested_plan[0].kind: Input should be 'executor', 'leaf' or"),
        (
            [{"kind": "executor", "title": "a"}, {"parent": "0", "kind": "leaf", "title": "b"}],
            "suggested_plan[1].parent: Input should be a valid integer",
        ),
    ],
)
async def test_a_flat_plan_that_is_not_one_tree_is_refused_naming_the_node(suggested: Any, says: str) -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        result = await client.call_tool("plan_research", {"query": "penguins", "suggested_plan": suggested})
    assert result.is_error
    assert says in result.content[0].text  # type: ignore[union-attr]


async def test_a_flat_plan_of_more_than_60_nodes_is_refused() -> None:
    nodes = [{"kind": "executor", "title": "root"}] + [
        {"parent": 0, "kind": "leaf", "title": f"leaf {i}", "questions": ["What is it?"]} for i in range(60)
    ]
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        result = await client.call_tool("plan_research", {"query": "penguins", "suggested_plan": nodes})
    assert result.is_error
    assert "suggested_plan has 61 nodes; give at most 60" in result.content[0].text  # type: ignore[union-attr]


async def asked(client: Client, arguments: dict[str, Any]) -> ExtractorInput:
    result = await client.call_tool("extract_source", {"source": TEXT, **arguments})
    assert not result.is_error, result.content
    handoff = Store(Settings().database_path).get_handoff(result.structured_content["id"])  # type: ignore[index]
    extractor_input = handoff.input_as(ExtractorInput)
    assert extractor_input is not None
    return extractor_input


async def test_a_task_spec_without_questions_asks_the_tools_questions() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        given = await asked(
            client,
            {
                "questions": ["When do emperor penguins breed?", "  "],
                "task_spec": {
                    "expected_format": "a season",
                    "acceptance_criteria": None,
                    "discovery_intense": True,
                },
            },
        )
    assert given.task_spec is not None
    assert given.task_spec.questions == ["When do emperor penguins breed?"]
    assert given.task_spec.expected_format == "a season" and given.task_spec.discovery_intense
    assert given.questions == ["When do emperor penguins breed?"]


async def test_a_task_spec_with_its_own_questions_priority_and_budget_is_taken_as_before() -> None:
    spec = {
        "questions": ["Where do Adelie penguins nest?"],
        "priority": 1,
        "budget": {"max_tokens": 5000},
        "acceptance_criteria": ["names a place"],
    }
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        given = await asked(client, {"questions": ["When do emperor penguins breed?"], "task_spec": spec})
    assert given.task_spec is not None
    assert given.task_spec.questions == ["Where do Adelie penguins nest?"]
    assert given.task_spec.priority == 1 and given.task_spec.budget is not None
    assert given.task_spec.budget.max_tokens == 5000


async def test_a_task_spec_without_questions_holds_the_tools_questions_to_a_task_specs_limits() -> None:
    questions = [f"Question number {i}?" for i in range(12)]
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        result = await client.call_tool(
            "extract_source",
            {"source": TEXT, "questions": questions, "task_spec": {"expected_format": "a list"}},
        )
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "questions (for the task_spec): List should have at most 10 items" in text, text


async def test_a_flat_plans_node_breaking_a_plan_rule_is_named_by_its_index() -> None:
    too_many = [{"kind": "executor", "title": "root"}]
    too_many += [{"parent": 0, "kind": "leaf", "title": f"leaf {i}"} for i in range(13)]
    too_long = [dict(node) for node in FLAT]
    too_long[3]["title"] = "x" * 201
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        crowded = await client.call_tool("plan_research", {"query": "penguins", "suggested_plan": too_many})
        long = await client.call_tool("plan_research", {"query": "penguins", "suggested_plan": too_long})
    assert crowded.is_error and long.is_error
    assert "suggested_plan[0].children: List should have at most 12 items" in crowded.content[0].text  # type: ignore[union-attr]
    assert "suggested_plan[3].title: String should have at most 200 characters" in long.content[0].text  # type: ignore[union-attr]

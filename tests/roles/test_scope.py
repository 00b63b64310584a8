"""Scope judged, not only shape: a query too broad for one run is split into facets by the planner
without a model, and plan_research says "too broad" with narrower queries for the manager to offer
the user. Over a real MCP client session and real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.core.scope import judge_scope
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server

BROAD = "Survey the entire history of energy technology"


@pytest.mark.parametrize(
    ("query", "subject"),
    [
        (BROAD, "energy technology"),
        ("Tell me everything about lithium-ion batteries", "lithium-ion batteries"),
        ("A comprehensive overview of machine learning", "machine learning"),
        ("Give me a complete overview of CRISPR gene editing", "CRISPR gene editing"),
        ("History of the bicycle", "the bicycle"),
    ],
)
def test_a_query_over_a_whole_subject_is_too_broad_and_splits_into_its_facets(
    query: str, subject: str
) -> None:
    scope = judge_scope(query)
    assert scope.too_broad
    assert subject in scope.reason
    assert len(scope.splits) == 4 and all(subject in split for split in scope.splits)


@pytest.mark.parametrize(
    "query",
    [
        "How fast does giant kelp grow?",
        "History of the bicycle in the 1890s",  # a period narrows a history
        "Which is older, the Eiffel Tower or the Statue of Liberty?",
        "Compare all aspects of Rust and Go",  # several subjects: the plan's structure splits them
        "What is the history of Unix file permissions and how do setuid bits work?",
        "Is every prime greater than 2 odd?",
    ],
)
def test_a_focused_query_is_not_too_broad(query: str) -> None:
    assert not judge_scope(query).too_broad


@pytest.fixture(autouse=True)
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "coal.md").write_text(
        "# Coal\n\nCoal powered the steam engines of the industrial revolution.\n"
    )
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))


async def test_plan_research_splits_a_too_broad_query_and_says_so_with_narrower_queries() -> None:
    async with Client(create_server(), mode="legacy") as client:  # no key, no sampling: extractive
        planned = await client.call_tool("plan_research", {"query": BROAD})
        tree = await client.call_tool(
            "report_results", {"id": planned.structured_content["id"], "view": "tree"}
        )
    handle = planned.structured_content
    assert handle["status"] == "feasible"
    [line] = [line for line in handle["summary"] if line.startswith("Too broad")]
    assert line == "Too broad (survey of energy technology): 4 leaves, origins, milestones, today, outlook"
    assert handle["metrics"]["nodes"] == 5  # the root and one leaf per facet
    for facet in (
        "origins and earliest forms",
        "key milestones",
        "state of energy technology today",
        "outlook",
    ):
        assert facet in tree.structured_content["text"]


async def test_everything_about_several_subjects_is_split_one_leaf_per_subject() -> None:
    query = "Tell me everything about software licences and Debian packaging history"
    async with Client(create_server(), mode="legacy") as client:
        planned = await client.call_tool("plan_research", {"query": query})
        tree = await client.call_tool(
            "report_results", {"id": planned.structured_content["id"], "view": "tree"}
        )
    handle = planned.structured_content
    [line] = [line for line in handle["summary"] if line.startswith("Too broad")]
    assert line == (
        "Too broad (everything, over 2 subjects: software licences; Debian packaging history): "
        "2 leaves, software licences, Debian packaging history"
    )
    assert handle["metrics"]["nodes"] == 3
    assert "What are the main kinds of software licences" in tree.structured_content["text"]
    assert "key milestones in the development of Debian packaging?" in tree.structured_content["text"]


def test_a_sweep_over_more_subjects_than_splits_offers_the_first_and_names_them_all() -> None:
    scope = judge_scope("Everything about Rust, Go, Zig, Nim and Odin")
    assert scope.too_broad
    assert scope.reason == "everything, over 5 subjects: Rust; Go; Zig; Nim; Odin"
    assert scope.facets == ("Rust", "Go", "Zig", "Nim")


async def test_a_focused_query_plans_one_leaf_and_no_scope_line() -> None:
    async with Client(create_server(), mode="legacy") as client:
        planned = await client.call_tool("plan_research", {"query": "How fast does giant kelp grow?"})
    assert not any(line.startswith("Too broad") for line in planned.structured_content["summary"])
    assert planned.structured_content["metrics"]["nodes"] == 2


async def test_a_model_planner_that_did_not_split_a_too_broad_query_gets_the_facets_as_advice() -> None:
    # The scripted team's planner plans one leaf asking the query, whatever it is.
    async with Client(create_server(model=ScriptedModel(team_script)), mode="legacy") as client:
        planned = await client.call_tool("plan_research", {"query": BROAD})
    assert planned.structured_content["summary"][0] == (
        "Too broad (survey of energy technology): split it with the user, e.g. into "
        "origins, milestones, today, outlook"
    )

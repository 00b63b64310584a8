"""The planner without a model decomposes a question by its syntax: a list or conjunction of questions
into its parts, a comparison into one part per item, a pronoun into what it stands for; anything
else stays whole. A host's suggested plan is used as written. Through the planner's entry point
(`plan`) and through a real MCP client session."""

from __future__ import annotations

import re

import pytest
from mcp import Client

from research_mcp.core.contracts import PlannerOutput, PlanNode
from research_mcp.core.feasibility import check_feasible
from research_mcp.core.role_inputs import PlannerInput
from research_mcp.llm.extractive.planner import plan
from research_mcp.server.app import create_server

WHOLE, PARTS, COMPARISON = "whole", "parts", "comparison"

# (question, its shape, the questions of its leaves: one list per part or compared item)
QUESTIONS = [
    # Question words coordinated over one predicate, a condition, a relative clause: one question.
    ("Which year and which conference was the paper presented at?", WHOLE, None),
    ("In which city and in which year were the first modern Olympics held?", WHOLE, None),
    ("When and why did the Roman Empire fall?", WHOLE, None),
    ("What are the causes and effects of ocean acidification?", WHOLE, None),
    ("When the battery is low, what does the phone do?", WHOLE, None),
    ("What did the author, who founded the company, say?", WHOLE, None),
    ("Why is the sky blue?", WHOLE, None),
    # Conjunctions and lists of questions, each a question on its own; pronouns carry the topic.
    ("What is a VPN, and how do I set it up?", PARTS, [["What is a VPN?"], ["How do I set a VPN up?"]]),
    (
        "What causes tides; how often do they occur?",
        PARTS,
        [["What causes tides?"], ["How often do tides occur?"]],
    ),
    (
        "What is CRISPR? How does it edit genes?",
        PARTS,
        [["What is CRISPR?"], ["How does CRISPR edit genes?"]],
    ),
    (
        "Who is Ada Lovelace and what did she write?",
        PARTS,
        [["Who is Ada Lovelace?"], ["What did Ada Lovelace write?"]],
    ),
    (
        "Where is the Eiffel Tower, and when was it built?",
        PARTS,
        [["Where is the Eiffel Tower?"], ["When was the Eiffel Tower built?"]],
    ),
    (
        "What does NATO stand for, who leads it today, and when was it founded?",
        PARTS,
        [["What does NATO stand for?"], ["Who leads NATO today?"], ["When was NATO founded?"]],
    ),
    (
        "If the server crashes, what happens to open connections, and how are they restored?",
        PARTS,
        [
            ["If the server crashes, what happens to open connections?"],
            ["How are open connections restored?"],
        ],
    ),
    (
        "Who wrote Hamlet and who directed the 1948 film?",
        PARTS,
        [["Who wrote Hamlet?"], ["Who directed the 1948 film?"]],
    ),
    ("What is Rust? Is it memory safe?", PARTS, [["What is Rust?"], ["Is Rust memory safe?"]]),
    (
        "What is Kubernetes, and why is this popular?",
        PARTS,
        [["What is Kubernetes?"], ["Why is Kubernetes popular?"]],
    ),
    (
        "Who is Marie Curie, and what was her first discovery?",
        PARTS,
        [["Who is Marie Curie?"], ["What was Marie Curie's first discovery?"]],
    ),
    (
        "How does the Linux kernel schedule tasks? Why is it fast?",
        PARTS,
        [["How does the Linux kernel schedule tasks?"], ["Why is the Linux kernel fast?"]],
    ),
    # Comparisons: one part per item, each naming its item and carrying the compared aspect.
    (
        "Compare the GPL-3 and Apache-2.0 on patent grants",
        COMPARISON,
        [["What about patent grants for GPL-3?"], ["What about patent grants for Apache-2.0?"]],
    ),
    (
        "Compare Lake Victoria and Lake Superior: where is each, and which is larger?",
        COMPARISON,
        [["Where is Lake Victoria?"], ["Where is Lake Superior?"]],
    ),
    (
        "PostgreSQL vs MySQL for write-heavy workloads",
        COMPARISON,
        [
            ["What about write-heavy workloads for PostgreSQL?"],
            ["What about write-heavy workloads for MySQL?"],
        ],
    ),
    ("Python versus Ruby", COMPARISON, [["What is Python?"], ["What is Ruby?"]]),
    ("React vs Vue vs Svelte", COMPARISON, [["What is React?"], ["What is Vue?"], ["What is Svelte?"]]),
    ("What are the differences between TCP and UDP?", COMPARISON, [["What is TCP?"], ["What is UDP?"]]),
    (
        "How does TCP differ from UDP in reliability?",
        COMPARISON,
        [["What about reliability for TCP?"], ["What about reliability for UDP?"]],
    ),
    ("Is Mount Everest or K2 taller?", COMPARISON, [["Is Mount Everest taller?"], ["Is K2 taller?"]]),
    ("Which is larger, Jupiter or Saturn?", COMPARISON, [["Is Jupiter larger?"], ["Is Saturn larger?"]]),
    (
        "Which has more caffeine, tea or coffee?",
        COMPARISON,
        [["Does tea have more caffeine?"], ["Does coffee have more caffeine?"]],
    ),
    ("What do cats and dogs each eat?", COMPARISON, [["What do cats eat?"], ["What do dogs eat?"]]),
    (
        "Are both Python and Ruby dynamically typed?",
        COMPARISON,
        [["Is Python dynamically typed?"], ["Is Ruby dynamically typed?"]],
    ),
    (
        "Are Lisbon and Porto in the same country?",
        COMPARISON,
        [["What country is Lisbon in?"], ["What country is Porto in?"]],
    ),
    (
        "Do Git and Mercurial use the same hashing algorithm?",
        COMPARISON,
        [["What hashing algorithm does Git use?"], ["What hashing algorithm does Mercurial use?"]],
    ),
]


def asked(root: PlanNode) -> list[list[str]]:
    """The questions of the plan's reading leaves, in order (discovery leaves only find sources)."""
    return [node.questions for node in root.walk() if node.kind == "leaf"]


@pytest.mark.parametrize(("question", "shape", "parts"), QUESTIONS, ids=[q[0][:48] for q in QUESTIONS])
def test_a_question_is_split_by_its_syntax_or_stays_whole(
    question: str, shape: str, parts: list[list[str]] | None
) -> None:
    root = plan(PlannerInput(query=question)).root

    assert root.kind == "executor" and root.title == question
    assert check_feasible(root) == []
    assert asked(root) == (parts if parts is not None else [[question]])
    for leaf in (node for node in root.walk() if node.kind == "leaf"):
        assert [spec.questions for spec in leaf.task_specs] == [leaf.questions]
        assert 1 <= len(leaf.search_queries) <= 3
    if shape == PARTS:
        # Each part is a node, and the parts are the criteria of a phase iterating until each is covered.
        assert [child.questions for child in root.children] == parts
        (phase,) = root.phases
        assert phase.criteria.themes == [question for (question,) in parts]  # type: ignore[misc]
    elif shape == COMPARISON:
        # The comparison is the goal (the executor's title and the discovery leaf's question); each
        # item's leaf is titled by its item and searches for it.
        discovery, *leaves = root.children
        assert discovery.kind == "discovery" and discovery.questions == [question]
        assert discovery.search_queries == [leaf.title for leaf in leaves]
        for leaf, questions in zip(leaves, parts or [], strict=True):
            assert all(leaf.title in asked_of_item for asked_of_item in questions)
            assert leaf.search_queries[0].startswith(leaf.title)
    else:
        assert root.phases == [] and [child.kind for child in root.children] == ["leaf"]


@pytest.mark.parametrize(
    ("question", "first", "compared", "items"),
    [
        (
            "What is HTTP/3, and how does it differ from HTTP/2?",
            "What is HTTP/3?",
            "How does HTTP/3 differ from HTTP/2?",
            ["HTTP/3", "HTTP/2"],
        ),
        (
            "What is Docker. How does it differ from a virtual machine?",
            "What is Docker?",
            "How does Docker differ from a virtual machine?",
            ["Docker", "virtual machine"],
        ),
    ],
)
def test_a_part_that_is_a_comparison_is_an_executor_over_its_items(
    question: str, first: str, compared: str, items: list[str]
) -> None:
    root = plan(PlannerInput(query=question)).root

    asked, comparison = root.children
    assert asked.questions == [first]
    assert comparison.kind == "executor" and comparison.title == compared
    assert [child.kind for child in comparison.children] == ["discovery", *(["leaf"] * len(items))]
    assert [child.title for child in comparison.children[1:]] == items
    assert check_feasible(root) == []


def test_which_one_after_a_comparison_chooses_among_its_items() -> None:
    root = plan(PlannerInput(query="How does HTTP/3 differ from HTTP/2, and which one is faster?")).root

    compared, chosen = root.children
    assert compared.title == "How does HTTP/3 differ from HTTP/2?"
    # "Which one" stands for the items compared: each item's leaf asks it of that item, not a bare
    # "Which one is faster?" searched for on its own.
    assert chosen.kind == "executor" and chosen.title == "Which is faster, HTTP/3 or HTTP/2?"
    assert [leaf.questions for leaf in chosen.children[1:]] == [["Is HTTP/3 faster?"], ["Is HTTP/2 faster?"]]
    assert check_feasible(root) == []


def test_a_suggested_plan_is_used_as_written() -> None:
    suggested = PlannerOutput(
        root=PlanNode(
            id="n9",
            kind="executor",
            title="Heat pumps",
            children=[
                PlanNode(
                    id="x", kind="leaf", title="Cost", questions=["What does it cost, and is it worth it?"]
                ),
                PlanNode(kind="leaf", title="Noise vs size", questions=["Compare noise and size"]),
            ],
        )
    )

    root = plan(PlannerInput(query="Compare heat pumps and boilers", suggested_plan=suggested)).root

    # Not split, not compared, no task spec added: only the ids are cleared (the server assigns them).
    cleared = suggested.root.model_dump()
    cleared["id"] = ""
    for child in cleared["children"]:
        child["id"] = ""
    assert root.model_dump() == cleared


async def test_a_comparison_planned_through_mcp_has_one_leaf_per_item_and_a_suggested_plan_stays() -> None:
    suggested = [
        {"kind": "executor", "title": "Licences"},
        {
            "parent": 0,
            "kind": "leaf",
            "title": "Both",
            "questions": ["What do the GPL-3 and the MIT licence each allow?"],
        },
    ]
    async with Client(
        create_server(), mode="legacy"
    ) as client:  # no key, no sampling: the extractive planner
        planned = await client.call_tool(
            "plan_research", {"query": "Compare the GPL-3 and Apache-2.0 on patent grants"}
        )
        tree = await client.call_tool(
            "report_results", {"id": planned.structured_content["id"], "view": "tree"}
        )
        given = await client.call_tool("plan_research", {"query": "licences", "suggested_plan": suggested})
        written = await client.call_tool(
            "report_results", {"id": given.structured_content["id"], "view": "tree"}
        )
    assert planned.structured_content["backend"] == "extractive"
    text = tree.structured_content["text"]
    assert re.findall(r"n\.\d+ leaf: ([^ ]+) — (.+)", text) == [
        ("GPL-3", "What about patent grants for GPL-3?"),
        ("Apache-2.0", "What about patent grants for Apache-2.0?"),
    ]
    assert "n.1 discovery: Sources on GPL-3 and Apache-2.0" in text
    # The suggested plan's leaf keeps its one question, not split into the two items.
    assert re.findall(r"n\.\d+ leaf: (.+)", written.structured_content["text"]) == [
        "Both — What do the GPL-3 and the MIT licence each allow?"
    ]

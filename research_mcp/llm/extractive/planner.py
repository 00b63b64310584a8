"""The planner without a model: the query's syntax decides the tree (llm/extractive/decompose.py).

- A question of several parts ("What is A, and how does B …?", "A? B?", "A; B") becomes one node per
  part, and a phase on the root whose criteria are the parts: it iterates (at most
  ``COVERAGE_ITERATIONS`` times) while verified facts leave a part uncovered. A later part leaning
  on a pronoun carries the first part's topic in its place.
- A comparison ("Compare A and B on X", "A vs B", "differences between A and B", "Is A or B …?")
  becomes an executor whose title is the comparison (its goal), with a discovery leaf scouting for
  the items and one leaf per item, asking its item's questions; within a question of several
  parts, a part that is a comparison becomes such an executor (still within three executor levels).
- A query too broad for one run ("survey the entire history of X": ``scope.py``) becomes one leaf per
  facet of its subject (origins, milestones, today, outlook).
- Anything else is one leaf asking the query.

Every leaf carries a task spec: its questions and the form its findings take.

A suggested plan is used as written (ids cleared: the server assigns them) when it passes the
feasibility rules and the last attempt reported no violations.
"""

from __future__ import annotations

import re

from research_mcp.answering.terms import STOPWORDS, clip
from research_mcp.core.contracts import ExtractorTaskSpec, Phase, PhaseCriteria, PlannerOutput, PlanNode
from research_mcp.core.feasibility import check_feasible
from research_mcp.core.role_inputs import PlannerInput
from research_mcp.core.scope import judge_scope
from research_mcp.llm.extractive.decompose import Comparison, Part, decompose

__all__ = ["plan"]

NOTE = "Extractive planner: split by the query's syntax, no language model."
#: A list is a form code can enforce (roles/acceptance.py reshapes a report that lacks it).
LEAF_FORMAT = "A bulleted list of the key findings, each citing the facts that establish it"
COVERAGE_ITERATIONS = 2

_SPACE = re.compile(r"\s+")


def plan(payload: PlannerInput) -> PlannerOutput:
    suggested = payload.suggested_plan
    if suggested is not None and not payload.violations and not check_feasible(suggested.root):
        return PlannerOutput(
            root=_without_ids(suggested.root), rationale=f"Used the suggested plan as written. {NOTE}"
        )
    query = _SPACE.sub(" ", payload.query).strip()
    if len(query) < 3:
        query = f"What is {query or 'this'}?"
    parts = decompose(query)
    phases = []
    if len(parts) > 1:
        children = [_part_node(part) for part in parts]
        themes = [clip(_goal(part), 300) for part in parts[:10]]
        criteria = PhaseCriteria(themes=themes)
        phases = [Phase(name="cover every part", criteria=criteria, max_iterations=COVERAGE_ITERATIONS)]
        why = (
            f"{len(parts)} distinct questions: one node each, and a phase that iterates (at most "
            f"{COVERAGE_ITERATIONS} times) until verified facts cover every part."
        )
    elif isinstance(comparison := parts[0], Comparison):
        children = _comparison_children(comparison)
        why = (
            f"A comparison of {len(comparison.items)} items ({', '.join(comparison.items)}): a discovery "
            "leaf scouting for them, then one leaf per item, asking its item's questions."
        )
    elif (scope := judge_scope(query)).too_broad:
        children = [_leaf(split) for split in scope.splits]
        why = f"Too broad for one run ({scope.reason}): one leaf per facet."
    else:
        children = [_leaf(query)]
        why = "A single question: one leaf."
    root = PlanNode(kind="executor", title=clip(query, 200), children=children, phases=phases)
    return PlannerOutput(root=_specified(root), rationale=f"{why} {NOTE}")


def _goal(part: Part) -> str:
    return part.goal if isinstance(part, Comparison) else part


def _part_node(part: Part) -> PlanNode:
    if isinstance(part, Comparison):
        return PlanNode(kind="executor", title=clip(part.goal, 200), children=_comparison_children(part))
    return _leaf(part)


def _comparison_children(comparison: Comparison) -> list[PlanNode]:
    items = list(comparison.items)
    leaves = [
        _item_leaf(item, asked, comparison.aspect)
        for item, asked in zip(items, comparison.asked, strict=True)
    ]
    discovery = PlanNode(  # its scout sweeps for every compared item, for the item leaves beside it
        kind="discovery",
        title=clip(f"Sources on {', '.join(items[:-1])} and {items[-1]}", 200),
        questions=[clip(comparison.goal, 500)],
        search_queries=[clip(item, 300) for item in items[:6]],
    )
    return [discovery, *leaves]


def _specified(node: PlanNode) -> PlanNode:
    """The tree with a task spec on every leaf (its questions and the form of its findings)."""
    children = [_specified(child) for child in node.children]
    if node.kind == "leaf" and not node.task_specs and node.questions:
        spec = ExtractorTaskSpec(questions=list(node.questions), expected_format=LEAF_FORMAT)
        node = node.model_copy(update={"task_specs": [spec]})
    return node.model_copy(update={"children": children})


def _content_words(text: str) -> list[str]:
    return [word for word in re.findall(r"[^\W_]+", text) if word.casefold() not in STOPWORDS]


def _search_queries(*candidates: str) -> list[str]:
    queries: list[str] = []
    for candidate in candidates:
        candidate = clip(candidate.strip(), 300)
        if candidate and candidate.casefold() not in {query.casefold() for query in queries}:
            queries.append(candidate)
    return queries[:3]


def _leaf(question: str) -> PlanNode:
    """A leaf asking one question, searching with it and with its content words."""
    question = clip(question, 500)
    return PlanNode(
        kind="leaf",
        title=clip(question, 200),
        questions=[question],
        search_queries=_search_queries(question, " ".join(_content_words(question))),
    )


def _item_leaf(item: str, asked: tuple[str, ...], aspect: str) -> PlanNode:
    """A leaf for one compared item: its item's questions, searching for the item and the aspect."""
    named = {word.casefold() for word in _content_words(item)}
    aspect_words = [word for word in _content_words(aspect) if word.casefold() not in named]
    return PlanNode(
        kind="leaf",
        title=clip(item, 200),
        questions=[clip(question, 500) for question in asked[:10]],
        search_queries=_search_queries(f"{item} {' '.join(aspect_words)}", item),
    )


def _without_ids(node: PlanNode) -> PlanNode:
    return node.model_copy(update={"id": "", "children": [_without_ids(child) for child in node.children]})

"""The two nested arguments, `suggested_plan` and `task_spec`: the shapes their schemas publish,
and how each becomes the domain model the service takes.

## suggested_plan

A plan is a tree, and a tree's JSON schema is recursive: a `$ref` that strict tool converters refuse
(openai-agents, asked to reject open objects, refuses any `$ref` it cannot inline, and inlining a
recursive one never ends), while an open `{type: object}` is refused as permitting undeclared keys.
So the published shape is a list of nodes, each naming its parent by index: the first node is the
root, every other node's parent is an earlier node. Its fields are the few a host needs to suggest a
plan (kind, title, questions, sources) and the node's own budget: the sources it may read and its
seconds (`NodeBudget`; tokens and cost are the plan's, plan_research's `budget`); the planner adds
the rest (task specs, phases). Every field is described: the tool definition is all a model reads.
A node's budget binds as the plan tree's does (runs/engine.py, runs/reading.py).

The tree form, `{"root": {..., "children": [...]}, "rationale": ...}` with every field of a plan
node, is still accepted as before: a host that sends it gets the same plan.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from research_mcp.core.contracts import NodeKind, PlannerOutput
from research_mcp.core.feasibility import MAX_NODES
from research_mcp.server.schemas import Limits

__all__ = [
    "PLAN_SHAPE",
    "FlatPlanError",
    "NodeBudget",
    "SuggestedNode",
    "TaskSpecShape",
    "task_spec_with_questions",
    "tree_of_nodes",
]


class NodeBudget(BaseModel):
    """A node's own limits, as the flat form publishes them (the plan tree's `Budget` holds them)."""

    model_config = ConfigDict(extra="forbid")

    max_seconds: float | None = Field(default=None, description="Seconds.")
    max_sources: int | None = Field(default=None, description="Sources.")


class SuggestedNode(BaseModel):
    """One node of a suggested plan, in the flat form."""

    model_config = ConfigDict(extra="forbid")

    parent: int | None = Field(default=None, description="Parent index; null: root.")
    kind: NodeKind = Field(description="leaf reads, discovery finds.")
    title: Annotated[str, Limits(maxLength=200)] = Field(description="Name.")
    questions: Annotated[list[Annotated[str, Limits(maxLength=500)]], Limits(maxItems=10)] = Field(
        default=[], description="To answer."
    )
    sources: Annotated[list[Annotated[str, Limits(maxLength=2000)]], Limits(maxItems=20)] = Field(
        default=[], description="URLs, corpus:<id>; none: search."
    )
    # Published as an object whose empty value means no limit: a strict client sends {} or nulls.
    budget: NodeBudget = Field(
        default_factory=NodeBudget, description="Limits.", json_schema_extra={"default": {}}
    )


_NODES = TypeAdapter(list[SuggestedNode])


class FlatPlanError(ValueError):
    """A flat plan that does not make one valid tree: each problem as pydantic reports it, located
    in the flat list (`(2, "title")` is the third node's title)."""

    def __init__(self, problems: list[ErrorDetails]) -> None:
        super().__init__(f"{len(problems)} problems")
        self.problems = problems


PLAN_SHAPE = "plan_shape"  # the type of a problem this module words: a phrase following its place


def _problem(loc: tuple[int | str, ...], message: str) -> ErrorDetails:
    return ErrorDetails(type=PLAN_SHAPE, loc=loc, msg=message, input=None)


def tree_of_nodes(value: Any) -> Any:
    """A list of flat nodes as the plan tree they describe, an empty list as no plan; anything else
    unchanged (the tree form is validated as it always was). Raises `FlatPlanError`."""
    if not isinstance(value, list):
        return value
    if not value:
        return None  # what a strict client sends for "no plan"
    if len(value) > MAX_NODES:
        raise FlatPlanError([_problem((), f"has {len(value)} nodes; give at most {MAX_NODES}")])
    try:
        nodes = _NODES.validate_python([_without_nulls(node) for node in value], strict=True)
    except ValidationError as error:
        raise FlatPlanError(error.errors(include_url=False)) from None
    trees: list[dict[str, Any]] = []
    paths: dict[tuple[int | str, ...], int] = {}  # where each node sits in the tree: its index
    for index, node in enumerate(nodes):
        tree = node.model_dump(exclude={"parent"}, exclude_defaults=True) | {"children": []}
        if index == 0:
            if node.parent is not None:
                raise FlatPlanError([_problem((0, "parent"), "must be null: the first node is the root")])
            paths[("root",)] = 0
        elif node.parent is None or not 0 <= node.parent < index:
            why = (
                "is null, but only the first node is the root: give the index of its parent"
                if node.parent is None
                else f"is {node.parent}: give the index of an earlier node (0 to {index - 1})"
            )
            raise FlatPlanError([_problem((index, "parent"), why)])
        else:
            parent_path = next(path for path, at in paths.items() if at == node.parent)
            siblings = trees[node.parent]["children"]
            paths[(*parent_path, "children", len(siblings))] = index
            siblings.append(tree)
        trees.append(tree)
    try:
        return PlannerOutput.model_validate({"root": trees[0]}, strict=True)
    except ValidationError as error:
        raise FlatPlanError(
            [_located(problem, paths) for problem in error.errors(include_url=False)]
        ) from None


def _located(problem: ErrorDetails, paths: dict[tuple[int | str, ...], int]) -> ErrorDetails:
    """A problem of the tree, located at the flat node it belongs to."""
    loc = tuple(problem["loc"])
    for cut in range(len(loc), 0, -1):
        if loc[:cut] in paths:
            return {**problem, "loc": (paths[loc[:cut]], *loc[cut:])}
    return problem


def _without_nulls(node: Any) -> Any:
    """A strict client sends null for each field it leaves out; null means not given."""
    if isinstance(node, dict):
        return {key: item for key, item in node.items() if item is not None or key == "parent"}
    return node


class TaskSpecShape(BaseModel):
    """The task spec as extract_source's schema publishes it."""

    model_config = ConfigDict(extra="forbid")

    expected_format: Annotated[str, Limits(maxLength=500)] = ""
    acceptance_criteria: Annotated[list[Annotated[str, Limits(maxLength=300)]], Limits(maxItems=10)] = []
    discovery_intense: bool = False


def task_spec_with_questions(value: Any, questions: list[str]) -> Any:
    """A task spec object without its own questions, given the tool's (those not blank)."""
    if isinstance(value, dict) and "questions" not in value:
        return {"questions": [question.strip() for question in questions if question.strip()], **value}
    return value

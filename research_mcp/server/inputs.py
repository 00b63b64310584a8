"""What the tools accept, checked once, at the tool boundary: each argument's type in the tool
signatures is one of the `Annotated` types below, whose validators hold the limits and say what to
give instead. The arguments are validated strictly (the string "5" is not the number 5).

The limits (docs/tools.md, "Input limits"):

    query, topic            at most 2,000 characters (a query at least 3, a topic at least 3)
    questions               at most 20, each at most 1,000 characters
    queries (scout)         at most 10, each at most 300 characters
    source                  a URL of at most 2,048 characters, or text of at most 2,000,000
    ids, cursor             at most 64 characters, of the kind the argument takes
    plan_ids                at most 10
    suggested_plan          at most 60 nodes, 40 levels of nesting, 500,000 characters as JSON;
                            [] means none; a flat node's budget takes max_sources and max_seconds
    budget                  each limit above 0, finite and at most its cap (contracts.BUDGET_CAPS)
    task_spec               at most 10 levels of nesting, 50,000 characters as JSON; without its own
                            questions, the tool's (at most 10 then, each 3 to 500 characters)
    wait_seconds            0 to 55; limit 1 to 20; max_tokens 200 to 20,000
    every string            valid Unicode: no lone surrogates

Each limit is also published in the argument's JSON schema (`Limits`), so that a model sees it
before it calls; the validator, not pydantic, enforces it, and its error says what to give instead.

A validator raises `Refused` with a phrase that follows the argument's name ("is 2,001 characters;
give at most 2,000"); `describe` puts the name (or the item's path) in front.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, get_args
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BeforeValidator,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)

from research_mcp.core.contracts import Budget, ExtractorTaskSpec, PlannerOutput, View
from research_mcp.core.errors import InvalidInput, shown
from research_mcp.core.feasibility import MAX_NODES
from research_mcp.core.ids import kind_of_id
from research_mcp.reports import MAX_MAX_TOKENS, MIN_MAX_TOKENS
from research_mcp.server.nested_arguments import (
    FlatPlanError,
    SuggestedNode,
    TaskSpecShape,
    task_spec_with_questions,
    tree_of_nodes,
)
from research_mcp.server.refusals import Refused, describe, describe_problems
from research_mcp.server.schemas import Limits, compact_schema

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUESTIONS",
    "MAX_QUESTION_CHARS",
    "MAX_TEXT_SOURCE_CHARS",
    "MAX_URL_CHARS",
    "Cursor",
    "Flag",
    "MaxTokens",
    "PageTokens",
    "PageView",
    "PlanId",
    "PlanIds",
    "Query",
    "Question",
    "Questions",
    "Refused",
    "ReportId",
    "RunId",
    "ScoutLimit",
    "SearchQueries",
    "SourceRef",
    "SourcesWanted",
    "SuggestedPlan",
    "TaskSpec",
    "Topic",
    "WaitSeconds",
    "check_plan_ids",
    "describe",
    "limits_given",
]

MAX_QUERY_CHARS = 2_000
MIN_QUERY_CHARS = 3
MAX_QUESTIONS = 20
MAX_QUESTION_CHARS = 1_000
MAX_QUERIES = 10
MAX_SEARCH_QUERY_CHARS = 300
MAX_URL_CHARS = 2_048
# The fetcher reads at most 5 MB of a page; a text given inline is held to 2 million characters.
MAX_TEXT_SOURCE_CHARS = 2_000_000
MAX_ID_CHARS = 64
MAX_PLAN_IDS = 10
MAX_PLAN_NODES = MAX_NODES  # the feasibility rule's own bound
MAX_PLAN_DEPTH = 40
MAX_PLAN_JSON_CHARS = 500_000
MAX_SPEC_DEPTH = 10
MAX_SPEC_JSON_CHARS = 50_000
MAX_WAIT_SECONDS = 55  # hosts cut tool calls at about 60 s
MAX_SCOUT_LIMIT = 20

_SURROGATE = re.compile("[\ud800-\udfff]")
_CURSOR = re.compile(r"\d{1,9}:\d{1,9}")


def _unicode(value: str, field: str = "") -> str:
    surrogate = _SURROGATE.search(value)
    if surrogate:
        raise Refused(
            f"{field + ' ' if field else ''}contains a lone surrogate ({surrogate.group()!a}) at character "
            f"{surrogate.start():,}: give valid Unicode text (it must encode as UTF-8).",
            whole=bool(field),
        )
    return value


def _text(max_chars: int, min_chars: int = 0, empty: str = "") -> AfterValidator:
    """Valid Unicode of at most `max_chars` (and, stripped, at least `min_chars`: else `empty`)."""

    def check(value: str) -> str:
        _unicode(value)
        if len(value) > max_chars:
            raise Refused(f"is {len(value):,} characters; give at most {max_chars:,}.")
        if len(value.strip()) < min_chars:
            raise Refused(empty)
        return value

    return AfterValidator(check)


def _at_most(max_items: int) -> AfterValidator:
    def check(items: list[Any]) -> list[Any]:
        if len(items) > max_items:
            raise Refused(f"has {len(items):,} items; give at most {max_items}.")
        return items

    return AfterValidator(check)


def _between(low: float, high: float, why: str = "") -> AfterValidator:
    def check(value: float) -> float:
        if not (math.isfinite(value) and low <= value <= high):
            raise Refused(f"must be between {low:g} and {high:g}{why}.")
        return value

    return AfterValidator(check)


def _id(kinds: tuple[str, ...], wrong: dict[str, str] | None = None) -> AfterValidator:
    """An id of one of `kinds`; `wrong` maps another kind to what to do with such an id."""
    expected = " or ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)

    def check(value: str) -> str:
        value = value.strip()
        if len(value) > MAX_ID_CHARS:
            raise Refused(
                f"is {len(value):,} characters; a {expected} id is at most {MAX_ID_CHARS}: "
                "give an id that an earlier result returned."
            )
        _unicode(value)
        kind = kind_of_id(value)
        if kind in kinds:
            return value
        if kind is not None:
            advice = (wrong or {}).get(kind, f"give a {expected} id")
            raise Refused(f"{shown(value)} is a {kind} id: {advice}.")
        raise Refused(
            f"{shown(value)} is not a {expected} id: give an id that an earlier result returned "
            f"(like {_example(kinds[0])})."
        )

    return AfterValidator(check)


def _example(kind: str) -> str:
    return {"plan": "plan_1a2b3c4d5e6f", "run": "run_1a2b3c4d5e6f", "handoff": "h_1a2b3c4d5e6f"}.get(
        kind, "S12"
    )


def _source(value: str) -> str:
    """A source as extract_source takes it: a URL, corpus:<id>, S<id> or the text itself."""
    _unicode(value)
    if len(value) > MAX_TEXT_SOURCE_CHARS:
        raise Refused(f"is {len(value):,} characters; give at most {MAX_TEXT_SOURCE_CHARS:,}.")
    ref = value.strip()
    if ref.lower().startswith(("http://", "https://")):
        if len(ref) > MAX_URL_CHARS:
            raise Refused(f"is a URL of {len(ref):,} characters; give one of at most {MAX_URL_CHARS:,}.")
        if not _host_of(ref):
            raise Refused(f"{shown(ref)} is a URL that names no host: give a whole URL (https://host/page).")
        return value
    if len(ref) <= MAX_ID_CHARS:
        kind = kind_of_id(ref)
        if kind is None and re.fullmatch(r"(S|corpus:)\d+", ref):
            raise Refused(
                f"{shown(ref)} is no stored source or corpus document (their ids have at most 12 "
                "digits): give an S<id> or corpus:<id> that an earlier result listed."
            )
        if kind in ("plan", "run", "handoff"):
            raise Refused(
                f"{shown(ref)} is a {kind} id, not a source: give a URL, corpus:<id>, S<id> (a stored "
                "source, as report_results(view='sources') lists them) or the text itself."
            )
    return value


def _host_of(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:  # a malformed IPv6 address: the fetcher says what is wrong with it
        return "?"


def _cursor(value: str | None) -> str | None:
    """The cursor of a page this server gave (`<item>:<offset>`); an empty one means the first page."""
    if value is None or not value.strip():
        return None
    if not _CURSOR.fullmatch(value.strip()):
        raise Refused(
            f"{shown(value)} is not one this server gave; omit it to start over, "
            "or give the cursor of the last page."
        )
    return value.strip()


def _bounded_json(field: str, *, max_depth: int, max_chars: int) -> BeforeValidator:
    """A JSON object given as an argument, before it is parsed: bounded nesting and size, valid
    Unicode throughout (a 500-deep object must be refused before a model recurses into it)."""

    def check(value: Any) -> Any:
        if _depth(value, max_depth) > max_depth:
            raise Refused(f"is nested more than {max_depth} levels deep; give a flatter object.")
        try:
            size = len(json.dumps(value, ensure_ascii=False, allow_nan=False))
        except ValueError:
            raise Refused("holds NaN or infinity: give finite numbers.") from None
        if size > max_chars:
            raise Refused(f"is {size:,} characters as JSON; give at most {max_chars:,}.")
        for path, text in _strings(value, field):
            _unicode(text, path)
        return value

    return BeforeValidator(check)


def _depth(value: Any, limit: int, level: int = 0) -> int:
    """Nesting depth, counted no further than one past `limit`."""
    if level > limit or not isinstance(value, dict | list):
        return level
    items = value.values() if isinstance(value, dict) else value
    return max((_depth(item, limit, level + 1) for item in items), default=level + 1)


def _strings(value: Any, path: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        found = [(f"{path} key", key) for key in value if isinstance(key, str)]
        for key, item in value.items():
            found += _strings(item, f"{path}.{key}")
        return found
    if isinstance(value, list):
        return [pair for index, item in enumerate(value) for pair in _strings(item, f"{path}[{index}]")]
    return []


def _without_nulls(value: Any) -> Any:
    """An object's null fields left out, at every level (null means "not given")."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _flat_plan(value: Any) -> Any:
    """A suggested plan sent as a list of nodes, made the tree the planner reads."""
    try:
        return tree_of_nodes(value)
    except FlatPlanError as error:
        raise Refused(describe_problems(error.problems, "suggested_plan"), whole=True) from None


def _task_spec(value: Any, info: ValidationInfo) -> Any:
    """A task spec without questions asks the tool's `questions`."""
    if not isinstance(value, dict) or "questions" in value:
        return value
    try:
        return ExtractorTaskSpec.model_validate(
            task_spec_with_questions(value, info.data.get("questions", [])), strict=True
        )
    except ValidationError as error:
        message = describe(error, "task_spec").replace("task_spec.questions", "questions (for the task_spec)")
        raise Refused(message, whole=True) from None


def _plan_size(plan: PlannerOutput | None) -> PlannerOutput | None:
    if plan is None:
        return None
    nodes = len(plan.root.walk())
    if nodes > MAX_PLAN_NODES:
        raise Refused(f"has {nodes} nodes; give at most {MAX_PLAN_NODES}.")
    return plan


# --- the argument types ----------------------------------------------------------------------------

Query = Annotated[
    str,
    _text(MAX_QUERY_CHARS, MIN_QUERY_CHARS, "is empty: give a research question of at least a few words."),
    Limits(minLength=MIN_QUERY_CHARS, maxLength=MAX_QUERY_CHARS),
]
Topic = Annotated[
    str,
    _text(MAX_QUERY_CHARS, MIN_QUERY_CHARS, "is empty: say what sources to look for."),
    Limits(minLength=MIN_QUERY_CHARS, maxLength=MAX_QUERY_CHARS),
]
Question = Annotated[str, _text(MAX_QUESTION_CHARS), Limits(maxLength=MAX_QUESTION_CHARS)]
Questions = Annotated[list[Question], _at_most(MAX_QUESTIONS), Limits(maxItems=MAX_QUESTIONS)]
SearchQueries = Annotated[
    list[Annotated[str, _text(MAX_SEARCH_QUERY_CHARS), Limits(maxLength=MAX_SEARCH_QUERY_CHARS)]],
    _at_most(MAX_QUERIES),
    Limits(maxItems=MAX_QUERIES),
]
SourceRef = Annotated[str, AfterValidator(_source), Limits(maxLength=MAX_TEXT_SOURCE_CHARS)]
# Each id's pattern holds its prefix and its length (at most MAX_ID_CHARS in all).
PlanId = Annotated[
    str,
    _id(("plan",), {"run": "pass it as run_id to wait on, resume or cancel that run"}),
    Limits(pattern=f"^plan_[\\w-]{{1,{MAX_ID_CHARS - 5}}}$"),
]
RunId = Annotated[
    str,
    _id(("run",), {"plan": "pass it as plan_id to start a run of that plan"}),
    Limits(pattern=f"^run_[\\w-]{{1,{MAX_ID_CHARS - 4}}}$"),
]
PlanIds = Annotated[list[PlanId], Limits(maxItems=MAX_PLAN_IDS)]
_ELSEWHERE = "report_results reads runs, plans and handoffs; a run's sources are in its view='sources'"
ReportId = Annotated[
    str,
    _id(("run", "plan", "handoff"), {"source": _ELSEWHERE, "corpus document": _ELSEWHERE}),
    Limits(pattern=f"^(run|plan|h)_[\\w-]{{1,{MAX_ID_CHARS - 5}}}$"),
]
Cursor = Annotated[str | None, AfterValidator(_cursor), Limits(pattern=r"^(\d{1,9}:\d{1,9})?$")]
WaitSeconds = Annotated[
    float,
    _between(0, MAX_WAIT_SECONDS, " (hosts cut tool calls at about 60 s)"),
    Limits(minimum=0, maximum=MAX_WAIT_SECONDS),
]
ScoutLimit = Annotated[int, _between(1, MAX_SCOUT_LIMIT)]
MaxTokens = Annotated[
    int,
    _between(MIN_MAX_TOKENS, MAX_MAX_TOKENS, " (hosts refuse larger results); follow the cursor for more"),
]
# Optional arguments with a default are published as their type alone, not nullable: a strict client
# (which must send every property) sends the default or another valid value. Null is still accepted.
Flag = Annotated[bool | None, WithJsonSchema({"type": "boolean"})]
PageView = Annotated[View | None, WithJsonSchema({"enum": list(get_args(View)), "type": "string"})]
SourcesWanted = Annotated[
    ScoutLimit | None, WithJsonSchema({"maximum": MAX_SCOUT_LIMIT, "minimum": 1, "type": "integer"})
]
PageTokens = Annotated[
    MaxTokens | None,
    WithJsonSchema({"maximum": MAX_MAX_TOKENS, "minimum": MIN_MAX_TOKENS, "type": "integer"}),
]
# Published as the flat list of nodes (server/nested_arguments.py); the tree form is accepted as well.
# Left out, null or [] (what a strict client sends for none): no suggested plan.
SuggestedPlan = Annotated[
    PlannerOutput | None,
    WithJsonSchema(
        compact_schema(TypeAdapter(list[SuggestedNode]).json_schema()) | {"maxItems": MAX_PLAN_NODES}
    ),
    BeforeValidator(lambda value: _flat_plan(value)),
    _bounded_json("suggested_plan", max_depth=MAX_PLAN_DEPTH, max_chars=MAX_PLAN_JSON_CHARS),
    AfterValidator(_plan_size),
]
# Published as the fields that shape one extraction (server/nested_arguments.py); its questions are
# the tool's unless it gives its own. Null fields are read as left out.
TaskSpec = Annotated[
    ExtractorTaskSpec,
    WithJsonSchema(compact_schema(TaskSpecShape.model_json_schema())),
    BeforeValidator(_task_spec),
    BeforeValidator(lambda value: _without_nulls(value)),
    _bounded_json("task_spec", max_depth=MAX_SPEC_DEPTH, max_chars=MAX_SPEC_JSON_CHARS),
]


def limits_given(budget: Budget | None) -> Budget | None:
    """The budget, or None when it sets no limit (`{}` and all-null fields mean no budget given)."""
    if budget is None or all(limit is None for limit in budget.model_dump().values()):
        return None
    return budget


def check_plan_ids(plan_id: str | None, plan_ids: list[str] | None) -> list[str]:
    """The plans to run, from plan_ids and plan_id (each already a plan id)."""
    given = [*(plan_ids or []), *([plan_id] if plan_id else [])]
    if len(given) > MAX_PLAN_IDS:
        raise InvalidInput(f"plan_ids has {len(given)} plans; give at most {MAX_PLAN_IDS} for one run.")
    return given

"""What the tools accept: size limits, id shapes, and messages for bad input that name the argument
and say what to give instead.

The limits (README, "Input limits"):

    query, topic            at most 2,000 characters
    questions               at most 20, each at most 1,000 characters
    queries (scout)         at most 10, each at most 300 characters
    source                  a URL of at most 2,048 characters, or text of at most 2,000,000
    ids, cursor             at most 64 characters, of the kind the argument takes
    plan_ids                at most 10
    suggested_plan          at most 60 nodes, 40 levels of nesting, 500,000 characters as JSON
    task_spec               at most 10 levels of nesting, 50,000 characters as JSON
    every string            valid Unicode: no lone surrogates

Numbers (wait_seconds 0-55, limit 1-20, max_tokens 200-20,000, budgets finite and positive) are
checked where they are used, in the service and the contracts.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from research_mcp.contracts import ExtractorTaskSpec, PlannerOutput
from research_mcp.errors import InvalidInput, shown
from research_mcp.feasibility import MAX_NODES

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_QUESTIONS",
    "MAX_QUESTION_CHARS",
    "MAX_TEXT_SOURCE_CHARS",
    "MAX_URL_CHARS",
    "check_cursor",
    "check_id",
    "check_json",
    "check_list",
    "check_plan_ids",
    "check_report_id",
    "check_run_id",
    "check_source",
    "check_suggested_plan",
    "check_task_spec",
    "check_text",
    "describe",
    "parse",
]

M = TypeVar("M", bound=BaseModel)

MAX_QUERY_CHARS = 2_000
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

ID_KINDS = {
    "plan": re.compile(r"plan_[A-Za-z0-9_-]+"),
    "run": re.compile(r"run_[A-Za-z0-9_-]+"),
    "handoff": re.compile(r"h_[A-Za-z0-9_-]+"),
    "source": re.compile(r"S\d{1,12}"),
    "corpus document": re.compile(r"corpus:\d{1,12}"),
}
_SURROGATE = re.compile("[\ud800-\udfff]")
_CURSOR = re.compile(r"\d{1,9}:\d{1,9}")


def check_text(field: str, value: str, max_chars: int) -> str:
    """The text, if it is valid Unicode and not longer than `max_chars`."""
    surrogate = _SURROGATE.search(value)
    if surrogate:
        raise InvalidInput(
            f"{field} contains a lone surrogate ({surrogate.group()!a}) at character "
            f"{surrogate.start():,}: give valid Unicode text (it must encode as UTF-8)."
        )
    if len(value) > max_chars:
        raise InvalidInput(f"{field} is {len(value):,} characters; give at most {max_chars:,}.")
    return value


def check_list(field: str, items: list[str], max_items: int, max_chars: int) -> list[str]:
    if len(items) > max_items:
        raise InvalidInput(f"{field} has {len(items):,} items; give at most {max_items}.")
    for index, item in enumerate(items):
        check_text(f"{field}[{index}]", item, max_chars)
    return items


def kind_of_id(value: str) -> str | None:
    """Which kind of id the value is shaped as (plan, run, handoff, source, corpus document)."""
    for kind, shape in ID_KINDS.items():
        if shape.fullmatch(value):
            return kind
    return None


def check_id(field: str, value: str, kinds: tuple[str, ...], *, wrong: dict[str, str] | None = None) -> str:
    """The id, if it is of one of `kinds`; `wrong` maps another kind to what to do with such an id."""
    value = value.strip()
    expected = " or ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
    if len(value) <= MAX_ID_CHARS:
        check_text(field, value, MAX_ID_CHARS)
    else:
        raise InvalidInput(
            f"{field} is {len(value):,} characters; a {expected} id is at most {MAX_ID_CHARS}: "
            "give an id that an earlier result returned."
        )
    kind = kind_of_id(value)
    if kind in kinds:
        return value
    if kind is not None:
        advice = (wrong or {}).get(kind, f"give a {expected} id")
        raise InvalidInput(f"{field} {shown(value)} is a {kind} id: {advice}.")
    raise InvalidInput(
        f"{field} {shown(value)} is not a {expected} id: give an id that an earlier result returned "
        f"(like {_example(kinds[0])})."
    )


def _example(kind: str) -> str:
    return {"plan": "plan_1a2b3c4d5e6f", "run": "run_1a2b3c4d5e6f", "handoff": "h_1a2b3c4d5e6f"}.get(
        kind, "S12"
    )


def check_source(value: str) -> str:
    """A source as extract_source takes it: a URL, corpus:<id>, S<id> or the text itself."""
    check_text("source", value, MAX_TEXT_SOURCE_CHARS)
    ref = value.strip()
    if ref.lower().startswith(("http://", "https://")):
        if len(ref) > MAX_URL_CHARS:
            raise InvalidInput(
                f"source is a URL of {len(ref):,} characters; give one of at most {MAX_URL_CHARS:,}."
            )
        return value
    if len(ref) <= MAX_ID_CHARS:
        kind = kind_of_id(ref)
        if kind is None and re.fullmatch(r"(S|corpus:)\d+", ref):
            raise InvalidInput(
                f"source {shown(ref)} is no stored source or corpus document (their ids have at most 12 "
                "digits): give an S<id> or corpus:<id> that an earlier result listed."
            )
        if kind in ("plan", "run", "handoff"):
            raise InvalidInput(
                f"source {shown(ref)} is a {kind} id, not a source: give a URL, corpus:<id>, S<id> (a stored "
                "source, as report_results(view='sources') lists them) or the text itself."
            )
    return value


def check_cursor(value: str | None) -> str | None:
    """The cursor of a page this server gave (`<item>:<offset>`); an empty one means the first page."""
    if value is None or not value.strip():
        return None
    if not _CURSOR.fullmatch(value.strip()):
        raise InvalidInput(
            f"cursor {shown(value)} is not one this server gave; omit it to start over, "
            "or give the cursor of the last page."
        )
    return value.strip()


def check_json(field: str, value: Any, *, max_depth: int, max_chars: int) -> Any:
    """A JSON value given as an argument: bounded nesting and size, valid Unicode throughout."""
    depth = _depth(value, max_depth)
    if depth > max_depth:
        raise InvalidInput(f"{field} is nested more than {max_depth} levels deep; give a flatter object.")
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except ValueError:
        raise InvalidInput(f"{field} holds NaN or infinity: give finite numbers.") from None
    if size > max_chars:
        raise InvalidInput(f"{field} is {size:,} characters as JSON; give at most {max_chars:,}.")
    for path, text in _strings(value, field):
        check_text(path, text, max_chars)
    return value


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


def describe(error: ValidationError, field: str = "", *, limit: int = 3) -> str:
    """A pydantic validation error as one line per problem: where, what is wrong, what was given."""
    problems = []
    for item in error.errors(include_url=False)[:limit]:
        where = field
        for part in item["loc"]:
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field; leave it out"
        elif item["type"] == "missing":
            message = "required; give it"
        else:
            message += f" (got {_given(item['input'])})"
        problems.append(f"{where or 'the value'}: {message}")
    more = len(error.errors()) - limit
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "") + "."


def _given(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, str) and len(value) > 40:
        return f"a text of {len(value):,} characters"
    return shown(value, 40)


def parse(model: type[M], value: Any, field: str, what: str) -> M:
    """`value` as a `model`, or InvalidInput naming each bad field, e.g. 'task_spec.priority: ...'."""
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise InvalidInput(f"{field} is not {what}: {describe(error, field)}") from None
    except RecursionError:
        raise InvalidInput(f"{field} is nested too deeply; give a flatter object.") from None


# --- one check per tool argument that needs more than its type -------------------------------------


def check_suggested_plan(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    check_json("suggested_plan", value, max_depth=MAX_PLAN_DEPTH, max_chars=MAX_PLAN_JSON_CHARS)
    nodes = len(parse(PlannerOutput, value, "suggested_plan", "a valid plan tree").root.walk())
    if nodes > MAX_PLAN_NODES:
        raise InvalidInput(f"suggested_plan has {nodes} nodes; give at most {MAX_PLAN_NODES}.")
    return value


def check_task_spec(value: dict[str, Any] | None) -> ExtractorTaskSpec | None:
    if value is None:
        return None
    check_json("task_spec", value, max_depth=MAX_SPEC_DEPTH, max_chars=MAX_SPEC_JSON_CHARS)
    return parse(ExtractorTaskSpec, value, "task_spec", "a valid extractor task spec")


def check_plan_ids(plan_id: str | None, plan_ids: list[str] | None) -> list[str]:
    """The plans to run, from plan_ids and plan_id (an empty plan_id counts as none)."""
    given = [("plan_ids", one) for one in plan_ids or []] + ([("plan_id", plan_id)] if plan_id else [])
    if len(given) > MAX_PLAN_IDS:
        raise InvalidInput(f"plan_ids has {len(given)} plans; give at most {MAX_PLAN_IDS} for one run.")
    as_run = {"run": "pass it as run_id to wait on, resume or cancel that run"}
    return [check_id(field, one, ("plan",), wrong=as_run) for field, one in given]


def check_run_id(value: str | None) -> str | None:
    as_plan = {"plan": "pass it as plan_id to start a run of that plan"}
    return None if value is None else check_id("run_id", value, ("run",), wrong=as_plan)


def check_report_id(value: str) -> str:
    elsewhere = "report_results reads runs, plans and handoffs; a run's sources are in its view='sources'"
    wrong = {"source": elsewhere, "corpus document": elsewhere}
    return check_id("id", value, ("run", "plan", "handoff"), wrong=wrong)

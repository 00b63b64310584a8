"""What a refused tool argument says: its validator's refusal (`Refused`), and a validation error worded
as one line per problem: where, what is wrong, what was given (never the value whole)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from research_mcp.core.errors import shown
from research_mcp.server.nested_arguments import PLAN_SHAPE

__all__ = ["Refused", "describe", "describe_problems"]


class Refused(ValueError):
    """An argument refused by its validator. `message` follows the argument's name, unless `whole`
    (the message names the place itself, e.g. a string deep inside suggested_plan)."""

    def __init__(self, message: str, *, whole: bool = False) -> None:
        super().__init__(message)
        self.whole = whole


def describe(error: ValidationError, field: str = "", *, limit: int = 3) -> str:
    """A pydantic validation error as one line per problem: where, what is wrong, what was given."""
    return describe_problems(error.errors(include_url=False), field, limit=limit)


def describe_problems(errors: list[ErrorDetails], field: str = "", *, limit: int = 3) -> str:
    """Validation problems as `describe` words them."""
    problems = []
    for item in errors[:limit]:
        where = field
        for part in item["loc"]:
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
        where = where or "the value"
        refused = (item.get("ctx") or {}).get("error")
        if isinstance(refused, Refused):
            problems.append(str(refused) if refused.whole else f"{where} {refused}")
            continue
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field; leave it out"
        elif item["type"] == "missing":
            message = "required; give it"
        elif item["type"] == PLAN_SHAPE:  # a sentence that follows the place it names
            problems.append(f"{where} {message}")
            continue
        else:
            message += f" (got {_given(item['input'])})"
        problems.append(f"{where}: {message}")
    more = len(errors) - limit
    return "; ".join(problems).removesuffix(".") + (f"; and {more} more" if more > 0 else "") + "."


def _given(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, str) and len(value) > 40:
        return f"a text of {len(value):,} characters"
    return shown(value, 40)

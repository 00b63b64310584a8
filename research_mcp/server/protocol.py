"""Protocol errors the SDK leaves to the server: an unknown tool, and a cursor for a list that is
never paged, are invalid params (-32602); and no error, protocol or tool, echoes more than 80
characters of anything the request gave."""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from mcp_types import INVALID_PARAMS

from research_mcp.core.errors import ECHO_LIMIT, bounded, clipped, shown, without_echoes

__all__ = ["UNPAGED_LISTS", "BoundedEchoes", "UnknownTools", "UnpagedLists"]

#: Strings of a request looked for in its error (the longest ones, where a request has many).
MAX_GIVEN = 64

UNPAGED_LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


class BoundedEchoes:
    """Server middleware, outermost: an error answer (a protocol error's message and data, a tool's
    isError text) quotes at most ECHO_LIMIT characters of each string the request gave, however deep
    the layer that wrote it (a refused address, a path too long, an unknown resource), and is at most
    MESSAGE_LIMIT characters long. Results that are no error pass untouched."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            result = await call_next(ctx)
        except MCPError as error:
            given = _given(ctx.params)
            data = _bounded_data(error.data, given)
            raise MCPError(code=error.code, message=bounded(error.message, given), data=data) from None
        if isinstance(result, CallToolResult) and result.is_error:
            given = _given(ctx.params)
            for item in result.content:
                if isinstance(item, TextContent):
                    item.text = bounded(item.text, given)
        elif isinstance(result, dict) and result.get("isError") is True:  # as the SDK hands it on
            given = _given(ctx.params)
            for item in result.get("content") or []:
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    item["text"] = bounded(item["text"], given)
        return result


def _given(params: Any) -> list[str]:
    """The strings of a request's params longer than an echo may be, longest first."""
    found: list[str] = []
    stack, seen = [params], 0
    while stack and seen < 10_000:
        value, seen = stack.pop(), seen + 1
        if isinstance(value, str) and len(value) > ECHO_LIMIT:
            found.append(value)
        elif isinstance(value, dict):
            stack.extend([*value.keys(), *value.values()])
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return sorted(found, key=len, reverse=True)[:MAX_GIVEN]


def _bounded_data(data: Any, given: list[str]) -> Any:
    """An error's data without echoes of the request longer than ECHO_LIMIT (the SDK puts a resource's
    whole address there)."""
    if isinstance(data, str):
        return without_echoes(data, given)
    if isinstance(data, dict):
        return {key: _bounded_data(value, given) for key, value in data.items()}
    if isinstance(data, list):
        return [_bounded_data(value, given) for value in data]
    return data


class UnknownTools:
    """Server middleware: `tools/call` of a tool this server does not have is invalid params (-32602),
    a protocol error as the tools pages of 2025-06-18 and later list it, not an isError result."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if not isinstance(name, str) or name not in self.names:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"Unknown tool {shown(name)}: the tools are {', '.join(self.names)}.",
                    data={"name": clipped(name) if isinstance(name, str) else name},
                )
        return await call_next(ctx)


class UnpagedLists:
    """Server middleware: these lists fit in one page, so no `nextCursor` is ever given and any
    cursor sent back is one this server did not give (the spec: invalid params, -32602), rather
    than silently ignored."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method in UNPAGED_LISTS:
            cursor = (ctx.params or {}).get("cursor")
            if cursor is not None:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"Invalid cursor {shown(cursor)}: this list has one page; list again without a cursor.",
                )
        return await call_next(ctx)

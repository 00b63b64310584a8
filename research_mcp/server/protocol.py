"""Protocol errors the SDK leaves to the server: an unknown tool, and a cursor for a list that is
never paged, are invalid params (-32602)."""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from research_mcp.errors import shown

__all__ = ["UNPAGED_LISTS", "UnknownTools", "UnpagedLists"]

UNPAGED_LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


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
                    data={"name": name},
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

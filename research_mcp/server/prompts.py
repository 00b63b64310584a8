"""The `research` prompt: how the host acts as the manager of the research team."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from research_mcp.core.errors import shown
from research_mcp.roles.base import load_prompt

__all__ = ["PROMPTS", "UnknownPrompts", "register_prompts"]

PROMPTS = ("research",)


def register_prompts(server: MCPServer[Any]) -> None:
    @server.prompt(name="research", description="Act as the manager of a research team for a question.")
    def research(question: str = "") -> str:
        text = load_prompt("manager")
        return text + (f"\n\nThe user's question: {question}" if question else "")


class UnknownPrompts:
    """Server middleware: `prompts/get` of a prompt this server does not have is invalid params
    (-32602) on every protocol version, not an internal error logged with a traceback."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "prompts/get":
            name = (ctx.params or {}).get("name")
            if isinstance(name, str) and name not in PROMPTS:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"Unknown prompt {shown(name)}: the prompts are {', '.join(PROMPTS)}.",
                )
        return await call_next(ctx)

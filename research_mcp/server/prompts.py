"""The `research` prompt: how the host acts as the manager of the research team."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from research_mcp.roles.base import load_prompt

__all__ = ["register_prompts"]


def register_prompts(server: MCPServer[Any]) -> None:
    @server.prompt(name="research", description="Act as the manager of a research team for a question.")
    def research(question: str = "") -> str:
        text = load_prompt("manager")
        return text + (f"\n\nThe user's question: {question}" if question else "")

"""What every request handler is handed: the service, and the model backend chooser that needs the
client's capabilities (so the tool layer picks the backend and the service never sees `ctx`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context

from research_mcp.llm.base import ModelBackend
from research_mcp.service import ResearchService

__all__ = ["ServerState", "ToolContext"]


@dataclass(frozen=True)
class ServerState:
    """Built once in the server's lifespan."""

    service: ResearchService
    # The backend for one request: RESEARCH_MCP_MODEL, the API key, and whether this client can sample.
    choose_model: Callable[[Context[Any]], ModelBackend]
    # Run id -> the streamable HTTP session that started it as a task: only that session sees it.
    task_owners: dict[str, str] = field(default_factory=dict)

    def model_for(self, ctx: Context[Any]) -> ModelBackend:
        return self.choose_model(ctx)


ToolContext = Context[ServerState]

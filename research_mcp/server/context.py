"""What every request handler is handed: the service, and the model backend chooser that needs the
client's capabilities (so the tool layer picks the backend and the service never sees `ctx`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.mcpserver import Context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from research_mcp.core.callers import user as user_caller
from research_mcp.llm.base import ModelBackend
from research_mcp.service import ResearchService

__all__ = ["ServerState", "ToolContext", "caller_of"]


@dataclass(frozen=True)
class ServerState:
    """Built once in the server's lifespan."""

    service: ResearchService
    # The backend for one request: RESEARCH_MCP_MODEL, the API key, and whether this client can sample.
    choose_model: Callable[[Context[Any]], ModelBackend]

    def model_for(self, ctx: Context[Any]) -> ModelBackend:
        return self.choose_model(ctx)


ToolContext = Context[ServerState]


def caller_of(request_context: Any) -> str | None:
    """Who is asking (research_mcp/core/callers.py): the user a bearer token names (`user:<name>`), else
    the streamable HTTP session (`session:<id>`), else `anonymous` over HTTP; None over stdio and in
    memory, where one host holds the connection."""
    request = getattr(request_context, "request", None)
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return None
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return user_caller(user.access_token.client_id)
    headers = getattr(request, "headers", None)
    session = headers.get(MCP_SESSION_ID_HEADER) if headers is not None else None
    return f"session:{session}" if session else "anonymous"

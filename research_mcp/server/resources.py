"""Resources: a run's report as Markdown, any handoff as JSON, and the corpus index's state."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from research_mcp.core.errors import NotFound, ResearchError
from research_mcp.core.printable import printable
from research_mcp.server.context import ToolContext, caller_of
from research_mcp.server.tools import shown_to_host
from research_mcp.service import ResearchService

__all__ = ["register_resources"]


def register_resources(server: MCPServer[Any], running: Callable[[], ResearchService | None]) -> None:
    """``running`` gives the service of the server while it runs (static resources get no context)."""

    @server.resource("research://runs/{run_id}/report.md", mime_type="text/markdown")
    def run_report(run_id: str, ctx: ToolContext) -> str:
        """The finished report of a run, with sources and confidence."""
        service = ctx.request_context.lifespan_context.service
        try:
            return printable(service.report_markdown(run_id, caller_of(ctx.request_context)))
        except NotFound as error:
            raise ResourceNotFoundError(str(error)) from error
        except ResearchError as error:
            raise ResourceError(str(error)) from error

    @server.resource("research://handoffs/{handoff_id}", mime_type="application/json")
    def handoff(handoff_id: str, ctx: ToolContext) -> str:
        """A role's full output as stored."""
        service = ctx.request_context.lifespan_context.service
        try:
            # What a document wrote reaches the host as text, as in tool results: no ESC, BEL or
            # character that hides or reorders text, even JSON-escaped.
            handoff = service.handoff(handoff_id, caller_of(ctx.request_context))
            return json.dumps(shown_to_host(handoff.model_dump(mode="json")), indent=1)
        except NotFound as error:
            raise ResourceNotFoundError(str(error)) from error

    @server.resource("research://corpus/status", mime_type="application/json")
    def corpus_status() -> str:
        """How far indexing of the local corpus (RESEARCH_MCP_CORPUS) has got."""
        service = running()
        if service is None:
            raise ResourceError("the server is starting or stopping; read this again in a moment")
        status = service.corpus_status()
        if status is None:
            return json.dumps(
                {"phase": "not_configured", "line": "corpus: not configured (set RESEARCH_MCP_CORPUS)"}
            )
        return json.dumps(shown_to_host({**dataclasses.asdict(status), "line": status.line()}), indent=1)

"""Resources: a run's report as Markdown and any handoff as JSON."""

from __future__ import annotations

import json
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from research_mcp.errors import NotFound, ResearchError
from research_mcp.reports import assemble_result
from research_mcp.service import ResearchService

__all__ = ["register_resources", "report_markdown"]


def report_markdown(service: ResearchService, run_id: str) -> str:
    result = assemble_result(service.store, run_id)
    lines = [
        result.findings,
        "",
        f"**Confidence:** {result.confidence.level} — {result.confidence.reasoning}",
        "",
    ]
    if result.gaps:
        lines += ["## Gaps", *[f"- {gap}" for gap in result.gaps], ""]
    lines += [
        "## Sources",
        *[f"- {s.id} [{s.title or s.url_or_path}]({s.url_or_path})" for s in result.sources],
    ]
    meta = result.metadata
    lines += [
        "",
        f"_{meta.citations_verified}/{meta.citations_made} citations verified; {meta.backend} backend_",
    ]
    return "\n".join(lines)


def register_resources(server: MCPServer[Any]) -> None:
    @server.resource("research://runs/{run_id}/report.md", mime_type="text/markdown")
    def run_report(run_id: str) -> str:
        """The finished report of a run, with sources and confidence."""
        service: ResearchService = server.get_context().request_context.lifespan_context
        try:
            return report_markdown(service, run_id)
        except NotFound as error:
            raise ResourceNotFoundError(str(error)) from error
        except ResearchError as error:
            raise ResourceError(str(error)) from error

    @server.resource("research://handoffs/{handoff_id}", mime_type="application/json")
    def handoff(handoff_id: str) -> str:
        """A role's full output as stored."""
        service: ResearchService = server.get_context().request_context.lifespan_context
        try:
            return json.dumps(service.store.get_handoff(handoff_id).model_dump(mode="json"), indent=1)
        except NotFound as error:
            raise ResourceNotFoundError(str(error)) from error

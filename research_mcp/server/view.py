"""The MCP Apps view of runs and reports (extension `io.modelcontextprotocol/ui`).

`execute_plan` and `report_results` name the view in `_meta.ui.resourceUri`; a host that renders Apps
shows `ui://research-mcp/run.html` (one self-contained document, built from web/view) in a sandboxed
iframe. The view reads the run through `run_view`, a tool visible to the app only: it returns the
run's whole snapshot, which never enters the model's context.

A client that did not negotiate Apps gets exactly the tools and resources it got before: neither the
view's tool, nor its resource, nor the `_meta.ui` links are listed to it.
"""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Any

from mcp.server.apps import Apps, ResourceCsp, client_supports_apps
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from research_mcp.core.printable import printable
from research_mcp.run_document import RunView
from research_mcp.server import inputs
from research_mcp.server.context import ToolContext, caller_of
from research_mcp.server.tools import READS, _service, checked_tool, research_errors, shown_to_host

__all__ = ["VIEW_TOOL", "VIEW_URI", "AppsOnly", "build_apps", "link_view", "view_tool"]

VIEW_URI = "ui://research-mcp/run.html"
VIEW_TOOL = "run_view"
VIEWED_BY = ("execute_plan", "report_results")


def view_html() -> str:
    return resources.files("research_mcp.server").joinpath("view/run.html").read_text(encoding="utf-8")


@research_errors
async def run_view(
    run_id: Annotated[inputs.RunId, Field(description="The run to show.")], ctx: ToolContext
) -> Annotated[CallToolResult, RunView]:
    """The run's plan tree with node states, totals, and once ended its report, facts and sources."""
    snapshot = _service(ctx).run_view(run_id, caller_of(ctx.request_context))
    run, totals = snapshot.run, snapshot.totals
    text = (
        f"run {run.id} {run.status}: {totals.nodes_done}/{totals.nodes_total} nodes, "
        f"{totals.sources} sources, {totals.facts_verified}/{totals.facts} facts verified"
    )
    return CallToolResult(
        content=[TextContent(type="text", text=printable(text))],
        structured_content=shown_to_host(snapshot.model_dump(mode="json")),
    )


def view_tool() -> Tool:
    """The view's tool, visible to the app only; checked and published as the five tools are (the
    Apps extension's own registration would leave its schemas as pydantic writes them)."""
    tool = checked_tool(run_view, "Run view", READS)
    tool.meta = {"ui": {"resourceUri": VIEW_URI, "visibility": ["app"]}}
    return tool


def build_apps() -> Apps:
    """The Apps extension: the view's resource (no outside domains in its CSP)."""
    apps = Apps()
    apps.add_html_resource(
        VIEW_URI,
        view_html(),
        name="run view",
        description="A research run: plan tree, progress, then the report with its citations.",
        csp=ResourceCsp(connect_domains=[], resource_domains=[]),
        prefers_border=True,
    )
    return apps


def link_view(tools: list[Tool]) -> list[Tool]:
    """Name the view on the tools whose results it shows."""
    for tool in tools:
        if tool.name in VIEWED_BY:
            tool.meta = {**(tool.meta or {}), "ui": {"resourceUri": VIEW_URI}}
    return tools


class AppsOnly:
    """Server middleware: to a client without Apps, list the tools and resources it had before the view
    existed (no `run_view`, no `ui://` resource, no `_meta.ui`)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in ("tools/list", "resources/list") or not isinstance(result, dict):
            return result
        if client_supports_apps(ctx):
            return result
        if ctx.method == "tools/list":
            tools = [_without_ui(tool) for tool in result.get("tools", []) if tool.get("name") != VIEW_TOOL]
            return {**result, "tools": tools}
        kept = [r for r in result.get("resources", []) if not str(r.get("uri", "")).startswith("ui://")]
        return {**result, "resources": kept}


def _without_ui(tool: dict[str, Any]) -> dict[str, Any]:
    meta = tool.get("_meta")
    if not isinstance(meta, dict) or "ui" not in meta:
        return tool
    rest = {key: value for key, value in meta.items() if key != "ui"}
    return {key: value for key, value in tool.items() if key != "_meta"} | ({"_meta": rest} if rest else {})

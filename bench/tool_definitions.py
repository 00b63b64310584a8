"""Tool definitions: the bytes of the tools as `tools/list` returns them.

Two figures per tool:

- model-visible: what a host puts in its model's context on every turn, the tool's name, title,
  description and input schema (each value as compact JSON, summed); at most 4,096 B for the five
  tools (issue 26's measure). The output schema is not among them: hosts validate results with it
  and do not send it to the model.
- full definition: the whole definition as compact JSON (`model_dump(mode="json", by_alias=True,
  exclude_none=True)`, no spaces), output schema, annotations and `_meta` included.

Listed over the protocol versions a client may negotiate: 2025-11-25 (the `initialize` handshake
Claude hosts use; it adds `execution` to execute_plan), 2026-07-28, and 2026-07-28 with MCP Apps
(which adds `run_view`, a tool visible to the app only: a host never gives it to the model, so it is
printed but left out of the model-visible total).

Run alone: .venv/bin/python -m bench.tool_definitions
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client import advertise

from bench.scenarios import TimedScript, bench_settings
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.server.app import create_server

LIMIT = 4096
MODEL_VISIBLE = ("name", "title", "description", "inputSchema")
APPS = "io.modelcontextprotocol/ui"
APPS_SETTINGS = {"mimeTypes": ["text/html;profile=mcp-app"]}
CLIENTS: dict[str, dict[str, Any]] = {
    "2025-11-25": {"mode": "legacy"},
    "2026-07-28": {"mode": "2026-07-28"},
    "2026-07-28 + Apps": {"mode": "2026-07-28", "extensions": [advertise(APPS, APPS_SETTINGS)]},
}


def compact_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def model_visible_bytes(tool: dict[str, Any]) -> int:
    """Name, title, description and input schema of one tool definition, as compact JSON."""
    return sum(compact_bytes(tool[part]) for part in MODEL_VISIBLE if part in tool)


def for_the_model(tool: dict[str, Any]) -> bool:
    """Whether a host gives the tool to its model (an app-only tool it does not)."""
    visibility = tool.get("_meta", {}).get("ui", {}).get("visibility", ["model", "app"])
    return "model" in visibility


async def definitions(**options: Any) -> list[dict[str, Any]]:
    """The tool definitions as a client made with `options` lists them."""
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        server = create_server(bench_settings(Path(tmp)), model=ScriptedModel(TimedScript()))
        async with Client(server, **options) as client:
            tools = (await client.list_tools()).tools
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


async def run() -> dict[str, int]:
    print("== Tool definitions (tools/list, compact JSON): model-visible and full bytes per tool ==")
    totals = {}
    for client, options in CLIENTS.items():
        tools = await definitions(**options)
        print(f"-- protocol {client}")
        print(f"{'tool':<15} {'model-visible':>13} {'full':>6} {'inputSchema':>12} {'outputSchema':>13}")
        for tool in tools:
            app_only = "" if for_the_model(tool) else "  (app only: not in the model's context)"
            print(
                f"{tool['name']:<15} {model_visible_bytes(tool):>13,} {compact_bytes(tool):>6,} "
                f"{compact_bytes(tool['inputSchema']):>12,} {compact_bytes(tool.get('outputSchema')):>13,}"
                + app_only
            )
        visible = sum(model_visible_bytes(tool) for tool in tools if for_the_model(tool))
        full = sum(compact_bytes(tool) for tool in tools)
        verdict = "met" if visible <= LIMIT else "MISSED"
        print(f"model-visible, tools for the model: {visible:,} B (goal <= {LIMIT:,} B: {verdict})")
        print(f"full definitions, all listed: {full:,} B")
        totals[client] = visible
    return totals


if __name__ == "__main__":
    anyio.run(run)

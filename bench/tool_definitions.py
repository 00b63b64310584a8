"""Tool definitions: the bytes of the five tools as `tools/list` returns them, which a host keeps in
its model's context on every turn (the design asks at most 4,096 B for all five).

Each definition is serialised as compact JSON (`model_dump(mode="json", by_alias=True,
exclude_none=True)`, no spaces), as tests/server/test_stdio.py measures them. Printed per tool and
per part (description, input schema, output schema...), over both protocol versions a client may
negotiate: 2025-11-25 (the `initialize` handshake Claude hosts use; it adds `execution` to
execute_plan) and 2026-07-28.

Run alone: .venv/bin/python -m bench.tool_definitions
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.scenarios import TimedScript, bench_settings
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.server.app import create_server

LIMIT = 4096
MODES = {"2025-11-25": "legacy", "2026-07-28": "2026-07-28"}


def compact_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


async def definitions(mode: str) -> list[dict[str, Any]]:
    """The five tool definitions as a client of `mode` lists them."""
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        server = create_server(bench_settings(Path(tmp)), model=ScriptedModel(TimedScript()))
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            tools = (await client.list_tools()).tools
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


async def run() -> dict[str, int]:
    print("== Tool definitions: tools/list as compact JSON, in the host's context every turn ==")
    totals = {}
    for version, mode in MODES.items():
        tools = await definitions(mode)
        parts = sorted({part for tool in tools for part in tool})
        print(f"-- protocol {version}")
        print(f"{'tool':<15} {'total':>6} " + " ".join(f"{part:>12}" for part in parts))
        for tool in tools:
            sizes = " ".join(f"{compact_bytes(tool[part]) if part in tool else '-':>12}" for part in parts)
            print(f"{tool['name']:<15} {compact_bytes(tool):>6} {sizes}")
        totals[version] = sum(compact_bytes(tool) for tool in tools)
        verdict = "met" if totals[version] <= LIMIT else "MISSED"
        print(f"all five: {totals[version]:,} B (goal <= {LIMIT:,} B: {verdict})")
    return totals


if __name__ == "__main__":
    anyio.run(run)

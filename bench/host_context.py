"""Host context: the bytes that reach the host against the bytes stored and the naive design.

For each size (1 leaf, 10 nodes, 50 nodes) a host drives a complete run through a real MCP client,
in memory, against `create_server(model=<scripted>)`: plan_research (with the tree as a suggested
plan) → execute_plan (polled with run_id until done) → report_results with the default view.

- host bytes: every tool result as the client receives it, serialised as JSON (content text and
  structuredContent both: hosts may show either, so both are counted);
- compact bytes: the structuredContent JSON alone, the figure the 1,000-byte rule is about (README);
- stored: every handoff of the plan and the run (input, full output and summary as stored);
- naive: what a host would receive if each role's output were returned whole (every handoff's
  output, as stored).

Run alone: .venv/bin/python -m bench.host_context
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.scenarios import SHAPES, SOURCES_PER_LEAF, TimedScript, bench_settings, plan_tree, seed_sources
from bench.tool_definitions import compact_bytes, definitions
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store

SIZES = ("1 leaf", "10 nodes", "50 nodes")
COMPACT_LIMIT = 1000


@dataclass
class ToolResult:
    tool: str
    full_bytes: int
    compact_bytes: int


@dataclass
class HostFigures:
    size: str
    nodes: int
    handoffs: int
    results: list[ToolResult]
    stored_bytes: int
    naive_bytes: int
    facts_bytes: int
    source_bytes: int

    @property
    def host_bytes(self) -> int:
        return sum(r.full_bytes for r in self.results)

    @property
    def largest_non_report(self) -> int:
        return max(r.compact_bytes for r in self.results if r.tool != "report_results")


def _sizes(result: Any) -> tuple[int, int]:
    full = json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    compact = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return len(full.encode()), len(compact.encode())


async def _call(client: Client, results: list[ToolResult], tool: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    full, compact = _sizes(result)
    results.append(ToolResult(tool, full, compact))
    return result.structured_content


def _stored(store: Store, run_id: str, planner_handoff: str) -> tuple[int, int, int, int, int]:
    def one(sql: str) -> int:
        return int(store.db.execute(sql, [run_id, planner_handoff]).fetchone()[0] or 0)

    where = "FROM handoffs WHERE run_id = ? OR id = ?"
    stored = one(
        "SELECT SUM(LENGTH(CAST(input AS BLOB)) + COALESCE(LENGTH(CAST(output AS BLOB)), 0)"
        f" + LENGTH(CAST(summary AS BLOB))) {where}"
    )
    naive = one(f"SELECT SUM(COALESCE(LENGTH(CAST(output AS BLOB)), 0)) {where}")
    count = one(f"SELECT COUNT(*) {where}")
    facts = int(
        store.db.execute(
            "SELECT SUM(LENGTH(CAST(statement AS BLOB)) + LENGTH(CAST(quote AS BLOB))) FROM facts WHERE run_id = ?",
            [run_id],
        ).fetchone()[0]
        or 0
    )
    sources = int(store.db.execute("SELECT SUM(LENGTH(CAST(text AS BLOB))) FROM sources").fetchone()[0] or 0)
    return stored, naive, count, facts, sources


async def measure(size: str) -> HostFigures:
    shape = SHAPES[size]
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        settings = bench_settings(Path(tmp), concurrency=4)
        store = Store(settings.database_path)
        refs = seed_sources(store, shape.leaves * SOURCES_PER_LEAF)
        store.close()
        server = create_server(settings, model=ScriptedModel(TimedScript()))
        results: list[ToolResult] = []
        async with Client(server) as client:
            plan = await _call(
                client,
                results,
                "plan_research",
                {"query": f"What drives regional output? ({size})", "suggested_plan": plan_tree(shape, refs)},
            )
            run = await _call(client, results, "execute_plan", {"plan_id": plan["id"], "wait_seconds": 55})
            while run["status"] == "running":
                run = await _call(client, results, "execute_plan", {"run_id": run["id"], "wait_seconds": 55})
            if run["status"] != "done":
                raise RuntimeError(f"run ended {run['status']}: {run['summary']}")
            await _call(client, results, "report_results", {"id": run["id"]})
        store = Store(settings.database_path)
        try:
            planner_handoff = store.get_plan(plan["id"]).handoff_id or ""
            stored, naive, count, facts, sources = _stored(store, run["id"], planner_handoff)
        finally:
            store.close()
    return HostFigures(size, shape.nodes, count, results, stored, naive, facts, sources)


async def tool_definitions_bytes() -> int:
    """Bytes of the five tool definitions as tools/list returns them (in the host's context every turn);
    per tool and part: `python -m bench.tool_definitions`."""
    return sum(compact_bytes(tool) for tool in await definitions("2026-07-28"))


def kb(n: int) -> str:
    return f"{n / 1000:,.1f} KB"


async def run() -> list[HostFigures]:
    print("== Host context: bytes reaching the host vs stored vs naive (in-memory MCP client) ==")
    figures = [await measure(size) for size in SIZES]
    print(
        f"{'size':<9} {'handoffs':>8} {'results':>7} {'host':>9} {'stored':>10} {'naive':>10}"
        f" {'host/stored':>11} {'host/naive':>10} {'max compact':>11}"
    )
    for f in figures:
        print(
            f"{f.size:<9} {f.handoffs:>8} {len(f.results):>7} {kb(f.host_bytes):>9} {kb(f.stored_bytes):>10}"
            f" {kb(f.naive_bytes):>10} {f.host_bytes / f.stored_bytes:>11.2%} {f.host_bytes / f.naive_bytes:>10.2%}"
            f" {f.largest_non_report:>9} B"
        )
    print("per result, bytes as the client receives them (full JSON / structuredContent alone):")
    for f in figures:
        parts = ", ".join(f"{r.tool} {r.full_bytes}/{r.compact_bytes}" for r in f.results)
        print(f"  {f.size}: {parts}")
    print("also stored, outside handoffs: facts (statement + quote) and source texts:")
    for f in figures:
        print(f"  {f.size}: facts {kb(f.facts_bytes)}, sources {kb(f.source_bytes)}")
    ok_compact = all(f.largest_non_report <= COMPACT_LIMIT for f in figures)
    print(
        "goal host < 1% of stored: "
        + ", ".join(
            f"{f.size} {'met' if f.host_bytes / f.stored_bytes < 0.01 else 'MISSED'}" for f in figures
        )
    )
    fixed = max(f.host_bytes for f in figures)
    print(
        f"host bytes stay about {kb(fixed)} whatever the size, so they are under 1% of what is stored once a run "
        f"stores more than {kb(fixed * 100)}"
    )
    largest_full = max(r.full_bytes for f in figures for r in f.results if r.tool != "report_results")
    print(
        f"goal every non-report result <= {COMPACT_LIMIT} B, whole result as the client receives it: "
        + ("met" if largest_full <= COMPACT_LIMIT else "MISSED")
        + f" (largest {largest_full} B; structuredContent alone: largest "
        f"{max(f.largest_non_report for f in figures)} B, " + ("met" if ok_compact else "MISSED") + ")"
    )
    print(f"tool definitions (tools/list, in context every turn): {await tool_definitions_bytes()} B")
    print()
    return figures


if __name__ == "__main__":
    anyio.run(run)

"""Parallel load: 100 concurrent tool calls from several clients against one server.

One server process: `create_server` with a zero-latency scripted model, served over streamable
HTTP on a loopback port by uvicorn (this module with --serve), so that every client talks to the
same lifespan: one store connection, one knowledge base, one run manager. (Several in-memory
clients would each enter the server's lifespan, and stdio is one process per client: neither is
one server.) The store is filled first with 3 finished runs (bench.store_protocol) and the sources
that extract_source and plan_research name, and the facts index put in step with it (otherwise
the server's healer would embed those runs' facts during the measurement).

CLIENTS MCP clients in this process each send CALLS_PER_CLIENT calls at once, so 100 calls are in
flight together: report_results on finished runs (views summary, report, sources, facts, tree),
execute_plan polling finished runs, plan_research with a 10-node suggested plan, and extract_source
on a 12,000-character stored source. The model answers at once, so the figures are the server's
own capacity on this machine. Throughput is calls / wall time from the first send to the last answer.

Run alone: .venv/bin/python -m bench.parallel_load
"""

from __future__ import annotations

import argparse
import logging
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.scenarios import (
    SHAPES,
    SOURCES_PER_LEAF,
    bench_settings,
    median,
    percentile,
    plan_tree,
    realistic_script,
    seed_sources,
)
from bench.store_protocol import WriteClock, index_in_step, populate_run
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store

CLIENTS = 5
CALLS_PER_CLIENT = 20
VIEWS = ("summary", "report", "sources", "facts", "tree")


def serve(port: int, home: Path) -> None:
    import uvicorn

    server = create_server(bench_settings(home), model=ScriptedModel(realistic_script))
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    with anyio.fail_after(seconds):
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}")
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.1)
                continue
            await stream.aclose()
            return


def workload(
    run_ids: list[str], refs: list[str], plan_refs: list[str]
) -> list[list[tuple[str, dict[str, Any]]]]:
    """Per client, its calls: 10 report_results, 4 execute_plan polls, 3 plan_research, 3 extract_source."""
    plan = plan_tree(SHAPES["10 nodes"], plan_refs)
    extracts = iter(refs)
    per_client = []
    for c in range(CLIENTS):
        calls: list[tuple[str, dict[str, Any]]] = []
        for i in range(10):
            calls.append(
                ("report_results", {"id": run_ids[(c + i) % len(run_ids)], "view": VIEWS[i % len(VIEWS)]})
            )
        for i in range(4):
            calls.append(("execute_plan", {"run_id": run_ids[(c + i) % len(run_ids)], "wait_seconds": 0}))
        for i in range(3):
            calls.append(
                (
                    "plan_research",
                    {"query": f"What drives output? client {c} call {i}", "suggested_plan": plan},
                )
            )
        for _ in range(3):
            calls.append(
                (
                    "extract_source",
                    {"source": next(extracts), "questions": ["What is reported about output?", "How large?"]},
                )
            )
        assert len(calls) == CALLS_PER_CLIENT
        per_client.append(calls)
    return per_client


async def load(
    url: str, per_client: list[list[tuple[str, dict[str, Any]]]]
) -> tuple[float, list[tuple[str, float, bool]]]:
    results: list[tuple[str, float, bool]] = []
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(Client(url)) for _ in per_client]
        for client in clients:
            await client.list_tools()

        async def call(client: Client, tool: str, args: dict[str, Any]) -> None:
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, args)
                failed = bool(result.is_error)
            except Exception:  # a failed call is counted as an error of that call, not of the benchmark
                failed = True
            results.append((tool, (time.perf_counter() - started) * 1000, failed))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for client, calls in zip(clients, per_client, strict=True):
                for tool, args in calls:
                    group.start_soon(call, client, tool, args)
        wall = time.perf_counter() - started
    return wall, results


async def run() -> None:
    for name in ("httpx", "httpx2"):  # one INFO line per request otherwise (MCPServer sets up logging)
        logging.getLogger(name).setLevel(logging.WARNING)
    print(
        f"== Parallel load: {CLIENTS * CALLS_PER_CLIENT} concurrent tool calls, {CLIENTS} clients, one server =="
    )
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        home = Path(tmp)
        store = Store(bench_settings(home).database_path)
        plan_refs = seed_sources(store, SHAPES["50 nodes"].leaves * SOURCES_PER_LEAF)
        run_ids = [populate_run(store, plan_refs, WriteClock()) for _ in range(3)]
        warm_ref, *refs = seed_sources(store, 1 + CLIENTS * 3, start=10_000)
        index_in_step(bench_settings(home), store)  # as the runs that wrote these facts would have
        store.close()
        port = free_port()
        log = open(home / "server.log", "wb")  # noqa: SIM115 - closed below, after the process
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.parallel_load", "--serve", str(port), str(home)],
            stdout=log,
            stderr=log,
            cwd=Path(__file__).resolve().parents[1],
        )
        try:
            await wait_for_port(port, process)
            url = f"http://127.0.0.1:{port}/mcp"
            async with Client(url) as client:  # the knowledge base loads its embedder on first use
                await client.call_tool(
                    "extract_source", {"source": warm_ref, "questions": ["What is reported?"]}
                )
            wall, results = await load(url, workload(run_ids, refs, plan_refs[:18]))
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()
    times = [ms for _, ms, _ in results]
    errors = sum(1 for _, _, failed in results if failed)
    print(
        f"{len(results)} calls in {wall:.2f} s: {len(results) / wall:.1f} calls/s; "
        f"latency median {median(times):.0f} ms, p99 {percentile(times, 99):.0f} ms; errors {errors}"
    )
    counts = Counter(tool for tool, _, _ in results)
    for tool in counts:
        mine = [ms for name, ms, _ in results if name == tool]
        print(
            f"  {tool:<15} n={counts[tool]:<3} median {median(mine):6.0f} ms   p99 {percentile(mine, 99):6.0f} ms"
        )
    print(f"goal zero errors: {'met' if errors == 0 else 'MISSED'}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "HOME"))
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]))
    else:
        anyio.run(run)


if __name__ == "__main__":
    main()

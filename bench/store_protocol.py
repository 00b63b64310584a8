"""Store and protocol: handoff writes and reads per second, and report_results round trips.

The store is filled through `Store`'s own methods (what the roles call), under a temporary
RESEARCH_MCP_HOME, with complete finished runs of the 50-node tree: plan, nodes, one handoff per
model call with the scripted model's realistic outputs (bench/scenarios.py), 8 facts per extraction
with their citations, model calls, and the run's result. 62 runs give 10,044 handoffs. The facts
index is then put in step with the store (one point per fact, with a constant vector: no embedding
is timed here), as it is on a server whose runs wrote those facts; otherwise the server's healer
would spend the measured round trips embedding 55,000 facts in the background.

- handoff writes/s: the time spent in `start_handoff` + `finish_handoff` (two committed
  transactions: a handoff is durable before anyone gets its id), one handoff after another;
- handoff reads/s: `get_handoff` of random handoffs (SQL, JSON and validation);
- report_results and execute_plan (polling a finished run) round trips, median and p99, on random
  runs: in memory (a real MCP client in the same process) and over stdio (the installed
  `research-mcp serve` in a child process), with the 10,044-handoff store, and in memory with a store
  holding one run (162 handoffs) to show what the store's size costs.

Run alone: .venv/bin/python -m bench.store_protocol
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench.scenarios import (
    SHAPES,
    SOURCES_PER_LEAF,
    bench_settings,
    median,
    percentile,
    realistic_script,
    save_plan,
    seed_sources,
)
from research_mcp.core.contracts import Fact, PlannerOutput, PlanNode
from research_mcp.core.role_inputs import (
    ChildReport,
    ExtractorPayload,
    SynthesisInput,
    SynthesisPayload,
)
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.runs.context import node_key, plan_nodes
from research_mcp.server.app import create_server
from research_mcp.storage.outputs import StoredSynthesis, stored_output
from research_mcp.storage.store import Store, now

RUNS = 62
CALLS = 200
READS = 5_000
SCRIPT = Path(sys.executable).with_name("research-mcp")


@dataclass
class WriteClock:
    seconds: float = 0.0
    handoffs: int = 0


def _request(payload: Any) -> ModelRequest[Any]:
    return ModelRequest(role="bench", system="", prompt="", output_type=PlannerOutput, payload=payload)


def _timed_handoff(
    store: Store, *, role: str, input: dict[str, Any], run_id: str, node_id: str
) -> tuple[str, float]:
    started = time.perf_counter()
    handoff_id = store.start_handoff(
        role=role, input=input, backend="scripted", run_id=run_id, node_id=node_id
    )
    return handoff_id, time.perf_counter() - started


def _finish(
    store: Store,
    clock: WriteClock,
    handoff_id: str,
    opened: float,
    role: str,
    output: dict[str, Any],
    summary: list[str],
) -> None:
    started = time.perf_counter()
    store.finish_handoff(
        handoff_id,
        status="done",
        output=stored_output(role, output),  # checked and typed, as perform() commits it
        summary=summary,
        model="scripted-model",
        tokens_in=len(str(output)) // 2,
        tokens_out=len(str(output)) // 4,
    )
    clock.seconds += opened + time.perf_counter() - started
    clock.handoffs += 1
    store.record_model_call(
        handoff_id,
        role="bench",
        backend="scripted",
        model="scripted-model",
        tokens_in=1,
        tokens_out=1,
        cost_usd=0.0,
        calls=1,
        latency_s=0.0,
        status="ok",
    )


def populate_run(store: Store, refs: list[str], clock: WriteClock) -> str:
    """One finished run of the 50-node tree, written as the roles write it."""
    shape = SHAPES["50 nodes"]
    plan_id = save_plan(store, shape, refs, "scripted", 4)
    run_id = store.create_run([plan_id], "scripted", None)
    root = store.get_plan(plan_id).tree.root
    store.ensure_nodes(run_id, plan_nodes(plan_id, root))
    store.update_run(run_id, status="running", started_at=now(), attempt=1)

    def synthesize(node: PlanNode, inputs: list[str], fact_ids: list[int]) -> tuple[str, list[int]]:
        key = node_key(plan_id, node.id)
        facts = store.get_facts(fact_ids[:150])
        children = [h for h in map(store.get_handoff, inputs) if h.role == "synthesizer"]
        payload = SynthesisPayload(
            title=node.title,
            questions=list(node.questions),
            input_handoffs=inputs,
            facts=facts,
            child_reports=[
                ChildReport(title=c.input.title, report=c.output.report, confidence="medium")
                for c in children
                if isinstance(c.input, SynthesisInput) and isinstance(c.output, StoredSynthesis)
            ],
        )
        answer = realistic_script(_request(payload)).model_dump(mode="json")
        cited = [f.id for f in facts[:12]]
        handoff_id, opened = _timed_handoff(
            store,
            role="synthesizer",
            input={"title": node.title, "questions": list(node.questions), "input_handoffs": inputs},
            run_id=run_id,
            node_id=key,
        )
        output = {
            **answer,
            "fact_ids": [f.id for f in facts],
            "cited": cited,
            "citations": {"made": len(cited), "verified": len(cited), "dropped": 0},
        }
        _finish(
            store, clock, handoff_id, opened, "synthesizer", output, [node.title, "confidence medium; 2 gaps"]
        )
        store.finish_node(run_id, key, "done", handoff_id)
        return handoff_id, [f.id for f in facts]

    def visit(node: PlanNode) -> tuple[str, list[int]]:
        key = node_key(plan_id, node.id)
        if node.kind == "leaf":
            extractions, found = [], []
            for ref in node.sources:
                source = store.get_source(int(ref[1:]))
                payload = ExtractorPayload(
                    source_id=source.id,
                    source_ref=source.ref,
                    source_title=source.title,
                    questions=list(node.questions),
                    source_text=source.text,
                )
                answer = realistic_script(_request(payload))
                handoff_id, opened = _timed_handoff(
                    store,
                    role="extractor",
                    input=payload.model_dump(mode="json", exclude={"source_text"}),
                    run_id=run_id,
                    node_id=key,
                )
                new_facts = []
                for fact in answer.facts:
                    start = source.text.find(fact.quote)
                    new_facts.append(
                        Fact(
                            source_id=source.id,
                            statement=fact.statement,
                            quote=fact.quote,
                            location=(start, start + len(fact.quote)),
                            question=node.questions[0],
                            confidence=fact.confidence,
                            verified=start >= 0,
                        )
                    )
                ids = store.add_facts(run_id, handoff_id, new_facts)
                output = {
                    **answer.model_dump(mode="json"),
                    "fact_ids": ids,
                    "verified": len(ids),
                    "unverified": 0,
                    "insight_triggers": [],
                    "source_id": source.id,
                }
                _finish(
                    store,
                    clock,
                    handoff_id,
                    opened,
                    "extractor",
                    output,
                    [f"{len(ids)} facts; confidence medium"],
                )
                extractions.append(handoff_id)
                found += ids
            return synthesize(node, extractions, found)
        results = [visit(child) for child in node.children]
        return synthesize(node, [h for h, _ in results], [f for _, ids in results for f in ids])

    result, _ = visit(root)
    store.update_run(run_id, status="done", finished_at=now(), result_handoff_id=result)
    return run_id


async def round_trips(client: Client, run_ids: list[str], calls: int) -> dict[str, list[float]]:
    """Milliseconds per call: report_results (default view) and execute_plan polling a finished run."""
    rng = random.Random(7)
    times: dict[str, list[float]] = {"report_results": [], "execute_plan": []}
    # A plan counts known facts, so it waits for the knowledge index, which a server opens in the background (55,000 points
    # take seconds to load in Qdrant's local mode): the round trips are timed once it is open.
    await client.call_tool("plan_research", {"query": "How warm are coral reefs in winter?"})
    for tool, args in (("report_results", "id"), ("execute_plan", "run_id")):
        await client.call_tool(tool, {args: run_ids[0]})  # warm
        for _ in range(calls):
            started = time.perf_counter()
            result = await client.call_tool(tool, {args: rng.choice(run_ids)})
            times[tool].append((time.perf_counter() - started) * 1000)
            if result.is_error:
                raise RuntimeError(f"{tool}: {result.content}")
    return times


def stdio_params(home: Path) -> StdioServerParameters:
    """The installed console script, its log (stderr) sent to a file under `home`."""
    return StdioServerParameters(
        command="/bin/sh",
        args=["-c", 'exec "$0" serve 2>>"$1"', str(SCRIPT), str(home / "stdio-server.log")],
        env={"RESEARCH_MCP_HOME": str(home), "PATH": os.environ.get("PATH", ""), "HF_HUB_OFFLINE": "1"},
    )


def index_in_step(settings: Any, store: Store) -> int:
    """Put every verified fact of the store in the facts index, as its runs would have (constant
    vectors: what a point holds does not matter to report_results, only that none is missing)."""
    import numpy as np

    from research_mcp.server.app import open_knowledge_index

    index = open_knowledge_index(settings)
    try:
        vector = np.ones(index.embedder.dim, dtype=np.float32)
        held = index.count("facts")
        last, added = 0, 0
        while ids := store.known_fact_ids(after=last, limit=2048):
            last = ids[-1]
            known = index.held("facts", ids) if held else set()
            fresh = [i for i in ids if i not in known]
            index.add_vectors("facts", [(i, vector, {}) for i in fresh])
            added += len(fresh)
        return added
    finally:
        index.close()


def line(label: str, times: list[float]) -> str:
    return f"  {label:<44} median {median(times):7.2f} ms   p99 {percentile(times, 99):7.2f} ms   (n={len(times)})"


async def run() -> None:
    print("== Store and protocol ==")
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        home = Path(tmp)
        settings = bench_settings(home)
        store = Store(settings.database_path)
        refs = seed_sources(store, SHAPES["50 nodes"].leaves * SOURCES_PER_LEAF)
        clock = WriteClock()
        run_ids = [populate_run(store, refs, clock)]
        index_in_step(settings, store)
        store.close()
        server = create_server(settings, model=ScriptedModel(realistic_script))
        async with Client(server) as client:
            small = await round_trips(client, run_ids, CALLS)

        store = Store(settings.database_path)
        started = time.perf_counter()
        for _ in range(RUNS - 1):
            run_ids.append(populate_run(store, refs, clock))
        populate_s = time.perf_counter() - started
        handoff_ids = [row[0] for row in store.db.execute("SELECT id FROM handoffs").fetchall()]
        facts = store.db.execute("SELECT COUNT(*) FROM facts").fetchone()[0]
        rng = random.Random(3)
        sample = [rng.choice(handoff_ids) for _ in range(READS)]
        started = time.perf_counter()
        for handoff_id in sample:
            store.get_handoff(handoff_id)
        read_s = time.perf_counter() - started
        size_mb = settings.database_path.stat().st_size / 1e6
        started = time.perf_counter()
        indexed = index_in_step(settings, store)
        index_s = time.perf_counter() - started
        store.close()

        async with Client(server) as client:
            big = await round_trips(client, run_ids, CALLS)
        async with Client(stdio_params(home), mode="legacy") as client:
            stdio = await round_trips(client, run_ids, CALLS)

    print(
        f"store: {len(handoff_ids):,} handoffs in {len(run_ids)} runs, {facts:,} facts, "
        f"{size_mb:.0f} MB SQLite (filled in {populate_s:.1f} s with everything a run writes); "
        f"facts index put in step ({indexed:,} points added in {index_s:.1f} s)"
    )
    print(
        f"handoff writes: {clock.handoffs / clock.seconds:,.0f} handoffs/s "
        f"({clock.handoffs:,} handoffs, 2 committed transactions each; {clock.seconds / clock.handoffs * 1000:.2f} ms per handoff)"
    )
    print(
        f"handoff reads:  {READS / read_s:,.0f} handoffs/s "
        f"(get_handoff of {READS:,} random handoffs; {read_s / READS * 1000:.3f} ms each)"
    )
    print("round trips (a random finished run each call):")
    print(line(f"report_results, in memory, {len(handoff_ids):,} handoffs", big["report_results"]))
    print(line(f"report_results, stdio, {len(handoff_ids):,} handoffs", stdio["report_results"]))
    print(line("report_results, in memory, 162 handoffs (1 run)", small["report_results"]))
    print(line(f"execute_plan poll, in memory, {len(handoff_ids):,} handoffs", big["execute_plan"]))
    print(line(f"execute_plan poll, stdio, {len(handoff_ids):,} handoffs", stdio["execute_plan"]))
    print(line("execute_plan poll, in memory, 162 handoffs (1 run)", small["execute_plan"]))
    print(
        f"store size effect (in memory, median, {len(handoff_ids):,} vs 162 handoffs): report_results "
        f"{median(big['report_results']) / median(small['report_results']):.2f}x, execute_plan poll "
        f"{median(big['execute_plan']) / median(small['execute_plan']):.2f}x"
    )
    print()


if __name__ == "__main__":
    anyio.run(run)

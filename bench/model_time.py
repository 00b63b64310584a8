"""Time around the model: a run's wall time against its critical path, with a model of fixed latency.

The scripted model sleeps LATENCY seconds per call (and answers with realistic sizes, see
bench/scenarios.py); model calls are bounded by the concurrency limit (RESEARCH_MCP_CONCURRENCY,
default 4). Three times are set against the measured wall time:

- bound: max(longest chain × latency, total calls × latency / concurrency), the simple lower bound;
  the chain is extractor → leaf synthesizer → one synthesizer per executor level;
- optimal: the critical path given the concurrency limit, i.e. the shortest possible schedule of the
  run's calls (unit latency, each call feeding one synthesizer: an in-tree, for which "highest level
  first" is optimal, Hu 1961). The goal (≤ 1.10) is wall / optimal;
- fifo: the schedule the run's own CapacityLimiter produces (first come, first served) with no
  server time at all. When fifo = optimal, everything above optimal is the server's own time.

Every run is the execute_plan tool on a server built by create_server, through an in-memory MCP
client, timed from the call until the run is done. Plans are stored directly (bench.scenarios
save_plan): plan_research refuses trees of more than 60 nodes (MAX_NODES), and the planner's call is
not part of a run anyway. Three more runs attribute the server's time, with the knowledge base off
(service.knowledge = None on the service the lifespan builds, same execute method): the 50-node
tree with realistic and with short sources (1,200 characters, which leaves out the cost that grows
with source length: quote checking), and the 200-node tree.

Run alone: .venv/bin/python -m bench.model_time
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio

from bench.scenarios import (
    SHAPES,
    SOURCE_CHARS,
    RunRecord,
    Shape,
    critical_path,
    execute_tree,
    expected_calls,
    schedule_rounds,
)

LATENCY = 0.2
CONCURRENCY = 4  # the default of RESEARCH_MCP_CONCURRENCY
SMALL_SOURCE_CHARS = 1_200
GOAL = 1.10


@dataclass
class TimeFigure:
    label: str
    shape: Shape
    path: str
    concurrency: int
    calls: int
    wall_s: float
    source_chars: int

    @property
    def bound_s(self) -> float:
        return critical_path(self.shape, calls=self.calls, latency=LATENCY, concurrency=self.concurrency)

    @property
    def optimal_s(self) -> float:
        return schedule_rounds(self.shape, self.concurrency, "optimal") * LATENCY

    @property
    def fifo_s(self) -> float:
        return schedule_rounds(self.shape, self.concurrency, "fifo") * LATENCY

    @property
    def ratio(self) -> float:
        return self.wall_s / self.optimal_s


def figure(record: RunRecord, source_chars: int, path: str) -> TimeFigure:
    calls = len(record.model.calls)
    if record.status != "done" or calls != expected_calls(record.shape):
        raise RuntimeError(f"{record.shape.name}: run {record.status} with {calls} calls")
    return TimeFigure(
        record.shape.name, record.shape, path, record.concurrency, calls, record.wall_s, source_chars
    )


async def run(workdir: Path | None = None) -> list[RunRecord]:
    """Print the figures; return the runs at the default concurrency with realistic sources (for
    bench.tokens), whose stores stay in `workdir` (a temporary folder removed on return when none is given)."""
    print(f"== Time around the model: wall vs critical path, scripted model {LATENCY * 1000:.0f} ms/call ==")
    owned = None
    if workdir is None:
        owned = tempfile.TemporaryDirectory(prefix="research-mcp-bench-")
        workdir = Path(owned.name)
    figures: list[TimeFigure] = []
    records: list[RunRecord] = []
    try:
        for size in ("10 nodes", "50 nodes", "200 nodes"):
            shape = SHAPES[size]
            record = await execute_tree(
                shape, workdir / f"run-{shape.nodes}", latency=LATENCY, concurrency=CONCURRENCY
            )
            records.append(record)
            figures.append(figure(record, SOURCE_CHARS, "as built"))
        variants = [("50 nodes", SOURCE_CHARS), ("50 nodes", SMALL_SOURCE_CHARS), ("200 nodes", SOURCE_CHARS)]
        for size, chars in variants:
            with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
                record = await execute_tree(
                    SHAPES[size],
                    Path(tmp),
                    latency=LATENCY,
                    concurrency=CONCURRENCY,
                    source_chars=chars,
                    knowledge=False,
                )
                figures.append(figure(record, chars, "KB off"))
    finally:
        if owned is not None:
            owned.cleanup()
    print(
        f"{'tree':<10} {'server':<8} {'conc':>4} {'source':>7} {'calls':>5} {'wall s':>7} {'bound s':>7}"
        f" {'optimal s':>9} {'fifo s':>6} {'wall/optimal':>12} {'wall/bound':>10}  goal <= {GOAL}"
    )
    for f in figures:
        print(
            f"{f.label:<10} {f.path:<8} {f.concurrency:>4} {f.source_chars:>6}c {f.calls:>5} {f.wall_s:>7.2f}"
            f" {f.bound_s:>7.2f} {f.optimal_s:>9.2f} {f.fifo_s:>6.2f} {f.ratio:>12.3f} {f.wall_s / f.bound_s:>10.3f}"
            f"  {'met' if f.ratio <= GOAL else 'MISSED'}"
        )
    print(
        "bound: max(chain × latency, calls × latency / concurrency). optimal: the critical path given the\n"
        "concurrency limit, the shortest schedule of the run's unit-latency calls (highest level first, optimal\n"
        "for in-tree dependencies). fifo: the run's own grant order with no server time. server: as create_server\n"
        "builds it, or with the knowledge base off (KB off). source: characters per source text; with\n"
        f"{SMALL_SOURCE_CHARS}c the server time that grows with source length (quote checking) is left out."
    )
    print()
    return records


if __name__ == "__main__":
    anyio.run(run)

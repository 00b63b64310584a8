"""kill -9 of the real `research-mcp serve` over stdio at many points of a run, resumed each time.

Chains of kills (tests/reliability/killharness.py): each chain starts one run of a 9-node plan
(2 branches × 3 leaves × 2 given sources; the Anthropic backend through the real SDK against a
loopback fake Messages API that answers each role after DELAY seconds), kills the server at each
point in turn (half by elapsed time, half when the store holds N finished handoffs, at once or a
few ms later), checks `PRAGMA integrity_check`, restarts it and resumes with execute_plan(run_id=...),
then finishes the run and compares its report with an uninterrupted run's.

The facts index: after each kill (before the restart) the drift between the store's verified
canonical facts and the Qdrant points is measured (what the next start has to heal), and after the
chain, once the last server has stopped, the two id sets must be equal: the healing at each start
(research_mcp/storage/healing.py) caught up with whatever a kill left unindexed.

Run alone: .venv/bin/python -m bench.kill9 [--chains 5] [--points 6]
"""

from __future__ import annotations

import argparse
import difflib
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

from research_mcp.core.config import Settings
from research_mcp.llm.embeddings import default_embedder
from research_mcp.storage.healing import IndexDrift, heal
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex
from tests.reliability.killharness import kill_chain, kill_points, uninterrupted_report

RUN_SECONDS = 2.0
HANDOFFS = 21


def index_drift(home: Path) -> IndexDrift:
    """The facts index against the store of a data folder no server holds (read only: a dry run)."""
    settings = Settings(RESEARCH_MCP_HOME=home)
    store = Store(settings.database_path)
    try:
        with KnowledgeIndex.open(path=settings.vectors_path, embedder=default_embedder()) as index:
            return heal(KnowledgeBase(store, index), dry_run=True)
    finally:
        store.close()


def run(chains: int, points: int) -> None:
    started = time.perf_counter()
    totals: Counter[str] = Counter()
    integrity: Counter[str] = Counter()
    recovered: Counter[str] = Counter()
    unequal = 0
    unfinished = 0
    after_kills: list[IndexDrift] = []
    at_end: list[IndexDrift] = []
    with tempfile.TemporaryDirectory(prefix="research-mcp-kill9-") as tmp:
        clean = uninterrupted_report(Path(tmp) / "clean")
        for chain in range(chains):
            report = kill_chain(
                Path(tmp) / f"chain{chain}",
                kill_points(points, seed=1000 + chain, run_seconds=RUN_SECONDS, handoffs=HANDOFFS),
                after_kill=lambda home: after_kills.append(index_drift(home)),
            )
            at_end.append(index_drift(Path(tmp) / f"chain{chain}"))
            for name in (
                "kills",
                "acknowledged",
                "lost",
                "nodes_repeated",
                "requests_repeated",
                "resume_failures",
                "stale_running",
                "requests",
            ):
                totals[name] += getattr(report, name)
            integrity.update(report.integrity)
            recovered.update(report.recovered)
            unfinished += report.final_status != "done"
            differs = report.final_status == "done" and report.report != clean
            unequal += differs
            if differs and os.environ.get("BENCH_DIFF"):
                diff = difflib.unified_diff(
                    clean.splitlines(), report.report.splitlines(), "clean", "resumed", lineterm=""
                )
                print("\n".join(diff), flush=True)
            print(
                f"chain {chain}: {report.kills} kills ({', '.join(report.points)}); final {report.final_status}; "
                f"acknowledged {report.acknowledged}, lost {report.lost}; nodes repeated {report.nodes_repeated}; "
                f"requests repeated {report.requests_repeated}; model requests {report.requests} (22 uninterrupted)"
                + f"; facts index at the end: {at_end[-1].describe()}"
                + ("; final report DIFFERS from the uninterrupted one" if differs else "")
                + ("; NOT FINISHED within the stage timeout" if report.final_status != "done" else "")
                + (f"; errors {report.errors}" if report.errors else ""),
                flush=True,
            )
    print(
        f"kill points tried: {totals['kills']} over {chains} runs\n"
        f"acknowledged handoffs lost: {totals['lost']} of {totals['acknowledged']}\n"
        f"finished nodes run again (store): {totals['nodes_repeated']}\n"
        f"model requests for finished work (fake): {totals['requests_repeated']}; "
        f"requests in all {totals['requests']} vs {22 * chains} uninterrupted (the rest were in flight at a kill)\n"
        f"runs that failed to resume: {totals['resume_failures']}\n"
        f"handoffs or nodes left 'running' after the run: {totals['stale_running']}\n"
        f"tidied on resume: {recovered.get('handoffs_interrupted', 0)} handoffs left running by the kill closed as "
        f"interrupted, {recovered.get('nodes_reset', 0)} running nodes reset, {recovered.get('nodes_completed', 0)} "
        "nodes marked done from their committed final handoff\n"
        f"integrity_check: {dict(integrity)}\n"
        f"runs not finished (a stage passed its timeout): {unfinished} of {chains}\n"
        f"final report differs from the uninterrupted run's: {unequal} of {chains - unfinished} finished\n"
        f"facts index after a kill, before the restart healed it: drifted after "
        f"{sum(not d.in_step for d in after_kills)} of {len(after_kills)} kills, "
        f"{sum(d.missing for d in after_kills)} facts missing and {sum(d.extra for d in after_kills)} extra in all\n"
        f"facts index equal to the store (same ids) after recovery: {sum(d.in_step for d in at_end)} of "
        f"{len(at_end)} runs ({sum(d.facts for d in at_end)} facts; "
        f"{sum(d.missing for d in at_end)} missing, {sum(d.extra for d in at_end)} extra)\n"
        f"[{time.perf_counter() - started:.0f} s]"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chains", type=int, default=5)
    parser.add_argument("--points", type=int, default=6)
    args = parser.parse_args()
    run(args.chains, args.points)


if __name__ == "__main__":
    main()

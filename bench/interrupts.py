"""The interrupt matrix: a run stopped at many points, by Ctrl-C or by an MCP cancel, then resumed,
must end with the report an uninterrupted run gives.

One corpus of notes (three subjects, twelve documents) and one question with two sub-questions, on
the extractive backend (no model, no network, deterministic). A template data folder holds the
corpus already indexed; every point starts from a copy of it, so earlier runs' facts never reach a
later one. The uninterrupted run is made the same way, once per mode.

- **sigint**: `research-mcp run QUESTION --corpus NOTES` in a subprocess gets SIGINT at each point of
  SCHEDULE (once the store holds k events, k extractions started or done, k syntheses started or
  done: starting, searching, mid-extraction, mid-synthesis, between a leaf and the root); then
  `research-mcp run --resume RUN_ID` (without --corpus, as a user types it) finishes it.
- **mcp**: in one process, through an in-memory MCP client, `execute_plan(plan_id)` then
  `execute_plan(run_id, cancel=true)` at the same points, then `execute_plan(run_id)` until the run
  is done.
- **phases**: the same as mcp, for a plan whose root has a phase gate that one iteration meets
  (PHASED_PLAN), cancelled at the points of PHASED_SCHEDULE: before the gate and in the iteration.

For each point it records whether the run was recorded `cancelled` (a point reached after the run
ended counts as not interrupted), how long the CLI took to exit or the cancel to answer, and
whether the resumed report equals the uninterrupted one: the same findings with each citation
replaced by the fact it cites (statement, quote, source), the same facts, sources, confidence and
gaps. Fact and source ids are left out: they number rows in the order parallel work finished; so is
which of several documents stating the same sentence is a fact's first source (the others corroborate
it): a fact is compared with every source that states it.

Run: .venv/bin/python -m bench.interrupts [--mode sigint|mcp|phases|all] [--points N] [--paragraphs 40]
(each mode's whole schedule by default: 20 points for sigint and mcp, 10 for phases)
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

QUESTION = "How does uvicorn handle graceful shutdown and what does the --reload option do?"
SCRIPT = Path(sys.executable).parent / "research-mcp"
SUBJECTS = {
    "shutdown": "Uvicorn handles graceful shutdown by waiting for open connections to close. On SIGTERM the "
    "server stops accepting new connections. The timeout-graceful-shutdown option bounds how long it "
    "waits. Lifespan shutdown events run after connections close. During a graceful shutdown uvicorn lets "
    "running requests finish. A second SIGINT forces an immediate shutdown.",
    "reload": "The --reload option makes uvicorn restart the server when source files change. It uses "
    "watchfiles when installed, else polling. Reload is meant for development, not production. The "
    "--reload-dir option selects the folders to watch.",
    "workers": "The --workers option starts several worker processes. Each worker runs its own event "
    "loop. Workers are restarted when they die. Gunicorn can manage uvicorn workers too.",
}
#: What a point waits for in the store (polled every 5 ms, read only), and the moment of the run it is.
TRIGGERS = {
    "events": ("SELECT COUNT(*) FROM events", "run events (start, node starts, searches, sources chosen)"),
    "extracting": ("SELECT COUNT(*) FROM handoffs WHERE role = 'extractor'", "extractions started"),
    "extracted": (
        "SELECT COUNT(*) FROM handoffs WHERE role = 'extractor' AND status = 'done'",
        "extractions done",
    ),
    "synthesizing": ("SELECT COUNT(*) FROM handoffs WHERE role = 'synthesizer'", "syntheses started"),
    "synthesized": (
        "SELECT COUNT(*) FROM handoffs WHERE role = 'synthesizer' AND status = 'done'",
        "syntheses done",
    ),
    "iterating": (
        "SELECT COUNT(*) FROM handoffs WHERE iteration >= 1",
        "handoffs of a phase iteration started",
    ),
    "iterated": ("SELECT COUNT(*) FROM events WHERE kind = 'iteration'", "phase iterations done"),
}
#: The 20 points of each mode, in run order: starting and searching (events 1-8: the attempt, the root and
#: the two leaves started, the searches, each leaf's sources chosen), mid-extraction (1, 2, 4, 6 of the six
#: extractions started), between extractions (1, 3, 5 done), mid-synthesis (each of the three syntheses
#: started: the two leaves', then the root's) and between a leaf's synthesis and the root's (1, 2 done).
SCHEDULE = [
    *(("events", k) for k in range(1, 9)),
    *(("extracting", k) for k in (1, 2, 4, 6)),
    *(("extracted", k) for k in (1, 3, 5)),
    *(("synthesizing", k) for k in (1, 2, 3)),
    *(("synthesized", k) for k in (1, 2)),
]
#: A plan whose root has a phase gate that one iteration meets (corroboration by 4 sources: the first
#: pass reads 3 a leaf): the iteration searches again, reads 6 more sources and synthesizes again.
PHASED_PLAN = {
    "root": {
        "kind": "executor",
        "title": QUESTION,
        "questions": [QUESTION],
        "phases": [{"name": "corroborate", "criteria": {"min_corroboration": 4}, "max_iterations": 3}],
        "children": [
            {"kind": "leaf", "title": question, "questions": [question]}
            for question in (
                "How does uvicorn handle graceful shutdown?",
                "What does the --reload option do?",
            )
        ],
    },
    "rationale": "two sub-questions, corroborated",
}
#: The 10 points of the phased mode: the root's first synthesis under way and done (before the gate),
#: each of the iteration's handoffs started (its extractions, then its synthesis), and after it.
PHASED_SCHEDULE = [
    ("synthesizing", 3),
    ("synthesized", 3),
    *(("iterating", k) for k in range(1, 8)),
    ("iterated", 1),
]


@dataclass
class Point:
    mode: str
    trigger: str  # a key of TRIGGERS
    k: int
    cancelled: bool = False
    stop_s: float = 0.0  # SIGINT to exit, or cancel call to its answer
    status_after: str = ""
    equal: bool = False
    error: str = ""


def write_corpus(folder: Path, paragraphs: int = 40) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(12):
        name, base = list(SUBJECTS.items())[index % 3]
        detail = " ".join(
            f"Paragraph {j} about {name}: detail number {(index * 37 + j * 11) % 997} was measured in test {j}."
            for j in range(paragraphs)
        )
        (folder / f"{name}{index}.md").write_text(f"# {name.title()} notes {index}\n\n{base}\n\n{detail}\n")
    return folder


def cli_env(home: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TAVILY_", "RESEARCH_MCP_"))
    }
    env.update(RESEARCH_MCP_HOME=str(home), RESEARCH_MCP_MODEL="extractive", HF_HUB_OFFLINE="1")
    return env


def make_template(root: Path, corpus: Path) -> Path:
    template = root / "template"
    subprocess.run(
        [str(SCRIPT), "index", str(corpus)], env=cli_env(template), capture_output=True, check=True, text=True
    )
    return template


def fresh_home(template: Path, home: Path) -> Path:
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(template, home)
    return home


def count(database: Path, trigger: str) -> int:
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
            return int(conn.execute(TRIGGERS[trigger][0]).fetchone()[0])
    except sqlite3.Error:
        return 0


def fingerprint(document: dict[str, Any]) -> dict[str, Any]:
    """What must be equal between a resumed and an uninterrupted run: ids replaced by what they name."""
    refs = {source["id"]: source["url_or_path"] for source in document["sources"]}
    facts = {
        fact["id"]: (
            fact["statement"],
            fact["quote"],
            fact["verified"],
            # Every source that states it: which of several equal statements was recorded first, and so
            # became the fact the others merged into, depends on which parallel extraction finished first.
            tuple(
                sorted(
                    {
                        refs.get(fact["source_id"], ""),
                        *(refs.get(a["source_id"], "") for a in fact["also_in"]),
                    }
                )
            ),
        )
        for fact in document["facts"]
    }
    findings = re.sub(r"\[(F\d+)\]", lambda m: f"[{facts.get(m[1], m[1])}]", document["findings"])
    return {
        "findings": findings,
        "facts": sorted(facts.values()),
        "sources": sorted(refs.values()),
        "confidence": document["confidence"],
        "gaps": sorted(document["gaps"]),
    }


def exported(home: Path, run_id: str) -> dict[str, Any]:
    """The fingerprint of what `research-mcp export RUN_ID --format json` prints, read in this process
    (one interpreter start fewer per point)."""
    from research_mcp.core.errors import ResearchError
    from research_mcp.run_document import run_document
    from research_mcp.storage.store import Store

    store = Store(home / "research.db")
    try:
        document = run_document(store, run_id).model_dump(mode="json")
    except ResearchError as error:
        raise RuntimeError(str(error)) from None
    finally:
        store.close()
    return fingerprint(document)


def latest_run(database: Path) -> tuple[str, str]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        row = conn.execute(
            "SELECT id, status FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1"
        ).fetchone()
    return str(row[0]), str(row[1])


def compare(point: Point, resumed: dict[str, Any], clean: dict[str, Any]) -> None:
    point.equal = resumed == clean
    if not point.equal:
        differ = [key for key in clean if resumed.get(key) != clean[key]]
        point.error = point.error or f"differs in {', '.join(differ)}"
        if os.environ.get("BENCH_DIFF"):
            for key in differ:
                print(f"--- {key}\nclean:   {clean[key]}\nresumed: {resumed.get(key)}", file=sys.stderr)


# --- Ctrl-C of research-mcp run ------------------------------------------------------------------


def clean_cli(template: Path, home: Path, corpus: Path) -> dict[str, Any]:
    fresh_home(template, home)
    subprocess.run(
        [str(SCRIPT), "run", QUESTION, "--corpus", str(corpus)],
        env=cli_env(home),
        capture_output=True,
        check=True,
    )
    return exported(home, latest_run(home / "research.db")[0])


def sigint_point(template: Path, home: Path, corpus: Path, point: Point, clean: dict[str, Any]) -> None:
    database = fresh_home(template, home) / "research.db"
    base = count(database, point.trigger)
    process = subprocess.Popen(
        [str(SCRIPT), "run", QUESTION, "--corpus", str(corpus)],
        env=cli_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    while count(database, point.trigger) < base + point.k and process.poll() is None:
        time.sleep(0.005)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    point.stop_s = time.monotonic() - sent
    run_id, point.status_after = latest_run(database)
    point.cancelled = process.returncode == 130 and point.status_after == "cancelled"
    if process.returncode not in (0, 130) or point.status_after == "running":
        point.error = f"exit {process.returncode}, status {point.status_after}: {stderr.strip()[-300:]}"
    resumed = subprocess.run(
        [str(SCRIPT), "run", "--resume", run_id], env=cli_env(home), capture_output=True, text=True
    )
    if resumed.returncode != 0:
        point.error = f"resume exit {resumed.returncode}: {resumed.stderr.strip()[-300:]}"
        return
    compare(point, exported(home, run_id), clean)


# --- MCP cancel ----------------------------------------------------------------------------------


async def mcp_run(
    home: Path, corpus: Path, point: Point | None, *, phased: bool = False
) -> tuple[str, Point | None]:
    from research_mcp.core.config import Settings
    from research_mcp.server.app import create_server

    settings = Settings.model_validate(
        {
            "RESEARCH_MCP_HOME": str(home),
            "RESEARCH_MCP_CORPUS": str(corpus),
            "RESEARCH_MCP_MODEL": "extractive",
        }
    )
    assert settings.home == home and settings.corpus == [corpus]
    database = home / "research.db"
    async with Client(create_server(settings)) as client:
        suggested = {"suggested_plan": PHASED_PLAN} if phased else {}
        plan = await client.call_tool("plan_research", {"query": QUESTION, **suggested})
        base = count(database, point.trigger) if point else 0
        started = await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 0}
        )
        run_id = started.structured_content["id"]
        if point is not None:
            while count(database, point.trigger) < base + point.k:
                status = latest_run(database)[1]
                if status not in ("pending", "running"):
                    break
                await anyio.sleep(0.005)
            sent = time.monotonic()
            answer = await client.call_tool("execute_plan", {"run_id": run_id, "cancel": True})
            point.stop_s = time.monotonic() - sent
            point.status_after = answer.structured_content["status"]
            point.cancelled = point.status_after == "cancelled" == latest_run(database)[1]
            if point.status_after == "running":
                point.error = "the cancel answered 'running'"
        status = ""
        for _ in range(20):
            handle = await client.call_tool("execute_plan", {"run_id": run_id, "wait_seconds": 55})
            status = handle.structured_content["status"]
            if status not in ("pending", "running"):
                break
        if status != "done" and point is not None:
            point.error = f"resumed run ended {status}"
    return run_id, point


def mcp_point(template: Path, home: Path, corpus: Path, point: Point, clean: dict[str, Any]) -> None:
    fresh_home(template, home)
    run_id, _ = anyio.run(functools.partial(mcp_run, home, corpus, point, phased=point.mode == "phases"))
    compare(point, exported(home, run_id), clean)


def clean_mcp(template: Path, home: Path, corpus: Path, *, phased: bool = False) -> dict[str, Any]:
    fresh_home(template, home)
    run_id, _ = anyio.run(functools.partial(mcp_run, home, corpus, None, phased=phased))
    return exported(home, run_id)


# --- the matrix ----------------------------------------------------------------------------------


def points_of(mode: str, n: int) -> list[Point]:
    """n points spread over the mode's schedule (all of it by default; more repeat it)."""
    schedule = PHASED_SCHEDULE if mode == "phases" else SCHEDULE
    n = n or len(schedule)
    return [Point(mode, *schedule[(index * len(schedule) // n) % len(schedule)]) for index in range(n)]


def prepare(root: Path, paragraphs: int = 40) -> tuple[Path, Path]:
    """The corpus of notes and the template data folder that holds it indexed (one `index` process)."""
    corpus = write_corpus(root / "notes", paragraphs)
    return corpus, make_template(root, corpus)


def matrix(
    modes: list[str],
    n: int,
    root: Path,
    *,
    paragraphs: int = 40,
    quiet: bool = False,
    prepared: tuple[Path, Path] | None = None,
) -> list[Point]:
    """The points of each mode; `prepared`: a corpus and template of `prepare` to share (they are
    only read: each run starts from a copy of the template)."""
    corpus, template = prepared or prepare(root, paragraphs)
    results: list[Point] = []
    for mode in modes:
        if mode == "sigint":
            clean = clean_cli(template, root / f"clean-{mode}", corpus)
        else:
            clean = clean_mcp(template, root / f"clean-{mode}", corpus, phased=mode == "phases")
        for index, point in enumerate(points_of(mode, n)):
            run_point = sigint_point if mode == "sigint" else mcp_point
            try:
                run_point(template, root / f"{mode}-{index}", corpus, point, clean)
            except (RuntimeError, subprocess.SubprocessError, OSError) as error:
                point.error = str(error)[-300:]
            results.append(point)
            if not quiet:
                print(
                    f"{mode:6} after {point.k:2} {TRIGGERS[point.trigger][1]:58}: "
                    f"{'cancelled' if point.cancelled else 'ran to its end':14} "
                    f"stop {point.stop_s:5.2f} s  resumed report {'equal' if point.equal else 'DIFFERENT'}"
                    + (f"  ({point.error})" if point.error else ""),
                    flush=True,
                )
    return results


def summary(results: list[Point]) -> list[str]:
    lines = []
    for mode in dict.fromkeys(point.mode for point in results):
        own = [point for point in results if point.mode == mode]
        stopped = [point for point in own if point.cancelled]
        slowest = max((point.stop_s for point in stopped), default=0.0)
        lines.append(
            f"{mode}: {len(own)} points, {len(stopped)} interrupted mid-run (recorded cancelled), "
            f"{sum(point.equal for point in own)}/{len(own)} resumed reports equal to the uninterrupted one, "
            f"{sum(bool(point.error) for point in own)} errors; slowest stop {slowest:.2f} s"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=0, help="points per mode (default: its whole schedule)")
    parser.add_argument("--mode", choices=["sigint", "mcp", "phases", "all"], default="all")
    parser.add_argument("--paragraphs", type=int, default=40, help="filler paragraphs per note (run length)")
    args = parser.parse_args()
    modes = ["sigint", "mcp", "phases"] if args.mode == "all" else [args.mode]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="research-mcp-interrupts-") as tmp:
        results = matrix(modes, args.points, Path(tmp), paragraphs=args.paragraphs)
    print("\n".join(summary(results)))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

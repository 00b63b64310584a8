"""How soon `research-mcp serve` answers a host: `initialize` and `tools/list` over stdio.

Each start spawns the installed console script with a fresh data folder (and, with --notes N, a
corpus of N generated notes it has never indexed), writes `initialize`, then `tools/list`, as a
host does, and times each answer from the moment the process was spawned. Prints the median and
p90 over the starts, and the import time of the server module (`python -X importtime`).

Each start is made twice on its data folder: first fresh, then again as the same host's next start,
whose `initialize` and `tools/list` the server answers from the first start's handshake
(`server/handshake_replay.py`) while it loads.

The last start then stays up as a host's server does: it waits until the corpus is indexed, asks
`scout_sources` once (so the search embedders are loaded), and reads the resident memory (VmRSS)
of the server and its parser workers 3 s later and again after --idle seconds without a request.

    python -m bench.startup [--starts 10] [--notes 0] [--idle 65]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from tests.handshake import INITIALIZED, LIST_TOOLS, initialize

SCRIPT = Path(sys.executable).with_name("research-mcp")
INITIALIZE = initialize("bench.startup")


def write_notes(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"note-{i:05d}.md").write_text(
            f"# Note {i}\n\nObservation {i} at site {i * 7 % 101}: {i % 13 + 2} changes over {i % 9 + 1} days.\n",
            encoding="utf-8",
        )


def _send(stdin: IO[str], message: Mapping[str, object]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def _answer(stdout: IO[str], ident: int) -> dict[str, object]:
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout before answering")
        message = json.loads(line)
        if message.get("id") == ident:
            return dict(message)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


STATUS = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "resources/read",
    "params": {"uri": "research://corpus/status"},
}
SCOUT = {
    "jsonrpc": "2.0",
    "id": 4,
    "method": "tools/call",
    "params": {"name": "scout_sources", "arguments": {"topic": "changes observed at a site"}},
}


def tree_rss_mb(pid: int) -> tuple[float, float]:
    """Resident memory of a process and of its children (the parser workers), in MB, from /proc."""

    def rss(one: int) -> float:
        for line in Path(f"/proc/{one}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return rss(pid), sum(rss(int(child)) for child in children)


def idle_memory(
    process: subprocess.Popen[str], indexed: bool, idle_seconds: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(server MB, workers MB) once the corpus is indexed and one search has been answered, and again
    after ``idle_seconds`` without a request (the MiniLM session and parser workers are let go
    after a minute idle)."""
    assert process.stdin is not None and process.stdout is not None
    while indexed:
        _send(process.stdin, STATUS)
        status = json.loads(_answer(process.stdout, 3)["result"]["contents"][0]["text"])  # type: ignore[index]
        if status["phase"] in ("ready", "failed", "stopped"):
            break
        time.sleep(0.5)
    _send(process.stdin, SCOUT)
    _answer(process.stdout, 4)
    time.sleep(3)
    busy = tree_rss_mb(process.pid)
    time.sleep(idle_seconds)
    return busy, tree_rss_mb(process.pid)


Memory = tuple[tuple[float, float], tuple[float, float]]


def one_start(
    home: Path, corpus: Path | None, *, memory: bool = False, idle_seconds: float = 0
) -> tuple[float, float, float, Memory | None]:
    """Seconds from spawn to the `initialize` answer and to the `tools/list` answer, and the CPU
    seconds the server had used when `tools/list` was answered (on a busy machine, wall time
    includes waiting for a core; CPU time does not)."""
    env = {"PATH": os.environ.get("PATH", ""), "RESEARCH_MCP_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    if corpus is not None:
        env["RESEARCH_MCP_CORPUS"] = str(corpus)
    started = time.perf_counter()
    with subprocess.Popen(
        [str(SCRIPT), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        _send(process.stdin, INITIALIZE)
        if "result" not in _answer(process.stdout, 1):
            raise RuntimeError("initialize failed")
        initialized = time.perf_counter() - started
        _send(process.stdin, INITIALIZED)
        _send(process.stdin, LIST_TOOLS)
        tools = _answer(process.stdout, 2)
        listed = time.perf_counter() - started
        cpu = cpu_seconds(process.pid)
        if len(tools["result"]["tools"]) != 5:  # type: ignore[index]
            raise RuntimeError("tools/list did not list the five tools")
        idle = idle_memory(process, corpus is not None, idle_seconds) if memory else None
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
    return initialized, listed, cpu, idle


def import_seconds() -> float:
    """Cumulative import time of research_mcp.server.app, as `python -X importtime` reports it."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import research_mcp.server.app"],
        capture_output=True,
        text=True,
        check=True,
    )
    last = [line for line in done.stderr.splitlines() if re.search(r"\|\s*research_mcp\.server\.app$", line)]
    return int(last[-1].split("|")[1]) / 1e6


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--notes", type=int, default=0, help="generated notes in a never-indexed corpus")
    parser.add_argument("--idle", type=float, default=65, help="seconds idle before memory is read again")
    args = parser.parse_args()
    inits, lists, cpus, imports = [], [], [], []
    again_inits, again_lists, again_cpus = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = None
        if args.notes:
            corpus = Path(tmp) / "notes"
            write_notes(corpus, args.notes)
        idle: Memory | None = None
        for start in range(args.starts):
            last = start == args.starts - 1
            home = Path(tmp) / f"home{start}"
            initialized, listed, cpu, _ = one_start(home, corpus)
            inits.append(initialized)
            lists.append(listed)
            cpus.append(cpu)
            # The same host again, on the same data folder: its handshake is replayed.
            initialized, listed, cpu, idle = one_start(home, corpus, memory=last, idle_seconds=args.idle)
            again_inits.append(initialized)
            again_lists.append(listed)
            again_cpus.append(cpu)
            imports.append(import_seconds())
    print(f"starts: {args.starts}; corpus: {args.notes} notes never indexed; cores: {os.cpu_count()}")
    rows = (
        ("initialize", inits),
        ("tools/list", lists),
        ("server CPU to there", cpus),
        ("initialize, again", again_inits),
        ("tools/list, again", again_lists),
        ("server CPU, again", again_cpus),
        ("import server.app", imports),
    )
    print("first start in a fresh data folder; 'again': the same host's next start (handshake replayed)")
    for name, values in rows:
        print(
            f"{name:20} median {statistics.median(values):.3f} s  p90 {_p90(values):.3f} s  "
            f"min {min(values):.3f} s"
        )
    if idle is not None:
        for when, (server, workers) in zip(("3 s after", f"{args.idle:.0f} s idle after"), idle, strict=True):
            print(
                f"memory {when} one search{' (corpus indexed)' if args.notes else ''}: server "
                f"{server:.0f} MB, parser workers {workers:.0f} MB, together {server + workers:.0f} MB"
            )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

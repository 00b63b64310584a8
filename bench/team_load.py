"""A team on one server: runs per minute, p50/p95 of each tool and memory, at several client counts.

The real `research-mcp serve --http` on a loopback port (a subprocess running this checkout), the
extractive backend (no key), a corpus of the 17 real documents under tests/fixtures/realdocs. At
each client count, every client does `--runs` researches one after another, each on a question no
run asked before (new work, as a team makes): plan_research, execute_plan until the run ends (45 s
waits, as a host polls), report_results(summary). A token per client (RESEARCH_MCP_HTTP_TOKENS), so
each is its own caller. The server's resident memory is read from /proc before the load, at its
peak (VmHWM) and after `--idle` seconds of quiet following each level.

Bounded: every level stops at `--deadline` seconds whatever is left, and the whole at the last level.
Printed: per level, runs done and failed, runs/min, p50/p95/max of each tool, peak and idle RSS.

    .venv/bin/python -m bench.team_load --clients 1,4 --runs 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "realdocs"
SCRIPT = Path(sys.executable).parent / "research-mcp"
SUBJECTS = [
    "the Apache License's patent grant",
    "redistribution conditions of the licences",
    "what adduser.conf sets for new home directories",
    "the warranty disclaimers",
    "how deb-conffiles lists configuration files",
    "what bc's README says about its language",
    "who holds the copyright of bash",
    "curl's licence terms",
    "what fakeroot does",
    "e2fsprogs' licence",
    "the NOTICE file requirements",
    "trademark use under the licences",
    "how contributions are licensed",
    "what the dpkg copyright file lists",
    "the termination of licence rights",
    "limitation of liability clauses",
]
ASPECTS = ["what is said", "which conditions apply", "who is named", "what is excluded", "when it applies"]


def question(index: int) -> str:
    """A question no earlier run of this benchmark asked (new work for the server)."""
    subject = SUBJECTS[index % len(SUBJECTS)]
    aspect = ASPECTS[(index // len(SUBJECTS)) % len(ASPECTS)]
    return f"About {subject}: {aspect} (question {index})?"


def rss_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in kB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux: write 5 to clear_refs)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class Server:
    """`research-mcp serve --http` with a token per client, on a free loopback port."""

    def __init__(self, home: Path, users: int, concurrency: int) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.tokens = {f"user{index}": f"bench-token-{index:04d}-0123456789abcdef" for index in range(users)}
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
            "RESEARCH_MCP_HOME": str(home),
            "RESEARCH_MCP_MODEL": "extractive",
            "RESEARCH_MCP_CORPUS": str(CORPUS),
            "RESEARCH_MCP_ASK_BEFORE_RUN": "false",
            "RESEARCH_MCP_CONCURRENCY": str(concurrency),
            "RESEARCH_MCP_HTTP_TOKENS": ",".join(f"{name}={token}" for name, token in self.tokens.items()),
        }
        if "MALLOC_ARENA_MAX" in os.environ:  # to compare the C heap's arenas (glibc)
            env["MALLOC_ARENA_MAX"] = os.environ["MALLOC_ARENA_MAX"]
        self.log = (home.parent / "server.log").open("wb")
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--http", f"127.0.0.1:{self.port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env=env,
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def wait_listening(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.process.poll() is not None:
                raise SystemExit("the server exited; see server.log")
            time.sleep(0.1)
        raise SystemExit("the server did not start listening")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


async def one_client(
    server: Server,
    user: str,
    questions: list[str],
    times: dict[str, list[float]],
    outcome: dict[str, int],
    deadline: float,
) -> None:
    headers = {"Authorization": f"Bearer {server.tokens[user]}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):

        async def call(tool: str, arguments: dict[str, Any]) -> Any:
            started = time.monotonic()
            result = await client.call_tool(tool, arguments)
            times[tool].append(time.monotonic() - started)
            if result.is_error:
                outcome["errors"] += 1
            return result

        for text in questions:
            if time.monotonic() > deadline:
                outcome["not started"] += 1
                continue
            plan = await call("plan_research", {"query": text})
            if plan.is_error:
                continue
            arguments: dict[str, Any] = {"plan_id": plan.structured_content["id"], "wait_seconds": 45}
            run = await call("execute_plan", arguments)
            while not run.is_error and run.structured_content["status"] in ("pending", "running"):
                if time.monotonic() > deadline:
                    break
                run = await call("execute_plan", {"run_id": run.structured_content["id"], "wait_seconds": 45})
            status = "error" if run.is_error else run.structured_content["status"]
            outcome[status] += 1
            if not run.is_error:
                await call("report_results", {"id": run.structured_content["id"], "view": "summary"})


async def level(server: Server, clients: int, runs: int, first: int, deadline_s: float) -> dict[str, Any]:
    times: dict[str, list[float]] = defaultdict(list)
    outcome: dict[str, int] = defaultdict(int)
    reset_peak(server.process.pid)
    started = time.monotonic()
    deadline = started + deadline_s
    async with anyio.create_task_group() as group:
        for index in range(clients):
            asked = [question(first + index * runs + turn) for turn in range(runs)]
            group.start_soon(one_client, server, f"user{index}", asked, times, outcome, deadline)
    wall = time.monotonic() - started
    memory = rss_kb(server.process.pid)
    finished = sum(count for status, count in outcome.items() if status in ("done", "partial", "no_sources"))
    return {
        "clients": clients,
        "wall": wall,
        "finished": finished,
        "outcome": dict(outcome),
        "times": times,
        "peak_kb": memory["VmHWM"],
    }


def report(result: dict[str, Any], idle_kb: int, start_kb: int) -> None:
    outcome = result["outcome"]
    per_min = result["finished"] / result["wall"] * 60 if result["wall"] else 0.0
    print(
        f"\n{result['clients']} clients: {result['finished']} runs finished in {result['wall']:.0f} s "
        f"({per_min:.1f} runs/min); outcomes {outcome}; peak RSS {result['peak_kb'] / 1024:.0f} MB; "
        f"idle RSS after {idle_kb / 1024:.0f} MB (start {start_kb / 1024:.0f} MB)"
    )
    for tool, values in sorted(result["times"].items()):
        print(
            f"  {tool:15} n={len(values):3}  p50 {percentile(values, 0.5):6.2f} s  "
            f"p95 {percentile(values, 0.95):6.2f} s  max {max(values):6.2f} s"
        )


async def main(arguments: argparse.Namespace) -> None:
    counts = [int(part) for part in arguments.clients.split(",")]
    with tempfile.TemporaryDirectory(prefix="team-load-") as folder:
        home = Path(folder) / "home"
        home.mkdir()
        server = Server(home, max(counts), arguments.concurrency)
        try:
            server.wait_listening()
            await anyio.sleep(arguments.idle)  # the corpus is indexed at start: let it settle
            start_kb = rss_kb(server.process.pid)["VmRSS"]
            print(
                f"server pid {server.process.pid}; RSS at start (corpus indexed, idle) {start_kb / 1024:.0f} MB"
            )
            first = 0
            for clients in counts:
                result = await level(server, clients, arguments.runs, first, arguments.deadline)
                first += clients * arguments.runs
                await anyio.sleep(arguments.idle)
                report(result, rss_kb(server.process.pid)["VmRSS"], start_kb)
        finally:
            server.stop()


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--clients", default="1,4,8,16", help="client counts, one level each (default 1,4,8,16)"
    )
    parser.add_argument("--runs", type=int, default=2, help="runs per client per level (default 2)")
    parser.add_argument("--concurrency", type=int, default=4, help="RESEARCH_MCP_CONCURRENCY (default 4)")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of quiet before reading idle RSS")
    parser.add_argument("--deadline", type=float, default=600.0, help="seconds a level may take at most")
    return parser.parse_args()


if __name__ == "__main__":
    anyio.run(main, parse())

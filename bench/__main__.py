"""Every benchmark in order, each printing its figures: `make bench` (`.venv/bin/python -m bench`).

Scripts that print numbers, not timed tests: nothing here asserts, and CI does not run it. First
the figures of BENCHMARKS.md (host context, time around the model, tokens, server time, store and
protocol, parallel load), in this process; then every other benchmark module in bench/ (retrieval,
estimate, ...), each as its own process with its defaults. Each step uses its own temporary
RESEARCH_MCP_HOME and reaches no network (sources are stored before the runs; stdio and HTTP
servers listen on pipes and loopback only). The machine, the code's commit and the load average
are printed, since absolute times depend on them; BENCHMARKS.md says which figures are ratios.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import anyio

from bench import host_context, model_time, parallel_load, scenarios, server_time, store_protocol, tokens

T = TypeVar("T")


def machine() -> list[str]:
    cpu = "unknown"
    memory = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    except OSError:
        pass
    return [
        f"cpus: {os.cpu_count()} ({cpu}); memory {memory}",
        f"python {platform.python_version()} on {platform.platform()}; sqlite {sqlite3.sqlite_version}; "
        f"mcp {metadata.version('mcp')}",
    ]


def code_version() -> str:
    """The commit measured, and whether the working tree differs from it."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "code: not a git checkout"
    return f"code: commit {commit}" + (" with uncommitted changes" if dirty else "")


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


async def step(name: str, work: Callable[[], Awaitable[T]]) -> T:
    """Run one benchmark and say how long it took and how busy the machine was."""
    before, started = load(), time.perf_counter()
    result = await work()
    print(f"[{name}: {time.perf_counter() - started:.0f} s; load average {before} -> {load()}]\n")
    return result


async def run_all() -> None:
    started = time.perf_counter()
    await step("host context", host_context.run)
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        records = await step("time around the model", lambda: model_time.run(Path(tmp)))

        async def count_tokens() -> object:
            return tokens.report(records)

        await step("tokens", count_tokens)
    await step("server time", server_time.run)
    await step("store and protocol", store_protocol.run)
    await step("parallel load", parallel_load.run)
    print(f"[benchmarks above: {time.perf_counter() - started:.0f} s]\n")


OURS = {"host_context", "model_time", "tokens", "server_time", "store_protocol", "parallel_load", "scenarios"}


def other_benchmarks() -> list[str]:
    """The other runnable benchmark modules in bench/ (retrieval, estimate, ...), by name."""
    folder = Path(__file__).parent
    return [
        path.stem
        for path in sorted(folder.glob("*.py"))
        if not path.stem.startswith("_")
        and path.stem not in OURS
        and 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
    ]


def run_other(name: str) -> None:
    """One of the other benchmarks, as its own process (`python -m bench.NAME`, its own arguments' defaults)."""
    print(f"== bench/{name}.py ==", flush=True)
    before, started = load(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", f"bench.{name}"], cwd=Path(__file__).resolve().parents[1])
    outcome = "" if done.returncode == 0 else f"; exited with {done.returncode}"
    print(
        f"[{name}: {time.perf_counter() - started:.0f} s{outcome}; load average {before} -> {load()}]\n",
        flush=True,
    )


def main() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    print("research-mcp benchmarks")
    for line in machine():
        print(line)
    print(code_version())
    print(f"load average at start: {load()} (1, 5, 15 min)")
    for line in scenarios.describe():
        print(line)
    print()
    started = time.perf_counter()
    anyio.run(run_all)
    for name in other_benchmarks():
        run_other(name)
    print(f"total: {time.perf_counter() - started:.0f} s; load average at the end: {load()}")


if __name__ == "__main__":
    main()

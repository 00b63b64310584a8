"""Memory, time and disk on a real folder of documents, as a user meets them: index it, index it again
unchanged, run no-key research over it from the command line, then serve it and run the same
questions over MCP.

Run from the repository root:

    .venv/bin/python -m bench.real_corpus [--case usr-share-doc|git-docs] [--query "..."]...
    .venv/bin/python -m bench.real_corpus --case git-docs --code ../main --code .   # before, after

The corpus is the source folder's files without changelogs and images (Debian's /usr/share/doc:
about 2,900 files; git-doc's /usr/share/doc/git-doc: 537), copied once into a temporary folder.
Each step runs ``research-mcp`` in its own process on a fresh data folder (the same one through
the steps), with the research_mcp package of each ``--code`` checkout in turn (PYTHONPATH);
figures:

- wall s: the command's wall time; CPU s: its user and system CPU time (steadier on a busy machine);
- peak MB: its peak resident memory (its resident high-water mark, sampled: see `timed`), and
  anon+file: at the highest of samples every 20 ms, how much of it was the heap (anonymous) and how
  much mapped files (the model's weights, the vector engine's segments, libraries);
- warnings: lines on its stderr that a library wrote (Python warnings), which should be none;
- serve idle: its resident memory ``--settle`` s after it answered ``initialize`` (the start-up
  rescan of the already indexed corpus done), sampled from /proc;
- serve, the runs: on a fresh data folder, each question planned and run over MCP as a host that
  cannot elicit would; wall s for them all, the peak (VmHWM over the whole session) and the steady
  resident memory ``--settle`` s after the last run ended;
- the data folder on disk (blocks used: the vector engine's files are sparse) beside the corpus's
  text as the store holds it (its documents' text, decompressed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

SKIP_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico"}
DEFAULT_QUERY = "What does the GNU General Public License require when you distribute modified copies?"


def copy_corpus(source: Path, target: Path) -> tuple[int, int]:
    files = size = 0
    for path in sorted(source.rglob("*")):
        if not path.is_file() or path.name.startswith("changelog") or path.suffix.lower() in SKIP_SUFFIXES:
            continue
        dest = target / path.relative_to(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        files, size = files + 1, size + path.stat().st_size
    return files, size


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, int, str, str]:
    """Wall s, CPU s (user and system), peak MB of the command (its resident high-water mark,
    VmHWM, read every 20 ms), its exit code, its stderr, and what its resident memory was made of at
    the highest of those samples: anonymous (heap) and file-backed (mapped files) MB.

    Not wait4's ru_maxrss: Python starts the command with vfork, and until the exec the child
    counts its parent's pages, so a large parent (a test run) made an 80 MB command look 387 MB."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=errors, stdin=subprocess.DEVNULL
        )
        top = (0.0, 0.0, 0.0)  # resident, anonymous, file-backed MB
        peak = 0.0  # the command's own high-water mark, MB
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            with contextlib.suppress(OSError, KeyError, ValueError):
                now = resident_parts(process.pid)
                top = max(top, now)
                peak = max(peak, high_water(process.pid))
            time.sleep(0.02)
        process.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        stderr = errors.read()
    wall = time.perf_counter() - started
    parts = f"{top[1]:.0f}+{top[2]:.0f}" if top[0] else ""
    peak = peak or usage.ru_maxrss / 1024  # a command too quick to sample
    return wall, usage.ru_utime + usage.ru_stime, peak, process.returncode, stderr, parts


def high_water(pid: int) -> float:
    """A process's resident high-water mark in MB (since its exec: a new program starts a new one)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def resident_parts(pid: int) -> tuple[float, float, float]:
    """A process's resident memory now, in MB: all of it, anonymous and file-backed."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    resident, anonymous, mapped = (
        int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "RssAnon", "RssFile")
    )
    return resident, anonymous, mapped


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Warning:" in line or "UserWarning" in line]


def rss_mb(pid: int) -> tuple[float, float]:
    """A process's resident memory now and its peak so far (VmRSS, VmHWM), in MB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def cpu_s(pid: int) -> float:
    """A process's CPU time so far (user and system, its finished threads included), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Served:
    """``research-mcp serve`` over stdio, spoken to as a host that cannot elicit would (line JSON-RPC)."""

    def __init__(self, cli: str, env: dict[str, str], timeout: float) -> None:
        self.process = subprocess.Popen(
            [cli, "serve"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.deadline = time.monotonic() + timeout
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request; notifications on the way are passed over."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        while True:
            ready, _, _ = select.select([self.process.stdout], [], [], self.deadline - time.monotonic())
            if not ready:
                raise TimeoutError(f"serve did not answer {method} in time")
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"serve ended while answering {method}")
            answer = json.loads(line)
            if answer.get("id") == self.next_id and "method" not in answer:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return dict(answer["result"])

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.process.stdin.flush()

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result['content']}")
        return dict(result["structuredContent"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serve_session(
    cli: str, env: dict[str, str], queries: list[str], settle: float
) -> tuple[float, float, float, float]:
    """``serve`` as a new user meets it: RSS once initialized and idle (``settle`` s after the start-up
    rescan), then each query planned and run over MCP; returns idle MB, peak MB (VmHWM) over the
    whole session, steady MB (``settle`` s after the last run ended) and the runs' CPU s."""
    served = Served(cli, env, timeout=900)
    try:
        served.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        served.notify("notifications/initialized")
        time.sleep(settle)
        idle, _ = rss_mb(served.process.pid)
        cpu_before = cpu_s(served.process.pid)
        for query in queries:
            plan = served.call("plan_research", {"query": query})
            run = served.call("execute_plan", {"plan_id": plan["id"], "wait_seconds": 50})
            while run["status"] in ("pending", "running"):
                run = served.call("execute_plan", {"run_id": run["id"], "wait_seconds": 50})
        cpu = cpu_s(served.process.pid) - cpu_before
        time.sleep(settle)
        steady, peak = rss_mb(served.process.pid)
    finally:
        served.close()
    return idle, peak, steady, cpu


def corpus_text_chars(database: Path) -> int:
    """Characters of the corpus's text as the store holds it: its documents' text, compressed or not
    (the same figure for a data folder of any version)."""
    total = 0
    with sqlite3.connect(database) as db:
        for (text,) in db.execute("SELECT text FROM corpus_documents"):
            total += len(
                zlib.decompress(text).decode("utf-8", "surrogatepass") if isinstance(text, bytes) else text
            )
    return total


def du_mb(path: Path) -> float:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 1e6


CASES = {
    "usr-share-doc": (Path("/usr/share/doc"), [DEFAULT_QUERY]),
    # git's documentation (Debian's git-doc: about 540 documents, HTML and text), two questions.
    "git-docs": (
        Path("/usr/share/doc/git-doc"),
        [
            "How do I undo the last commit but keep its changes in the working tree?",
            "What does git rebase --onto do?",
        ],
    ),
}


def measure(code: Path | None, corpus: Path, work: Path, queries: list[str], settle: float) -> None:
    """Every step on a fresh data folder under `work`, with the research_mcp package of `code`
    (a checkout's root; None: the installed one)."""
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    env = {**os.environ, "RESEARCH_MCP_HOME": str(home), "RESEARCH_MCP_CORPUS": str(corpus)}
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "QDRANT_URL"):
        env.pop(key, None)
    if code is not None:
        env["PYTHONPATH"] = str(code.resolve())
    cli = str(Path(sys.executable).parent / "research-mcp")
    print(f"## code: {code or 'installed'}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'step':<22} {'wall s':>7} {'CPU s':>7} {'peak MB':>8} {'anon+file':>10} {'exit':>4}  warnings")
    steps = [
        ("index (fresh)", [cli, "index", str(corpus)]),
        ("index (unchanged)", [cli, "index", str(corpus)]),
    ]
    steps += [
        (f"run {n} (no key)", [cli, "run", query, "--model", "extractive"])
        for n, query in enumerate(queries, 1)
    ]
    for name, command in steps:
        wall, cpu, peak, code_, stderr, parts = timed(command, env)
        found = warnings_in(stderr)
        print(
            f"{name:<22} {wall:>7.1f} {cpu:>7.1f} {peak:>8.0f} {parts:>10} {code_:>4}  {len(found)} {found[:1]}",
            flush=True,
        )
    # The runs above are stored: serve's runs of the same questions reuse them. A fresh data folder
    # (indexed again, not timed) has serve do the work as a new user's server would.
    shutil.rmtree(home, ignore_errors=True)
    timed([cli, "index", str(corpus)], env)
    started = time.perf_counter()
    idle, peak, steady, cpu = serve_session(cli, env, queries, settle)
    wall = time.perf_counter() - started - 2 * settle
    print(f"{'serve idle':<22} {'':>7} {'':>7} {idle:>8.0f}")
    print(
        f"{'serve, the runs':<22} {wall:>7.1f} {cpu:>7.1f} {peak:>8.0f}       "
        f"(peak; steady after: {steady:.0f} MB)"
    )
    text = corpus_text_chars(home / "research.db")
    data, vectors = du_mb(home), du_mb(home / "vectors")
    print(
        f"# data folder {data:.0f} MB (SQLite {data - vectors:.0f} MB, vectors {vectors:.0f} MB) "
        f"for {text / 1e6:.1f} MB of corpus text: {data / (text / 1e6):.2f}x"
    )
    print(f"# load average after {os.getloadavg()[0]:.1f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.real_corpus")
    parser.add_argument("--case", choices=sorted(CASES), default="usr-share-doc")
    parser.add_argument("--source", type=Path, help="the folder to copy (default: the case's)")
    parser.add_argument(
        "--query", action="append", help="a question to run (repeatable; default: the case's)"
    )
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        help="a checkout whose research_mcp runs the steps (repeatable: before and after in one run)",
    )
    parser.add_argument(
        "--settle", type=float, default=20.0, help="seconds serve is left idle before sampling"
    )
    parser.add_argument("--keep", type=Path, help="keep the corpus and data folder here")
    args = parser.parse_args(argv)
    source, queries = CASES[args.case]
    source, queries = args.source or source, args.query or queries
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-real-"))
    corpus = work / "corpus"
    if not corpus.exists():
        files, size = copy_corpus(source, corpus)
    else:
        files = sum(1 for p in corpus.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    print(f"# corpus: {files:,} files, {size / 1e6:.1f} MB on disk, from {source}")
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    for code in args.code or [None]:
        measure(code, corpus, work, queries, args.settle)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

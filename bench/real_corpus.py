"""Memory, time and disk on a real folder of documents, as a user meets them: index it, index it again
unchanged, run a no-key research over it, and leave ``serve`` idle on it.

Run from the repository root:

    .venv/bin/python -m bench.real_corpus [--source /usr/share/doc] [--query "..."]

The corpus is the source folder's files without changelogs and images (Debian's /usr/share/doc
here: about 2,900 files), copied once into a temporary folder. Each step runs the installed
``research-mcp`` in its own process on a fresh data folder (the same one through the steps);
figures:

- wall s: the command's wall time;
- peak MB: its peak resident memory (GNU time's maximum resident set size);
- warnings: lines on its stderr that a library wrote (Python warnings), which should be none;
- for serve: its resident memory 20 s after it answered ``initialize`` and the start-up rescan of
  the (already indexed) corpus ended, sampled from /proc;
- the data folder on disk (blocks used: the vector engine's files are sparse) beside the corpus's
  text as the store holds it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall s, peak MB of the command (GNU time's maximum resident set), its exit code, its stderr."""
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "MAXRSS_KB %M", *argv],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    lines = done.stderr.splitlines()
    peak = next((int(line.split()[1]) for line in reversed(lines) if line.startswith("MAXRSS_KB")), 0)
    stderr = "\n".join(line for line in lines if not line.startswith("MAXRSS_KB"))
    return wall, peak / 1024, done.returncode, stderr


def warnings_in(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Warning:" in line or "UserWarning" in line]


def serve_idle(env: dict[str, str], settle: float = 20.0) -> float:
    """RSS MB of ``serve`` once initialized and idle."""
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "research-mcp"), "serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    server.stdin.write(json.dumps(hello) + "\n")
    server.stdin.flush()
    server.stdout.readline()
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    server.stdin.flush()
    time.sleep(settle)
    rss = 0.0
    for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    server.stdin.close()
    server.wait(timeout=60)
    return rss


def du_mb(path: Path) -> float:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.real_corpus")
    parser.add_argument("--source", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--keep", type=Path, help="keep the corpus and data folder here")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-real-"))
    corpus, home = work / "corpus", work / "home"
    if not corpus.exists():
        files, size = copy_corpus(args.source, corpus)
    else:
        files = sum(1 for p in corpus.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    env = {**os.environ, "RESEARCH_MCP_HOME": str(home), "RESEARCH_MCP_CORPUS": str(corpus)}
    for key in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "QDRANT_URL"):
        env.pop(key, None)
    cli = [str(Path(sys.executable).parent / "research-mcp")]
    print(f"# corpus: {files:,} files, {size / 1e6:.1f} MB on disk, from {args.source}")
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"{'step':<22} {'wall s':>7} {'peak MB':>8} {'exit':>4}  warnings")
    steps = [
        ("index (fresh)", [*cli, "index", str(corpus)]),
        ("index (unchanged)", [*cli, "index", str(corpus)]),
        ("run (no key)", [*cli, "run", args.query, "--model", "extractive"]),
    ]
    for name, command in steps:
        wall, peak, code, stderr = timed(command, env)
        found = warnings_in(stderr)
        print(f"{name:<22} {wall:>7.1f} {peak:>8.0f} {code:>4}  {len(found)} {found[:1]}", flush=True)
    print(f"{'serve idle':<22} {'':>7} {serve_idle(env):>8.0f}", flush=True)
    with sqlite3.connect(home / "research.db") as db:
        text = db.execute("SELECT COALESCE(SUM(LENGTH(text)), 0) FROM corpus_chunks").fetchone()[0]
    data = du_mb(home)
    print(
        f"# data folder {data:.0f} MB (SQLite {du_mb(home) - du_mb(home / 'vectors'):.0f} MB, vectors "
        f"{du_mb(home / 'vectors'):.0f} MB) for {text / 1e6:.1f} MB of corpus text: {data / (text / 1e6):.1f}x"
    )
    print(f"# load average after {os.getloadavg()[0]:.1f}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""The hostile-document matrix: each document indexed alone as a corpus file, timed and measured.

    .venv/bin/python -m bench.hostile_docs [--timeout 5] [--only NAME]

Documents: PDFs (one 10 MB content stream, a 70 MB flate bomb, arrays nested 100,000 deep, a page
tree that loops, 3,000 pages, an unknown filter), HTML (340,000 nested spans, 200,000 nested divs,
billion laughs, invalid UTF-8, a false charset), text (200 KB of random bytes, 9.9 MB of prose),
and special files named like documents (a FIFO, a character device like /dev/zero, a Unix socket, a
10 GB sparse .txt, a 40 MB sparse .pdf). Built by `tests/sources/hostile.py`.

Each document runs in its own process: a store, a corpus folder holding that one file, and a
`DocumentParser` with `--timeout` as the source timeout, warmed up on a small PDF first (so a worker
is running, as in a server). Then `Corpus.index()` is timed. Printed per document: the outcome (how
many documents were indexed, or the note that said why not), the seconds, and the memory it took:
the growth of this process's peak RSS plus the growth of the parser worker's (peak RSS of the
workers, read once they are stopped, minus the idle worker's RSS). The bound the server promises:
each ends within the source timeout + 1 s and +300 MB.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from research_mcp.sources.corpus import Corpus
from research_mcp.sources.parsing import DocumentParser
from research_mcp.storage.store import Store
from tests.sources import hostile
from tests.sources.pdf import minimal_pdf


def _write(name: str, build: Callable[[], bytes]) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(build())


def _fifo(folder: Path) -> None:
    os.mkfifo(folder / "pipe.txt")


def _device(folder: Path) -> None:
    os.mknod(folder / "zero.txt", 0o644 | 0o020000, os.makedev(1, 5))  # a character device: /dev/zero


def _sparse(name: str, size: int) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        with open(folder / name, "wb") as sparse:
            sparse.truncate(size)

    return make


def _prose() -> bytes:
    sentence = b"Spring tides follow the new and the full moon, neap tides the quarter moons. "
    return sentence * (9_900_000 // len(sentence))


MATRIX: dict[str, Callable[[Path], None]] = {
    "pdf: one 10 MB content stream": _write("stream.pdf", lambda: hostile.huge_stream_pdf(10)),
    "pdf: flate bomb (70 MB inflated)": _write("bomb.pdf", lambda: hostile.flate_bomb_pdf(70)),
    "pdf: arrays nested 100,000 deep": _write("deep.pdf", hostile.deep_array_pdf),
    "pdf: page tree loop, /Count 1e6": _write("loop.pdf", hostile.page_tree_loop_pdf),
    "pdf: 3,000 pages": _write("pages.pdf", hostile.many_pages_pdf),
    "pdf: unknown filter": _write("filter.pdf", hostile.unknown_filter_pdf),
    "html: 340,000 nested spans": _write("spans.html", hostile.span_soup_html),
    "html: 200,000 nested divs": _write("divs.html", hostile.deep_div_html),
    "html: billion laughs": _write("laughs.html", hostile.entity_bomb_html),
    "html: invalid UTF-8": _write("bad-utf8.html", hostile.invalid_utf8_html),
    "html: declares UTF-16, is ASCII": _write("charset.html", hostile.wrong_charset_html),
    "txt: 200 KB random bytes": _write("random.txt", hostile.invalid_utf8_text),
    "txt: 9.9 MB of prose": _write("prose.txt", _prose),
    "FIFO pipe.txt": _fifo,
    "char device zero.txt": _device,
    "socket sock.md": lambda folder: socket.socket(socket.AF_UNIX).bind(str(folder / "sock.md")),
    "sparse 10 GB .txt": _sparse("huge.txt", 10 * 2**30),
    "sparse 40 MB .pdf": _sparse("zeros.pdf", 40 * 2**20),
}


def _children_rss_mb() -> float:
    """The RSS of this process's live children (the parser workers), from /proc."""
    total = 0.0
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
    return total


def measure(name: str, timeout: float) -> dict[str, object]:
    """Index the one document in this process; the figures as a dict."""
    logging.disable(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as tmp:
        home, folder, warm = Path(tmp) / "home", Path(tmp) / "corpus", Path(tmp) / "warm"
        home.mkdir()
        folder.mkdir()
        warm.mkdir()
        (warm / "warm.pdf").write_bytes(minimal_pdf("Warm up", "Warm"))
        store = Store(home / "research.db")
        parser = DocumentParser(timeout=timeout)
        try:
            Corpus(store, [warm], parser=parser).index()  # a worker is up, as in a running server
            worker_idle = _children_rss_mb()
            own_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            try:
                MATRIX[name](folder)
            except PermissionError:  # mknod needs root
                return {"outcome": "not measured: making it needs root", "seconds": None}
            started = time.monotonic()
            report = Corpus(store, [folder], parser=parser).index()
            seconds = time.monotonic() - started
        finally:
            parser.close()
            store.close()
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - own_before
        worker = max(0.0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 - worker_idle)
    outcome = f"indexed {report.added}" if report.added else "; ".join(report.errors) or "nothing indexed"
    return {"outcome": outcome, "seconds": seconds, "own_mb": own, "worker_mb": worker}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--timeout", type=float, default=5.0, help="the source timeout, seconds")
    options.add_argument("--only", help="measure this one document in this process and print JSON")
    args = options.parse_args()
    if args.only:
        print(json.dumps(measure(args.only, args.timeout)))
        return
    print(
        f"hostile documents, each indexed alone; source timeout {args.timeout:g} s; bound: timeout + 1 s, +300 MB"
    )
    print(f"{'document':<34} {'s':>6} {'+MB':>6}  outcome")
    worst_s = worst_mb = 0.0
    within = measured = 0
    for name in MATRIX:
        done = subprocess.run(
            [sys.executable, "-m", "bench.hostile_docs", "--only", name, "--timeout", str(args.timeout)],
            capture_output=True,
            text=True,
            timeout=args.timeout * 4 + 120,
        )
        if done.returncode != 0:
            print(f"{name:<34} {'-':>6} {'-':>6}  FAILED: {done.stderr.strip().splitlines()[-1:]}")
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        if row["seconds"] is None:
            print(f"{name:<34} {'-':>6} {'-':>6}  {row['outcome']}")
            continue
        seconds, mb = float(row["seconds"]), float(row["own_mb"]) + float(row["worker_mb"])
        worst_s, worst_mb = max(worst_s, seconds), max(worst_mb, mb)
        measured += 1
        within += seconds <= args.timeout + 1 and mb <= 300
        outcome = str(row["outcome"])
        print(f"{name:<34} {seconds:>6.2f} {mb:>6.0f}  {outcome[:150]}")
    print(
        f"within the bound: {within} of {len(MATRIX)}; slowest {worst_s:.2f} s, most memory +{worst_mb:.0f} MB"
    )


if __name__ == "__main__":
    main()

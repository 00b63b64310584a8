"""Mutated-PDF fuzz: thousands of broken PDFs through the document parser the server uses.

    .venv/bin/python -m bench.pdf_fuzz [--count 10000] [--seed 0] [--timeout 5] [--in-process]

Each PDF is one of three valid seeds with one to eight random edits (byte flips, cuts, duplicated
spans, swapped PDF tokens such as filter names, huge or negative numbers, truncation; see
`tests/sources/hostile.py`), parsed by `DocumentParser` (a worker process with the time limit and
a 256 MB memory limit) exactly as a fetched page or a corpus file is. Prints the outcomes: text,
SourceError, crashes (any other exception out of the parser, which the server would have shown as
a bare "Error executing tool" or which would have failed a run or `index`), bare errors (a
SourceError that does not name the file or give a reason), time limits hit, the slowest and the
99th-percentile time, and the largest worker's peak RSS.

`--in-process` parses with `extract_text` in this process instead (no worker, no limits), which is
what the server did before: it counts the exception types that escaped.
"""

from __future__ import annotations

import argparse
import collections
import logging
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from research_mcp.core.errors import SourceError
from research_mcp.sources.parsing import DocumentParser
from research_mcp.sources.text import extract_text
from tests.sources.hostile import mutated_pdfs
from tests.sources.pdf import minimal_pdf


def classify(name: str, parse: object) -> tuple[str, float, str]:
    """``(outcome, seconds, detail)`` of parsing one document."""
    assert callable(parse)
    started = time.monotonic()
    try:
        parse()
    except SourceError as err:
        message = str(err)
        elapsed = time.monotonic() - started
        if repr(name) not in message or len(message) < len(repr(name)) + 20:
            return "bare error", elapsed, message
        return ("time limit" if "took longer than" in message else "source error"), elapsed, message
    except Exception as exc:
        return "crash", time.monotonic() - started, type(exc).__name__
    return "text", time.monotonic() - started, ""


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--count", type=int, default=10_000)
    options.add_argument("--seed", type=int, default=0)
    options.add_argument(
        "--timeout", type=float, default=5.0, help="seconds per document (the source timeout)"
    )
    options.add_argument("--memory-mb", type=int, default=256)
    options.add_argument("--workers", type=int, default=2)
    options.add_argument("--in-process", action="store_true", help="the old path: extract_text, no worker")
    args = options.parse_args()
    logging.disable(logging.CRITICAL)  # pypdf warns for every malformed object

    outcomes: collections.Counter[str] = collections.Counter()
    crashes: collections.Counter[str] = collections.Counter()
    times: list[float] = []
    examples: dict[str, str] = {}
    started = time.monotonic()
    with DocumentParser(timeout=args.timeout, memory_mb=args.memory_mb, max_workers=args.workers) as parser:

        def one(item: tuple[str, bytes]) -> tuple[str, float, str]:
            name, data = item
            if args.in_process:
                return classify(name, lambda: extract_text(data, "application/pdf", name))
            return classify(name, lambda: parser.extract(data, "application/pdf", name))

        with ThreadPoolExecutor(1 if args.in_process else args.workers) as pool:
            if not args.in_process:  # start the workers first, as in a running server: times are per document
                warm = minimal_pdf("Warm up", "Warm")
                list(
                    pool.map(
                        lambda _: parser.extract(warm, "application/pdf", "warm.pdf"), range(args.workers)
                    )
                )
            for outcome, seconds, detail in pool.map(one, mutated_pdfs(args.count, args.seed)):
                outcomes[outcome] += 1
                times.append(seconds)
                if outcome == "crash":
                    crashes[detail] += 1
                examples.setdefault(outcome, detail)
    wall = time.monotonic() - started
    times.sort()
    worker_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if args.in_process:
        mode = "parsed in this process by extract_text, no limits (the old path)"
    else:
        mode = f"parsed by DocumentParser workers, timeout {args.timeout:g} s"
    print(f"mutated PDFs: {args.count} (seed {args.seed}), {mode}")
    for outcome in ("text", "source error", "time limit", "bare error", "crash"):
        print(f"  {outcome:<13} {outcomes[outcome]:>6}")
    if crashes:
        print("  crashes by exception type: " + ", ".join(f"{k} {v}" for k, v in crashes.most_common()))
    for outcome in ("source error", "bare error"):
        if outcome in examples:
            print(f"  e.g. {outcome}: {examples[outcome][:160]}")
    print(f"  max time {times[-1]:.2f} s, p99 {times[int(len(times) * 0.99) - 1]:.3f} s, wall {wall:.0f} s")
    if args.in_process:
        print(f"  peak RSS of this process {own_peak:.0f} MB")
    else:
        print(f"  peak RSS of the largest worker {worker_peak:.0f} MB, of this process {own_peak:.0f} MB")
    sys.exit(0)


if __name__ == "__main__":
    main()

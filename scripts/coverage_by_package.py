"""Prints the line coverage of each package of research_mcp from the data a `pytest --cov` run left
in .coverage (`make coverage` runs both), one line per package, then the whole:

    python scripts/coverage_by_package.py                       # the table
    python scripts/coverage_by_package.py --missing answering   # and the lines never run, per file

Top-level modules (research_mcp/service.py, handles.py, ...) are summed up as one row, "(top level)".
Files no test imported count with every line missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import coverage

PACKAGE = "research_mcp"


def package_of(path: str) -> str:
    """``research_mcp/server/app.py`` -> ``server``; a module directly in the package -> ``(top level)``."""
    parts = Path(path).parts
    inside = parts[parts.index(PACKAGE) + 1 :] if PACKAGE in parts else parts
    return inside[0] if len(inside) > 1 else "(top level)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--data-file", default=".coverage")
    parser.add_argument("--missing", nargs="*", default=[], metavar="PACKAGE", help="list lines never run")
    args = parser.parse_args()
    if not Path(args.data_file).exists():
        print(f"{args.data_file}: no coverage data; run `make coverage`", file=sys.stderr)
        return 1
    cov = coverage.Coverage(data_file=args.data_file)
    cov.load()
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "coverage.json"
        cov.json_report(outfile=str(report))
        files = json.loads(report.read_text(encoding="utf-8"))["files"]
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path, entry in files.items():
        summary = entry["summary"]
        totals[package_of(path)][0] += summary["covered_lines"]
        totals[package_of(path)][1] += summary["num_statements"]
    print(f"{'package':<16} {'lines':>7} {'run':>7} {'cover':>6}")
    for name, (run, lines) in sorted(totals.items()):
        print(f"{name:<16} {lines:>7,} {run:>7,} {run / max(lines, 1):>6.1%}")
    run, lines = (sum(values) for values in zip(*totals.values(), strict=True))
    print(f"{'all':<16} {lines:>7,} {run:>7,} {run / max(lines, 1):>6.1%}")
    for wanted in args.missing:
        print(f"\nlines never run in {PACKAGE}/{wanted}:")
        for path, entry in sorted(files.items()):
            if package_of(path) == wanted and entry["missing_lines"]:
                print(f"  {path}: {ranges(entry['missing_lines'])}")
    return 0


def ranges(lines: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``3-5, 9``."""
    spans: list[list[int]] = []
    for line in lines:
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


if __name__ == "__main__":
    sys.exit(main())

"""Every corpus reader fed pathological inputs of growing size: time and peak memory per size.

    .venv/bin/python -m bench.reader_fuzz [--sizes 131072,524288,2097152] [--budget 110]

Readers: roff (``roff.render_roff``), HTML (``html_reader.read_html``), AsciiDoc
(``asciidoc.render_asciidoc``, and ``expand_includes`` on include cycles and fan-outs), reStructuredText
(``readers.render_rst``), PDF (pypdf through ``text.extract_text``) and the passage splitter every
stored text goes through (``passages.split_passages``, ``document_kind``). Inputs: long lines of
unterminated escapes and quotes, deep nesting, huge tables, unterminated blocks, include cycles.

Each case runs in a forked child, on an input built before the fork: the child times the reader and
reports its peak RSS growth (``ru_maxrss`` at the end minus its resident size at the start). Printed
per case: seconds and MB at each size, and the time ratio between the largest and the smallest
size against the size ratio (linear: about the same; quadratic: its square). Bounded: a case that
takes more than ``CASE_SECONDS`` is stopped (and its larger sizes skipped), and no case starts after
``--budget`` seconds, so the run stops by itself in about two minutes at most.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from research_mcp.answering.passages import document_kind, split_passages
from research_mcp.sources.asciidoc import expand_includes, render_asciidoc
from research_mcp.sources.html_reader import read_html
from research_mcp.sources.readers import render_rst
from research_mcp.sources.roff import render_roff
from research_mcp.sources.text import extract_text

#: A case running longer than this at one size is stopped, and not run at larger sizes.
CASE_SECONDS = 20.0
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _pdf(size: int) -> bytes:
    from tests.sources.hostile import pdf_of, text_stream

    line = _repeat("tide ", size)
    return pdf_of([zlib.compress(text_stream(line))], filters=b"/FlateDecode")


Case = tuple[str, Callable[[int], object], Callable[[object], object]]

CASES: list[Case] = [
    ("roff: one line of \\[ without ]", lambda n: ".TH E 5\n" + _repeat("\\[", n), render_roff),
    ("roff: one line of \\f[ and \\*[", lambda n: ".TH E 5\n" + _repeat("\\f[\\*[", n), render_roff),
    ("roff: .RS nested without .RE", lambda n: ".TH E 5\n" + _repeat(".RS\nx\n", n), render_roff),
    ("roff: .TP items", lambda n: ".TH E 5\n" + _repeat(".TP\n\\fB-x\\fR\nText of x.\n", n), render_roff),
    ("roff: unterminated quoted argument", lambda n: '.TH E 5\n.B "' + _repeat('a "" ', n), render_roff),
    ("html: nested <div>", lambda n: ("<html><body>" + _repeat("<div>", n)).encode(), read_html),
    ("html: unclosed <p><b>", lambda n: ("<html><body>" + _repeat("<p><b>x", n)).encode(), read_html),
    (
        "html: a huge table",
        lambda n: ("<table>" + _repeat("<tr><td>a</td><td>b</td><td>c</td></tr>", n) + "</table>").encode(),
        read_html,
    ),
    (
        "html: <dl> of <dt>/<dd>",
        lambda n: ("<dl>" + _repeat("<dt>-x</dt><dd>Text.</dd>", n)).encode(),
        read_html,
    ),
    ("asciidoc: a line of 'quotes", lambda n: "= T\n\n" + _repeat("'a *b _c +d ", n), render_asciidoc),
    (
        "asciidoc: unterminated macros",
        lambda n: "= T\n\n" + _repeat("linkgit:x[ <<a, {b ", n),
        render_asciidoc,
    ),
    (
        "asciidoc: nested term:: lists",
        lambda n: "= T\n\n" + _repeat("a::\nb:::\nc::::\nText.\n+\n--\n", n),
        render_asciidoc,
    ),
    ("asciidoc: unclosed ifdef::", lambda n: "= T\n\n" + _repeat("ifdef::x[]\ntext\n", n), render_asciidoc),
    (
        "asciidoc: unterminated ---- block",
        lambda n: "= T\n\n----\n" + _repeat("code line\n", n),
        render_asciidoc,
    ),
    (
        "asciidoc: a huge |=== table",
        lambda n: "= T\n\n|===\n" + _repeat("|a |b |c\n", n) + "|===\n",
        render_asciidoc,
    ),
    (
        "rst: adornments and roles",
        lambda n: _repeat("Title\n=====\n\n:ref:`x` ``y`` `z <u>`_\n\n", n),
        render_rst,
    ),
    ("pdf: one long text stream", _pdf, lambda data: extract_text(data, "application/pdf", "x.pdf")),
    ("passages: deep indentation", lambda n: _repeat("t\n" + " " * 40 + "x\n", n), split_passages),
    ("passages: one paragraph, no sentence end", lambda n: _repeat("word ", n), split_passages),
    (
        "passages: a huge table",
        lambda n: "| a | b |\n|---|---|\n" + _repeat("| 1 | 2 |\n", n),
        split_passages,
    ),
    ("passages: headings only", lambda n: _repeat("# h\n", n), split_passages),
    (
        "changelog test: version lines",
        lambda n: _repeat("1.2.3 (2020-01-01)\n", n),
        lambda t: document_kind(t, ""),
    ),
]


def _include_case(size: int) -> tuple[str, Path, Path]:
    """A folder where a.adoc includes b.adoc 16 times and b.adoc includes a.adoc (a cycle), each
    padded to ``size`` / 64: the expansion stops at the cycle and within the size cap."""
    root = Path(tempfile.mkdtemp(prefix="reader-fuzz-"))
    pad = _repeat("Padding text. ", max(1, size // 64))
    (root / "a.adoc").write_text("= A\n\n" + pad + "\n" + "include::b.adoc[]\n" * 16)
    (root / "b.adoc").write_text(pad + "\ninclude::a.adoc[]\n" * 16)
    return (root / "a.adoc").read_text(), root / "a.adoc", root


def _include_tree(size: int) -> tuple[str, Path, Path]:
    """Files l0 .. l5, each including the next 16 times (no cycle): 16^5 includes unbounded, stopped
    at ``MAX_INCLUDES`` includes and the size cap."""
    root = Path(tempfile.mkdtemp(prefix="reader-fuzz-"))
    pad = _repeat("Padding text. ", max(1, size // 64))
    for level in range(6):
        (root / f"l{level}.adoc").write_text(pad + "\n" + f"include::l{level + 1}.adoc[]\n" * 16)
    return (root / "l0.adoc").read_text(), root / "l0.adoc", root


def _run_child(build: object, reader: Callable[[object], object]) -> dict[str, float | str]:
    """Run ``reader(build)`` in a forked child; its seconds and peak RSS growth (MB)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        signal.alarm(int(CASE_SECONDS) + 1)
        with open("/proc/self/statm") as statm:
            resident = int(statm.read().split()[1]) * _PAGE
        start = time.perf_counter()
        try:
            reader(build)
        except Exception as exc:  # a reader refusing an input is an outcome, not a crash of the bench
            failed = f"{type(exc).__name__}"[:20]
        else:
            failed = ""
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        answer = {"s": seconds, "mb": max(0, peak - resident) / 2**20, "error": failed}
        os.write(write_end, json.dumps(answer).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        data = answer.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"s": CASE_SECONDS, "mb": float("nan"), "stopped": 1.0 if os.WIFSIGNALED(status) else 0.0}
    return json.loads(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="131072,524288,2097152", help="input sizes in characters")
    parser.add_argument("--budget", type=float, default=110.0, help="no case starts after this many seconds")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    began = time.monotonic()
    header = "".join(f"{f'{size // 1024} KB':>18}" for size in sizes)
    print(f"{'case':42}{header}   time ratio (size ratio {sizes[-1] // sizes[0]})")
    cases: list[tuple[str, Callable[[int], object], Callable[[object], object]]] = list(CASES)
    cases.append(("asciidoc: include cycle, 16-way fan-out", _include_case, _expand))
    cases.append(("asciidoc: includes 16 wide, 6 deep", _include_tree, _expand))
    for name, build, reader in cases:
        cells, times = [], []
        for size in sizes:
            if time.monotonic() - began > args.budget or (times and times[-1] >= CASE_SECONDS):
                cells.append(f"{'skipped':>18}")
                continue
            result = _run_child(build(size), reader)
            times.append(float(result["s"]))
            shown = "stopped" if result.get("stopped") else f"{result['s']:.3f} s {result['mb']:.0f} MB"
            if result.get("error"):
                shown = f"{result['error']} {result['s']:.2f} s"
            cells.append(f"{shown:>18}")
        ratio = f"{times[-1] / max(times[0], 1e-4):.1f}" if len(times) == len(sizes) else "-"
        print(f"{name[:41]:42}{''.join(cells)}   {ratio}", flush=True)
    print(f"total {time.monotonic() - began:.0f} s")


def _expand(case: object) -> object:
    text, file, root = case  # type: ignore[misc]
    return expand_includes(text, file, root, 10 * 2**20)


if __name__ == "__main__":
    main()

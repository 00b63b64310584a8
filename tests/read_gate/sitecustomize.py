"""Imported at start-up by a `research-mcp` process that a test runs with this folder first on
PYTHONPATH (``tests.gate.ReadGate.env``); it does nothing unless RESEARCH_MCP_TEST_READ_GATE is set.

Then the corpus indexer's file reads (``research_mcp.sources.indexing.read_regular_file``, the
boundary where a file's bytes come in) let RESEARCH_MCP_TEST_READS files through, and hold the next
one until the test opens the gate: the file ``open`` appears in the gate folder. On holding, the
file ``held`` is written there, so the test knows that exactly that many documents are committed
and that indexing is still in progress, however fast or slow the machine is.

With RESEARCH_MCP_TEST_SCAN_GATE set, a pass's scan of the corpus folders (``indexing._scan``) holds
before it begins until ``open`` appears in that folder, writing ``held`` there; a search that waits
for the scan (``IndexProgress.wait_scanned``) writes ``waiting`` first, and waits as long as the
gate may hold (the server's own bound, ``library.SCAN_WAIT_S``, 10 s, is lifted to LONGEST_HOLD_S): the
test knows the search is waiting on a scan in progress, and opens the gate, without a clock.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

#: A bound on the hold, should the test that holds it be gone without opening it.
LONGEST_HOLD_S = 600.0


def _install(folder: Path, reads: int) -> None:
    from research_mcp.sources import indexing

    real = indexing.read_regular_file
    lock = threading.Lock()
    done = [0]

    def gated(path: Path, cap: int) -> bytes:
        with lock:
            done[0] += 1
            held = done[0] > reads
        if held:
            _hold(folder)
        return real(path, cap)

    indexing.read_regular_file = gated  # type: ignore[assignment]


def _hold(folder: Path) -> None:
    if not (folder / "open").exists():
        (folder / "held").touch()
        ends = time.monotonic() + LONGEST_HOLD_S
        while not (folder / "open").exists() and time.monotonic() < ends:
            time.sleep(0.01)  # paces the look at the gate; the test decides when it opens


def _install_scan_gate(folder: Path) -> None:
    from research_mcp.sources import indexing
    from research_mcp.sources.index_progress import IndexProgress

    real_scan = indexing._scan
    real_wait = IndexProgress.wait_scanned

    def gated_scan(*args: object, **kwargs: object) -> object:
        _hold(folder)
        return real_scan(*args, **kwargs)  # type: ignore[arg-type]

    def noted_wait(self: IndexProgress, timeout: float) -> bool:
        (folder / "waiting").touch()
        return real_wait(self, max(timeout, LONGEST_HOLD_S))

    indexing._scan = gated_scan  # type: ignore[assignment]
    IndexProgress.wait_scanned = noted_wait  # type: ignore[method-assign]


if os.environ.get("RESEARCH_MCP_TEST_SCAN_GATE"):
    _install_scan_gate(Path(os.environ["RESEARCH_MCP_TEST_SCAN_GATE"]))

if os.environ.get("RESEARCH_MCP_TEST_READ_GATE"):
    _install(
        Path(os.environ["RESEARCH_MCP_TEST_READ_GATE"]), int(os.environ.get("RESEARCH_MCP_TEST_READS", "0"))
    )

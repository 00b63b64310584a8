"""Imported at start-up by a `research-mcp` process that a test runs with this folder first on
PYTHONPATH (``tests.gate.ReadGate.env``); it does nothing unless RESEARCH_MCP_TEST_READ_GATE is set.

Then the corpus indexer's file reads (``research_mcp.sources.indexing.read_regular_file``, the
boundary where a file's bytes come in) let RESEARCH_MCP_TEST_READS files through, and hold the next
one until the test opens the gate: the file ``open`` appears in the gate folder. On holding, the
file ``held`` is written there, so the test knows that exactly that many documents are committed
and that indexing is still in progress, however fast or slow the machine is.
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
        if held and not (folder / "open").exists():
            (folder / "held").touch()
            ends = time.monotonic() + LONGEST_HOLD_S
            while not (folder / "open").exists() and time.monotonic() < ends:
                time.sleep(0.01)  # paces the look at the gate; the test decides when it opens
        return real(path, cap)

    indexing.read_regular_file = gated  # type: ignore[assignment]


if os.environ.get("RESEARCH_MCP_TEST_READ_GATE"):
    _install(
        Path(os.environ["RESEARCH_MCP_TEST_READ_GATE"]), int(os.environ.get("RESEARCH_MCP_TEST_READS", "0"))
    )

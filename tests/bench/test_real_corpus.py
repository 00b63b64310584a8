"""bench/real_corpus.py's measure of one command: its CPU, its peak memory, and what that was made of."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bench.real_corpus import timed

HOLDS_80_MB = (
    "import time; held = bytearray(80 * 2**20); held[::4096] = b'x' * len(held[::4096]); time.sleep(0.5)"
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="samples the process from /proc")
def test_a_command_holding_80_mb_of_heap_is_measured_at_its_peak_with_the_heap_named() -> None:
    # The measuring process is large (as a test run is): its pages must not count as the command's.
    parent = bytearray(300 * 2**20)
    parent[::4096] = b"x" * len(parent[::4096])
    wall, cpu, peak, code, stderr, parts = timed([sys.executable, "-c", HOLDS_80_MB], dict(os.environ))
    del parent

    assert (code, stderr) == (0, "")
    assert 80 <= peak < 200 and 0 < cpu <= wall
    anonymous, mapped = (float(part) for part in parts.split("+"))
    assert anonymous >= 80 and mapped > 0

"""Holding a `research-mcp` process's corpus indexing in progress until the test lets it go on.

A test that needs indexing to be under way (a search that says how much it covered, a Ctrl-C that
keeps what was committed) must not race the indexer: on an idle machine the indexer wins, on a busy
one the test does. ``ReadGate.env`` starts the process with ``tests/read_gate/sitecustomize.py``,
which lets a given number of files be read and holds the next read until ``ReadGate.open``.
``ScanGate.env`` holds a pass before its scan of the folders, and says when a search waits for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

import research_mcp

#: The folder that holds ``sitecustomize.py``, put first on the process's PYTHONPATH.
SITE = Path(__file__).with_name("read_gate")
#: The checkout whose research_mcp the test imported: the process runs the same code.
REPO = Path(research_mcp.__file__).resolve().parent.parent


@dataclass(frozen=True)
class ReadGate:
    folder: Path

    def env(self, reads: int) -> dict[str, str]:
        """The environment that makes a process read ``reads`` corpus files, then hold the next."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return {
            "PYTHONPATH": os.pathsep.join([str(SITE), str(REPO)]),
            "RESEARCH_MCP_TEST_READ_GATE": str(self.folder),
            "RESEARCH_MCP_TEST_READS": str(reads),
        }

    @property
    def held(self) -> bool:
        """Whether the process is holding a read: the files before it are committed."""
        return (self.folder / "held").exists()

    def open(self) -> None:
        """Let the held read, and every later one, go on."""
        (self.folder / "open").touch()

    async def wait_held(self, timeout: float = 120) -> None:
        with anyio.fail_after(timeout):
            while not self.held:
                await anyio.sleep(0.02)  # paces the look; the outcome is the file's presence

    def wait_held_sync(self, still_running: Callable[[], bool], timeout: float = 120) -> None:
        """As wait_held, in a test without an event loop; fails at once if the process ended."""
        deadline = time.monotonic() + timeout
        while not self.held:
            assert still_running(), "the process ended before its indexing reached the gate"
            assert time.monotonic() < deadline, f"indexing did not reach the gate in {timeout} s"
            time.sleep(0.02)  # paces the look


@dataclass(frozen=True)
class ScanGate:
    """A pass held before it scans the corpus folders until ``open``; the process writes ``held`` on
    holding and ``waiting`` when a search waits for the scan."""

    folder: Path

    def env(self) -> dict[str, str]:
        self.folder.mkdir(parents=True, exist_ok=True)
        return {
            "PYTHONPATH": os.pathsep.join([str(SITE), str(REPO)]),
            "RESEARCH_MCP_TEST_SCAN_GATE": str(self.folder),
        }

    def open(self) -> None:
        (self.folder / "open").touch()

    def says(self, name: str) -> bool:
        """Whether the process wrote ``name`` (held, waiting) in the gate folder."""
        return (self.folder / name).exists()

    async def wait_for(self, name: str, timeout: float = 120) -> None:
        """Until the process writes ``name`` (held, waiting) in the gate folder; the bound stops a hang."""
        with anyio.fail_after(timeout):
            while not self.says(name):
                await anyio.sleep(0.02)  # paces the look; the outcome is the file's presence

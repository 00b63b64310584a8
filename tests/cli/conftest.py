"""The command line as a person runs it: the installed `research-mcp` script in a subprocess.

`cli_env` is an environment with no keys and the extractive backend (no model, no network);
`harbour` is one real `research-mcp run` over a small corpus of notes, made once per test module,
that the tests of `runs`, `show` and `export` read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SCRUBBED

SCRIPT = Path(sys.executable).parent / "research-mcp"
QUESTION = "How do people cross the harbour?"
HOSTILE_TITLE = "<script>alert(1)</script> Ferry timetable"
NOTES = {
    "bridge.md": "# Harbour bridge\n\nThe harbour bridge opened in 1932 after eight years of construction. "
    "It carries eight lanes of road traffic and two railway tracks across the harbour.\n",
    "tunnel.md": "# Harbour tunnel\n\nThe harbour tunnel opened in 1992 to relieve traffic on the bridge. "
    "It carries four lanes of road traffic under the harbour.\n",
    "ferries.md": f"# {HOSTILE_TITLE}\n\nFerries have crossed the harbour since 1840. "
    "The ferry fleet carries about fifteen million passengers across the harbour each year.\n",
}


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in SCRUBBED}
    env.update({"RESEARCH_MCP_HOME": str(home), "RESEARCH_MCP_MODEL": "extractive", "HF_HUB_OFFLINE": "1"})
    env.update(extra)
    return env


def cli(*args: str, env: dict[str, str], timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """Run `research-mcp ARGS` (stdin closed, stdout and stderr captured, so neither is a terminal)."""
    return subprocess.run(
        [str(SCRIPT), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@dataclass(frozen=True)
class FinishedRun:
    run_id: str
    env: dict[str, str]
    corpus: Path
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def harbour(tmp_path_factory: pytest.TempPathFactory) -> FinishedRun:
    if not SCRIPT.exists():
        pytest.fail("the research-mcp console script is not installed: run `make test`")
    root = tmp_path_factory.mktemp("harbour")
    corpus = write_corpus(root / "notes")
    env = cli_env(root / "home")
    done = cli("run", QUESTION, "--corpus", str(corpus), env=env)
    assert done.returncode == 0, done.stderr
    listed = cli("runs", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    (run,) = json.loads(listed.stdout)
    return FinishedRun(run["id"], env, corpus, done.stdout, done.stderr)

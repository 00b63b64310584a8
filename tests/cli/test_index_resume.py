"""`research-mcp index` interrupted with Ctrl-C keeps what it did; run again, it reads only the rest.

And `doctor` says when the corpus folders leave nothing to search, and how to fix that.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import research_mcp
from research_mcp.core.config import Settings
from research_mcp.server.app import open_knowledge_index
from research_mcp.sources.indexing import EMBED_BATCH
from tests.cli.conftest import SCRIPT, cli, cli_env, write_corpus
from tests.gate import ReadGate
from tests.server.test_startup import write_notes

NOTES = 200
_WITH_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
COMMITTED_BEFORE_CTRL_C = 20


def documents(home: Path) -> int:
    path = home / "research.db"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM corpus_documents").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not made yet, or a write holds it: look again
        return 0


@pytest.mark.timeout(300)  # two indexing processes embedding 200 notes, on cores shared with others
def test_an_interrupted_index_keeps_its_documents_and_the_next_reads_only_the_rest(tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", NOTES)
    home = tmp_path / "home"
    # Held at the gate after 20 notes: Ctrl-C comes while indexing is under way on any machine.
    gate = ReadGate(tmp_path / "gate")
    env = cli_env(home)
    indexing = subprocess.Popen(
        # Ctrl-C as at a terminal: SIGINT's default restored first, since a suite started as a
        # background job (`pytest &`) passes SIGINT on ignored, and an ignored SIGINT stays ignored.
        [sys.executable, "-c", _WITH_SIGINT, str(SCRIPT), "index", str(notes)],
        env={**env, **gate.env(reads=COMMITTED_BEFORE_CTRL_C)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        gate.wait_held_sync(lambda: indexing.poll() is None)
        # Two files are read at once: the 20th may still be on its way to the store.
        deadline = time.monotonic() + 60
        while documents(home) < COMMITTED_BEFORE_CTRL_C and time.monotonic() < deadline:
            time.sleep(0.05)
        at_ctrl_c = documents(home)
        indexing.send_signal(signal.SIGINT)
        _, stderr = indexing.communicate(timeout=120)
    finally:
        gate.open()
        if indexing.poll() is None:
            indexing.kill()
            indexing.communicate()
    kept = documents(home)

    assert indexing.returncode == 130, f"{stderr}; {at_ctrl_c} indexed at Ctrl-C"
    assert kept == at_ctrl_c == COMMITTED_BEFORE_CTRL_C
    assert f"interrupted: {kept} documents indexed so far are kept" in stderr

    again = cli("index", str(notes), env=env, timeout=240)

    assert again.returncode == 0, again.stderr
    assert f"{NOTES - kept} added, 0 updated, {kept} unchanged, 0 removed" in again.stdout
    embedded = int(re.search(r"(\d+) chunks embedded", again.stdout).group(1))  # type: ignore[union-attr]
    # One chunk per note: those not yet read, and at most the one batch in flight at Ctrl-C.
    assert NOTES - kept <= embedded <= NOTES - kept + EMBED_BATCH
    settings = Settings(RESEARCH_MCP_HOME=str(home))
    index = open_knowledge_index(settings)
    try:
        assert index.count("chunks") == NOTES  # every note has its vector, none twice
    finally:
        index.close()


def test_doctor_flags_corpus_folders_that_leave_nothing_to_search(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    missing = tmp_path / "missing"
    env = cli_env(tmp_path / "home", RESEARCH_MCP_CORPUS=f"{missing}:{empty}")

    done = cli("doctor", env=env)

    assert done.returncode == 1, done.stderr  # a script can tell: doctor found problems
    assert done.stderr == "doctor: 2 problems found (lines starting 'problem:')\n"
    assert f"problem: {missing}: no such folder; create it, or fix RESEARCH_MCP_CORPUS" in done.stdout
    assert f"problem: {empty}: holds no documents research-mcp reads" in done.stdout
    assert "corpus index: empty" in done.stdout


def test_doctor_says_there_is_nothing_to_search_without_a_corpus_or_web_search(tmp_path: Path) -> None:
    done = cli("doctor", env=cli_env(tmp_path / "home"))

    assert "problem: nothing to search: set RESEARCH_MCP_CORPUS" in done.stdout
    assert done.returncode == 1


def test_indexing_again_says_the_documents_indexed_before_are_searchable_meanwhile(tmp_path: Path) -> None:
    notes = write_notes(tmp_path / "notes", 5)
    env = cli_env(tmp_path / "home")
    assert cli("index", str(notes), env=env, timeout=300).returncode == 0

    again = cli("index", str(notes), env=env, timeout=300)

    assert again.returncode == 0, again.stderr
    assert "5 documents indexed earlier are searchable" in again.stderr + again.stdout
    assert "0 documents indexed earlier" not in again.stderr + again.stdout


def test_doctor_exits_0_when_it_finds_no_problem_and_version_prints_the_version(tmp_path: Path) -> None:
    notes = write_corpus(tmp_path / "notes")
    done = cli("doctor", env=cli_env(tmp_path / "home", RESEARCH_MCP_CORPUS=str(notes)))
    assert done.returncode == 0, done.stdout
    assert "problem:" not in done.stdout
    version = cli("--version", env=cli_env(tmp_path / "home"))
    assert version.returncode == 0 and version.stdout == f"research-mcp, version {research_mcp.__version__}\n"


def test_index_says_how_many_files_it_skipped_and_why(tmp_path: Path) -> None:
    notes = write_corpus(tmp_path / "notes")
    (notes / "setup.py").write_text("print('code')\n")
    (notes / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (notes / "README.source").write_text("Building the ferry timetable package needs quilt.\n")
    done = cli("index", str(notes), env=cli_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{notes}: 4 added,")  # the three notes and README.source
    assert "skipped 2 files: 2 not documents by their names (.png 1, .py 1)\n" in done.stderr

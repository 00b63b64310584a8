"""Ctrl-C during `research-mcp run`: the run is cancelled cleanly (exit 130) and `run --resume` finishes it.

The model is the Anthropic backend through the real SDK, against the loopback fake of the Messages
API. Requests are answered by what they are (which role, which leaf), not by order of arrival, since
the two leaves run in parallel: leaf alpha finishes, leaf beta's extraction stalls, and SIGINT comes
while it hangs.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import SCRIPT, cli, cli_env, write_corpus
from tests.fake_http import RecordedRequest, ScriptedResponse
from tests.llm.fake_anthropic import FakeMessagesAPI

ALPHA = "Note ALPHA: the harbour bridge opened in 1932. It carries eight lanes of traffic."
BETA = "Note BETA: the harbour tunnel opened in 1992. It carries four lanes of traffic."
PLAN = {
    "root": {
        "kind": "executor",
        "title": "harbour crossings",
        "children": [
            {
                "kind": "leaf",
                "title": "alpha leaf",
                "questions": ["When did the bridge open?"],
                "sources": [ALPHA],
            },
            {
                "kind": "leaf",
                "title": "beta leaf",
                "questions": ["When did the tunnel open?"],
                "sources": [BETA],
            },
        ],
    },
    "rationale": "one leaf per crossing",
}


def extraction(quote: str) -> dict[str, Any]:
    return {
        "facts": [{"statement": quote, "quote": quote, "question_index": 0}],
        "answers": [{"question": "When?", "answer": quote, "fact_indexes": [0]}],
        "confidence": {"level": "high", "reasoning": "stated"},
    }


SYNTHESIS = {
    "report": "The crossings are described in the notes.",
    "confidence": {"level": "high", "reasoning": "direct"},
}


class RoutedMessagesAPI(FakeMessagesAPI):
    """Each scripted response waits for a request whose JSON body contains all of its needles."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: list[tuple[tuple[str, ...], ScriptedResponse]] = []

    def route(self, needles: tuple[str, ...], *, tool_input: Any = None, stall: bool = False) -> None:
        with self._lock:
            if stall:
                response = ScriptedResponse(stall=True)
            else:
                block = {"type": "tool_use", "name": "submit", "input": tool_input}
                body = {
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": "tool_use",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 100, "output_tokens": 50},
                }
                response = ScriptedResponse(200, body)
            self.routes.append((needles, response))

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        text = json.dumps(request.json)
        for index, (needles, response) in enumerate(self.routes):
            if all(needle in text for needle in needles):
                del self.routes[index]
                return self.complete(response, request.json)
        return self.complete(self.unscripted, request.json)

    def count(self, *needles: str, since: int = 0) -> int:
        with self._lock:
            bodies = [json.dumps(r.json) for r in self.requests[since:]]
        return sum(all(needle in body for needle in needles) for body in bodies)


@pytest.fixture
def api() -> Iterator[RoutedMessagesAPI]:
    with RoutedMessagesAPI() as fake:
        yield fake


def wait_for(condition: Any, what: str, timeout: float = 60) -> None:
    """Poll another process's progress (through the fake and the store) until `condition()` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def node_states(database: Path) -> dict[str, str]:
    if not database.exists():
        return {}
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        try:
            return dict(conn.execute("SELECT title, status FROM nodes").fetchall())
        except sqlite3.OperationalError:  # not created yet
            return {}


def run_status(database: Path, run_id: str) -> str:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        (status,) = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
    return str(status)


def test_ctrl_c_cancels_the_run_exits_130_and_run_resume_finishes_it_without_redoing_done_nodes(
    api: RoutedMessagesAPI, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    database = home / "research.db"
    env = cli_env(
        home, RESEARCH_MCP_MODEL="anthropic", ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=api.url
    )
    api.route(("PlannerOutput",), tool_input=PLAN)
    api.route(("ExtractorOutput", "ALPHA"), tool_input=extraction("the harbour bridge opened in 1932."))
    api.route(("ExtractorOutput", "BETA"), stall=True)
    api.route(("SynthesisOutput", "alpha leaf"), tool_input=SYNTHESIS)

    process = subprocess.Popen(
        [str(SCRIPT), "run", "How do people cross the harbour?"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: node_states(database).get("alpha leaf") == "done", "leaf alpha to finish")
        wait_for(lambda: api.count("ExtractorOutput", "BETA") == 1, "leaf beta's extraction to hang")
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 130, stderr
    assert stdout == ""
    last = stderr.strip().splitlines()[-1]
    assert (
        last.startswith("interrupted: run run_") and "Resume it with: research-mcp run --resume run_" in last
    )
    run_id = last.rsplit(" ", 1)[-1]
    assert run_status(database, run_id) == "cancelled"
    assert node_states(database) == {
        "harbour crossings": "cancelled",
        "alpha leaf": "done",
        "beta leaf": "cancelled",
    }
    show = cli("show", run_id, "--view", "report", env=env)
    assert show.returncode == 1
    assert show.stderr.strip() == (
        f"Error: run {run_id} is cancelled: cancelled by the host and has no report yet; "
        f"finish it with: research-mcp run --resume {run_id}"
    )

    before = len(api.requests)
    api.route(("ExtractorOutput", "BETA"), tool_input=extraction("the harbour tunnel opened in 1992."))
    api.route(("SynthesisOutput", "beta leaf"), tool_input=SYNTHESIS)
    api.route(("SynthesisOutput", "harbour crossings"), tool_input=SYNTHESIS)
    resumed = cli("run", "--resume", run_id, env=env)

    assert resumed.returncode == 0, resumed.stderr
    # The report, after the line saying its confidence first.
    assert resumed.stdout.startswith("**Confidence:** ")
    assert "\n\nThe crossings are described in the notes." in resumed.stdout
    assert run_status(database, run_id) == "done"
    assert api.count("PlannerOutput", since=before) == 0
    assert api.count("ExtractorOutput", "ALPHA", since=before) == 0  # the finished leaf is not run again
    assert api.count("ExtractorOutput", "BETA", since=before) == 1
    assert "cached" in resumed.stderr  # the progress shows the leaf read back, not run


def test_a_partial_run_exits_0_naming_what_failed_and_run_resume_last_retries_only_that(
    api: RoutedMessagesAPI, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = cli_env(
        home, RESEARCH_MCP_MODEL="anthropic", ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=api.url
    )
    api.route(("PlannerOutput",), tool_input=PLAN)
    api.route(("ExtractorOutput", "ALPHA"), tool_input=extraction("the harbour bridge opened in 1932."))
    api.route(("SynthesisOutput", "alpha leaf"), tool_input=SYNTHESIS)
    api.route(("SynthesisOutput", "harbour crossings"), tool_input=SYNTHESIS)
    # Leaf beta's extraction is not scripted: the fake answers 500 (not retryable), so the leaf fails.

    first = cli("run", "How do people cross the harbour?", env=env)

    assert first.returncode == 0, first.stderr
    assert "Not covered (failed)" in first.stdout and "beta leaf" in first.stdout
    note = next(line for line in first.stderr.splitlines() if "some parts failed" in line)
    run_id = note.split()[1].rstrip(":")
    assert note.endswith(f"Retry only them with: research-mcp run --resume {run_id}")
    assert run_status(home / "research.db", run_id) == "partial"

    before = len(api.requests)
    api.route(("ExtractorOutput", "BETA"), tool_input=extraction("the harbour tunnel opened in 1992."))
    api.route(("SynthesisOutput", "beta leaf"), tool_input=SYNTHESIS)
    api.route(("SynthesisOutput", "harbour crossings"), tool_input=SYNTHESIS)
    retried = cli("run", "--resume", "last", env=env)

    assert retried.returncode == 0, retried.stderr
    assert "Not covered (failed)" not in retried.stdout
    assert run_status(home / "research.db", run_id) == "done"
    assert api.count("PlannerOutput", since=before) == 0
    assert api.count("ExtractorOutput", "ALPHA", since=before) == 0  # what worked is not asked again
    assert api.count("ExtractorOutput", "BETA", since=before) == 1


CORPUS_PLAN = {
    "root": {
        "kind": "executor",
        "title": "harbour crossings",
        "children": [
            {"kind": "leaf", "title": "crossings leaf", "questions": ["How do people cross the harbour?"]},
        ],
    },
    "rationale": "one leaf, its sources found in the corpus",
}


def test_ctrl_c_mid_extraction_then_resume_without_corpus_feeds_every_finished_extraction_to_the_synthesis(
    api: RoutedMessagesAPI, tmp_path: Path
) -> None:
    """The issue's case: a leaf that searched the corpus is interrupted with two of its three extractions
    done; `run --resume` (no --corpus) reads the same three sources, reruns only the cancelled one and
    gives the synthesizer all three, not an empty list."""
    home = tmp_path / "home"
    database = home / "research.db"
    corpus = write_corpus(tmp_path / "notes")
    env = cli_env(
        home, RESEARCH_MCP_MODEL="anthropic", ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=api.url
    )
    api.route(("PlannerOutput",), tool_input=CORPUS_PLAN)
    api.route(
        ("ExtractorOutput", "opened in 1932"), tool_input=extraction("The harbour bridge opened in 1932")
    )
    api.route(
        ("ExtractorOutput", "opened in 1992"), tool_input=extraction("The harbour tunnel opened in 1992")
    )
    api.route(("ExtractorOutput", "since 1840"), stall=True)

    process = subprocess.Popen(
        [str(SCRIPT), "run", "How do people cross the harbour?", "--corpus", str(corpus)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: api.count("ExtractorOutput", "since 1840") == 1, "the ferries extraction to hang")
        wait_for(lambda: extractions_done(database) == 2, "the other two extractions to finish")
        interrupted_at = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        exited_after = time.monotonic() - interrupted_at
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 130, stderr
    last = stderr.strip().splitlines()[-1]
    run_id = last.split("--resume ", 1)[1].split()[0]
    assert last.endswith(f"--corpus {corpus}")  # the hint names the folder the run searched
    assert run_status(database, run_id) == "cancelled"
    assert exited_after < 15, exited_after  # not the 35-50 s of waiting out every extraction

    before = len(api.requests)
    api.route(
        ("ExtractorOutput", "since 1840"),
        tool_input=extraction("Ferries have crossed the harbour since 1840"),
    )
    api.route(("SynthesisOutput", "Node: crossings leaf"), tool_input=SYNTHESIS)
    api.route(("SynthesisOutput", "harbour crossings"), tool_input=SYNTHESIS)
    resumed = cli("run", "--resume", run_id, env=env)  # no --corpus: the run's own folders are used

    assert resumed.returncode == 0, resumed.stderr
    assert run_status(database, run_id) == "done"
    assert api.count("ExtractorOutput", since=before) == 1  # only the cancelled extraction again
    assert api.count("ExtractorOutput", "since 1840", since=before) == 1
    (leaf_synthesis,) = [
        json.dumps(r.json)
        for r in api.requests[before:]
        if "Node: crossings leaf" in json.dumps(r.json) and "SynthesisOutput" in json.dumps(r.json)
    ]
    for fact in ("opened in 1932", "opened in 1992", "since 1840"):
        assert fact in leaf_synthesis, fact  # every finished extraction reaches the synthesizer
    exported = json.loads(cli("export", run_id, "--format", "json", env=env).stdout)
    assert sorted(fact["statement"] for fact in exported["facts"]) == [
        "Ferries have crossed the harbour since 1840",
        "The harbour bridge opened in 1932",
        "The harbour tunnel opened in 1992",
    ]


def extractions_done(database: Path) -> int:
    if not database.exists():
        return 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        try:
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM handoffs WHERE role = 'extractor' AND status = 'done'"
            ).fetchone()
        except sqlite3.OperationalError:
            return 0
    return int(count)

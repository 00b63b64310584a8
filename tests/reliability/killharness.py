"""kill -9 harness: the real `research-mcp serve` over stdio, killed at many points of a run and resumed.

The model is the Anthropic backend through the real SDK, pointed at `TeamMessagesAPI`, a loopback fake
of the Messages API that answers every role from the request itself (planner: the harness's plan;
extractor: the source's sentences, quoted verbatim; synthesizer: a report over the facts and child
reports it was given) after a delay, so a run lasts long enough to be killed in the middle.

`kill_chain` starts a run, then for each kill point waits (by elapsed time, or until the store holds
a number of finished handoffs, polled read-only from this process, plus a jitter so that some kills
land inside store writes), sends SIGKILL, checks the file (`PRAGMA integrity_check`), restarts the
server and resumes the run with `execute_plan(run_id=...)`, until it is done. It measures what a user
relies on: acknowledged handoffs lost, finished nodes run again (in the store and at the fake),
resumes that failed, integrity, and whether the final report equals an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import queue
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from research_mcp.storage.models import decompress_text
from tests.fake_http import RecordedRequest, ScriptedResponse
from tests.llm.fake_anthropic import FakeMessagesAPI

__all__ = [
    "HeldTeam",
    "KillPoint",
    "KillReport",
    "StdioServer",
    "TeamMessagesAPI",
    "kill_chain",
    "kill_points",
    "plan_tree",
    "read_only",
    "uninterrupted_report",
]

SCRIPT = Path(sys.executable).with_name("research-mcp")
SUBJECTS = ["Alder", "Birch", "Cedar", "Damson", "Elder", "Fir", "Ginkgo", "Hazel", "Ilex", "Juniper"]
PLACES = ["bridge", "lighthouse", "tramway", "observatory", "canal", "library"]
MARKER = re.compile(r"\b(K\d\d)\b")


# --- the plan and its sources -------------------------------------------------------------------


def source_text(branch: int, leaf: int, source: int) -> str:
    """Three sentences about one thing, with numbers of its own (so no two facts merge as duplicates)."""
    n = branch * 100 + leaf * 10 + source
    subject = f"{SUBJECTS[(branch * 3 + leaf) % len(SUBJECTS)]} {PLACES[source % len(PLACES)]}"
    return (
        f"Record K{leaf}{source} of branch {branch}: the {subject} was first built in {1700 + n} by a guild of {n + 3} masons. "
        f"The {subject} was rebuilt in {1800 + n} after a flood that lasted {n % 9 + 2} weeks. "
        f"Visitors to the {subject} numbered {n * 37 + 11} in the year {1900 + n}."
    )


def plan_tree(branches: int = 2, leaves: int = 3, sources: int = 2) -> dict[str, Any]:
    """Root executor → `branches` executors → `leaves` leaves each, each leaf with `sources` given texts."""
    return {
        "root": {
            "kind": "executor",
            "title": "history of the records",
            "children": [
                {
                    "kind": "executor",
                    "title": f"branch {b}",
                    "children": [
                        {
                            "kind": "leaf",
                            "title": f"leaf {b}.{leaf}",
                            "questions": [f"When was each thing of leaf {b}.{leaf} built and rebuilt?"],
                            "sources": [source_text(b, leaf, s) for s in range(sources)],
                        }
                        for leaf in range(leaves)
                    ],
                }
                for b in range(branches)
            ],
        },
        "rationale": "one leaf per group of records",
    }


# --- the fake Messages API that plays the team ---------------------------------------------------

FACT_LINE = re.compile(r"^\[F(\d+)\] \(S\d+, [^)]*\) (.*?) \| quote: ", re.MULTILINE)
CHILD_REPORT = re.compile(r"REPORT '([^']*)' \(confidence")
SOURCE_SENTENCE = re.compile(r"(?:Record|The|Visitors) [^.\n]*\d{4}[^.\n]*\.")


class TeamMessagesAPI(FakeMessagesAPI):
    """Answers each role from its request, after `delay` seconds; counts requests per node (`by_key`).

    The planner adopts the suggested plan given in its prompt, else answers `plan`.

    Keys: "planner", "extract:<branch>:<K-marker>" (one source of one leaf), "synth:<node title>".
    """

    def __init__(self, plan: dict[str, Any], *, delay: float = 0.15) -> None:
        super().__init__()
        self.plan = plan
        self.delay = delay
        self.keys: list[str] = []  # the key of each Messages request, in order of arrival

    def by_key(self, since: int = 0) -> Counter[str]:
        with self._lock:
            return Counter(self.keys[since:])

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        if request.path != "/v1/messages" or not isinstance(request.json, dict):
            return super().answer(request)
        body = request.json
        title = body["tools"][0]["input_schema"].get("title")
        prompt = body["messages"][0]["content"]
        if not isinstance(prompt, str):
            prompt = json.dumps(prompt)
        if title == "PlannerOutput":
            suggested = re.search(r"Suggested plan \(JSON\):\n(\{.*\})\s*$", prompt, re.MULTILINE)
            key, tool_input = "planner", json.loads(suggested.group(1)) if suggested else self.plan
        elif title == "ExtractorOutput":
            key, tool_input = self._extract(prompt)
        elif title == "SynthesisOutput":
            key, tool_input = self._synthesize(prompt)
        else:
            return self.unscripted
        self.keys.append(key)
        message = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "tool_use", "name": "submit", "input": tool_input}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": len(prompt) // 4, "output_tokens": 200},
        }
        completed = self.complete(ScriptedResponse(200, message), body)
        return ScriptedResponse(completed.status, completed.body, completed.headers, delay=self.delay)

    @staticmethod
    def _extract(prompt: str) -> tuple[str, dict[str, Any]]:
        framed = re.search(r"<<<BEGIN UNTRUSTED SOURCE [^>]*>>>\n(.*?)\n<<<END", prompt, re.DOTALL)
        sentences = SOURCE_SENTENCE.findall(framed.group(1) if framed else "")
        marker = MARKER.search(sentences[0]).group(1) if sentences and MARKER.search(sentences[0]) else "?"
        branch = re.search(r"of branch (\d+)", prompt)
        facts = [{"statement": s, "quote": s, "question_index": 0} for s in sentences[:3]]
        return f"extract:{branch.group(1) if branch else '?'}:{marker}", {
            "facts": facts,
            "answers": [
                {"question": "when", "answer": facts[0]["statement"] if facts else "", "fact_indexes": [0]}
            ]
            if facts
            else [],
            "confidence": {"level": "high", "reasoning": "stated in the source"},
        }

    @staticmethod
    def _synthesize(prompt: str) -> tuple[str, dict[str, Any]]:
        title = re.search(r"^Node: (.*)$", prompt, re.MULTILINE)
        name = title.group(1) if title else "?"
        facts = sorted(FACT_LINE.findall(prompt), key=lambda item: item[1])
        children = sorted(set(CHILD_REPORT.findall(prompt)))
        lines = [f"- {statement} [F{fact_id}]" for fact_id, statement in facts]
        lines += [f"- from {child}" for child in children]
        return f"synth:{name}", {
            "report": f"# {name}\n\n" + ("\n".join(lines) or "No findings."),
            "confidence": {"level": "high", "reasoning": f"{len(facts)} facts, {len(children)} reports"},
        }


class _Release(threading.Event):
    """An event whose waits last until it is set (HOLD_BOUND_S at most), whatever bound the waiter
    asks for: fake_http bounds an `after` wait at 60 s against a test's mistake, and a loaded machine
    may take longer than that to reach the point where the test lets a held answer go."""

    def wait(self, timeout: float | None = None) -> bool:  # the bound asked for gives way to HOLD_BOUND_S
        return super().wait(HOLD_BOUND_S)


#: How long HeldTeam holds an answer at most, should the test never release it (a hang guard).
HOLD_BOUND_S = 600.0


class HeldTeam(TeamMessagesAPI):
    """The team, whose answer to the synthesis of the node titled `held` waits until `release` is set:
    the run is in progress at that node, however fast or slow the machine."""

    def __init__(self, plan: dict[str, Any], held: str) -> None:
        super().__init__(plan, delay=0)
        self.held = re.compile(rf"^Node: {re.escape(held)}$", re.MULTILINE)
        self.release: threading.Event = _Release()

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        response = super().answer(request)
        body = request.json if isinstance(request.json, dict) else {}
        prompt = str((body.get("messages") or [{}])[0].get("content", ""))
        synthesis = (
            bool(body.get("tools")) and body["tools"][0]["input_schema"].get("title") == "SynthesisOutput"
        )
        return (
            dataclasses.replace(response, after=self.release)
            if synthesis and self.held.search(prompt)
            else response
        )


# --- a raw JSON-RPC client of `research-mcp serve` over stdio ------------------------------------


class StdioServer:
    """`research-mcp serve` as a subprocess, spoken to in newline-delimited JSON-RPC (MCP's stdio)."""

    def __init__(
        self, env: dict[str, str], *, stderr: Path | None = None, argv: list[str] | None = None
    ) -> None:
        self._err = open(stderr, "ab") if stderr else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            argv or [str(SCRIPT), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            # PYTHONPATH passes through: a checkout run from its folder tests its own code.
            env={
                "PATH": os.environ.get("PATH", ""),
                "HF_HUB_OFFLINE": "1",
                **{name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ},
                **env,
            },
        )
        self._ids = iter(range(1, 1 << 30))
        self._pending: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # calls may come from several threads at once
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                waiting = self._pending.get(message.get("id")) if "id" in message else None
            if waiting is not None and ("result" in message or "error" in message):
                waiting.put(message)
        with self._lock:  # the process is gone: every call still waiting gets an answer
            for waiting in self._pending.values():
                waiting.put({"error": {"code": -32000, "message": "server exited"}})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        with self._writing:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any], *, timeout: float = 60.0) -> dict[str, Any]:
        ident = next(self._ids)
        answer: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._pending[ident] = answer
        try:
            self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            return answer.get(timeout=timeout)
        finally:
            with self._lock:
                self._pending.pop(ident, None)

    def initialize(self, *, timeout: float = 60.0) -> None:
        """The MCP handshake; a server that exits or refuses it is closed before this raises."""
        try:
            self._initialize(timeout)
        except BaseException:
            self.close()
            raise

    def _initialize(self, timeout: float) -> None:
        reply = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "killharness", "version": "0"},
            },
            timeout=timeout,
        )
        if "error" in reply:
            raise RuntimeError(f"initialize failed: {reply['error']}")
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, arguments: dict[str, Any], *, timeout: float = 60.0) -> dict[str, Any]:
        """The tools/call result ({content, structuredContent, isError}); a protocol error as isError."""
        reply = self.request("tools/call", {"name": tool, "arguments": arguments}, timeout=timeout)
        if "error" in reply:
            return {"isError": True, "content": [{"type": "text", "text": reply["error"].get("message", "")}]}
        return dict(reply["result"])

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._close()

    def close(self) -> None:
        """End the session as a host does: close stdin, wait, then terminate."""
        if self.process.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                assert self.process.stdin is not None
                self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._close()

    def _close(self) -> None:
        self._reader.join(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError, ValueError):
                stream.close()  # type: ignore[union-attr]
        if self._err is not subprocess.DEVNULL:
            self._err.close()  # type: ignore[union-attr]


def text_of(result: dict[str, Any]) -> str:
    return " ".join(part.get("text", "") for part in result.get("content", []))


# --- reading the store from outside -------------------------------------------------------------


@contextlib.contextmanager
def read_only(database: Path) -> Any:
    """A read-only connection to the server's database (the harness never writes it)."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)
    try:
        yield conn
    finally:
        conn.close()


def integrity(database: Path) -> str:
    with read_only(database) as conn:
        return ";".join(row[0] for row in conn.execute("PRAGMA integrity_check"))


@dataclass(frozen=True)
class Snapshot:
    handoffs: dict[str, str]  # done handoff id -> hash of (role, node, output)
    nodes: dict[str, tuple[str | None, int]]  # done node -> (its handoff id, runs_started)
    done_keys: frozenset[str]  # fake keys whose work is finished: "synth:<title>", "extract:<b>:<K..>"
    run_status: str | None


def snapshot(database: Path, run_id: str | None) -> Snapshot:
    if not database.exists():
        return Snapshot({}, {}, frozenset(), None)
    with read_only(database) as conn:
        try:
            rows = conn.execute(
                "SELECT h.id, h.role, h.node_id, h.output, h.input, s.text FROM handoffs h"
                " LEFT JOIN sources s ON s.id = json_extract(h.input, '$.source_id')"
                " WHERE h.status = 'done' AND (h.run_id = ? OR h.run_id IS NULL)",
                (run_id,),
            ).fetchall()
            nodes = conn.execute(
                "SELECT node_id, handoff_id, runs_started, title FROM nodes WHERE run_id = ? AND status = 'done'",
                (run_id,),
            ).fetchall()
            run = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return Snapshot({}, {}, frozenset(), None)
            raise
    handoffs = {
        hid: hashlib.sha256(f"{role}|{node}|{output}".encode()).hexdigest()
        for hid, role, node, output, _, _ in rows
    }
    keys = set()
    for _, role, _, _, inputs, stored in rows:
        text = decompress_text(stored) if isinstance(stored, bytes) else stored  # sources.text is compressed
        if role == "extractor" and text:
            marker = MARKER.search(text)
            branch = re.search(r"of branch (\d+)", text)
            if marker and branch:
                keys.add(f"extract:{branch.group(1)}:{marker.group(1)}")
        elif role == "synthesizer" and inputs:
            keys.add(f"synth:{json.loads(inputs)['title']}")
    # A synthesis is finished work even before its node is marked done; a node done means its synthesis is.
    keys |= {f"synth:{title}" for _, _, _, title in nodes}
    return Snapshot(
        handoffs,
        {node: (handoff, started) for node, handoff, started, _ in nodes},
        frozenset(keys),
        run[0] if run else None,
    )


# --- the chain of kills ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KillPoint:
    """Kill `seconds` after the run (re)started, or once `handoffs` more handoffs are done, plus `jitter` s."""

    seconds: float | None = None
    handoffs: int | None = None
    jitter: float = 0.0

    def describe(self) -> str:
        if self.seconds is not None:
            return f"t+{self.seconds:.2f}s"
        return f"+{self.handoffs} handoffs +{self.jitter * 1000:.0f}ms"


def kill_points(count: int, *, seed: int, run_seconds: float, handoffs: int) -> list[KillPoint]:
    """Half by elapsed time, half by handoffs committed (at once, or a few ms later), each after the last
    restart; spread so that a chain of `count` kills reaches the end of a run of `run_seconds` with
    `handoffs` handoffs."""
    rng = random.Random(seed)
    step_s, step_h = run_seconds / max(1, count), max(1, handoffs // max(1, count))
    points = []
    for index in range(count):
        if index % 2 == 0:
            points.append(KillPoint(seconds=rng.uniform(0.05, step_s * 2)))
        else:
            jitter = 0.0 if index % 4 == 1 else rng.uniform(0.0, 0.03)
            points.append(KillPoint(handoffs=rng.randint(1, step_h * 2), jitter=jitter))
    return points


@dataclass
class KillReport:
    kills: int = 0  # SIGKILLs sent while the run was unfinished
    points: list[str] = field(default_factory=list)
    acknowledged: int = 0  # distinct handoffs seen committed (or returned) before some kill
    lost: int = 0  # of those, missing or changed at the end
    nodes_repeated: int = 0  # done nodes started again after a kill (store: runs_started grew)
    requests_repeated: int = 0  # model requests at the fake for work finished before a kill
    resume_failures: int = 0  # resumes answered with an error or a failed run
    integrity: list[str] = field(default_factory=list)  # integrity_check after each kill, and at the end
    final_status: str | None = None
    report: str = ""  # the final report, fact ids normalised
    requests: int = 0  # model requests in all
    stale_running: int = 0  # handoffs or nodes still 'running' once the run is done
    recovered: Counter[str] = field(default_factory=Counter)  # what resumes tidied (Store.recover_run)
    errors: list[str] = field(default_factory=list)


def normalise(report: str) -> str:
    """The report without what differs between equal runs: fact ids, and the metadata line (timings, usage)."""
    lines = [line for line in report.splitlines() if not line.startswith("metadata:")]
    return re.sub(r"\[F\d+\]", "[F]", "\n".join(lines))


def _server_env(home: Path, api_url: str, concurrency: int) -> dict[str, str]:
    return {
        "RESEARCH_MCP_HOME": str(home),
        "RESEARCH_MCP_MODEL": "anthropic",
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": api_url,
        "RESEARCH_MCP_CONCURRENCY": str(concurrency),
    }


def _start(home: Path, api: TeamMessagesAPI, concurrency: int) -> StdioServer:
    server = StdioServer(_server_env(home, api.url, concurrency), stderr=home.parent / f"{home.name}.stderr")
    server.initialize()
    return server


def _report_text(server: StdioServer, run_id: str) -> str:
    result = server.call("report_results", {"id": run_id, "view": "report", "max_tokens": 20000})
    return normalise(str((result.get("structuredContent") or {}).get("text", text_of(result))))


def _finish(server: StdioServer, run_id: str, report: KillReport, *, deadline: float) -> str | None:
    """Wait on the run until it is finished; the final status, or None at the deadline."""
    while time.monotonic() < deadline:
        result = server.call("execute_plan", {"run_id": run_id, "wait_seconds": 10}, timeout=30)
        status = (result.get("structuredContent") or {}).get("status")
        if result.get("isError") or status in ("failed", "cancelled"):
            report.resume_failures += 1
            report.errors.append(f"resume: {status}: {text_of(result)[:300]}")
            return str(status)
        if status in ("done", "budget_exhausted"):
            return str(status)
    return None


def uninterrupted_report(home: Path, *, delay: float = 0.05, concurrency: int = 4) -> str:
    """The final report of the same plan, run without a kill."""
    home.mkdir(parents=True, exist_ok=True)
    with TeamMessagesAPI(plan_tree(), delay=delay) as api:
        server = _start(home, api, concurrency)
        try:
            plan = server.call(
                "plan_research", {"query": "history of the records", "suggested_plan": plan_tree()}
            )
            run = server.call("execute_plan", {"plan_id": plan["structuredContent"]["id"], "wait_seconds": 0})
            run_id = run["structuredContent"]["id"]
            status = _finish(server, run_id, KillReport(), deadline=time.monotonic() + 60)
            assert status == "done", status
            return _report_text(server, run_id)
        finally:
            server.close()


def kill_chain(
    home: Path,
    points: list[KillPoint],
    *,
    delay: float = 0.25,
    concurrency: int = 4,
    timeout: float = 120.0,
    after_kill: Callable[[Path], None] | None = None,
) -> KillReport:
    """One run killed at each point in turn (each kill during the previous resume), then finished.

    ``timeout`` bounds each stage (from a start or restart to the next kill, or to the run's end), not
    the whole chain: a chain of many restarts on a loaded machine is not cut short as a whole, while a
    resume that hangs still ends its chain unfinished (``final_status`` None).

    ``after_kill(home)`` runs after each kill, before the restart (the data folder is free then)."""
    home.mkdir(parents=True, exist_ok=True)
    database = home / "research.db"
    report = KillReport()
    acknowledged: dict[str, str] = {}  # handoff id -> hash when first seen done
    finished_nodes: dict[str, tuple[str | None, int]] = {}
    deadline = time.monotonic() + timeout
    with TeamMessagesAPI(plan_tree(), delay=delay) as api:
        server = _start(home, api, concurrency)
        try:
            plan = server.call(
                "plan_research", {"query": "history of the records", "suggested_plan": plan_tree()}
            )
            plan_id = plan["structuredContent"]["id"]
            run = server.call("execute_plan", {"plan_id": plan_id, "wait_seconds": 0})
            run_id = run["structuredContent"]["id"]
            done_since: dict[str, int] = {}  # fake key -> number of requests made when it was first done
            for point in points:
                started = time.monotonic()
                latest = snapshot(database, run_id)
                base = len(latest.handoffs)
                while True:
                    if latest.run_status in ("done", "budget_exhausted", "failed"):
                        break
                    if point.seconds is not None and time.monotonic() - started >= point.seconds:
                        break
                    if point.handoffs is not None and len(latest.handoffs) >= base + point.handoffs:
                        if point.jitter:
                            time.sleep(point.jitter)
                        break
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.005)
                    latest = snapshot(database, run_id)
                    for hid, digest in latest.handoffs.items():
                        acknowledged.setdefault(hid, digest)
                if latest.run_status in ("done", "budget_exhausted", "failed"):
                    break  # finished before this point: no more kills in this chain
                server.kill()
                report.kills += 1
                report.points.append(point.describe())
                after = snapshot(database, run_id)  # committed before the kill: durable, so acknowledged
                for hid, digest in after.handoffs.items():
                    acknowledged.setdefault(hid, digest)
                for node, state in after.nodes.items():
                    finished_nodes.setdefault(node, state)
                for key in after.done_keys:
                    done_since.setdefault(key, len(api.keys))
                report.integrity.append(integrity(database))
                if after_kill is not None:
                    after_kill(home)
                server = _start(home, api, concurrency)
                deadline = time.monotonic() + timeout
                resumed = server.call("execute_plan", {"run_id": run_id, "wait_seconds": 0})
                if resumed.get("isError"):
                    report.resume_failures += 1
                    report.errors.append(f"resume: {text_of(resumed)[:300]}")
            report.final_status = _finish(server, run_id, report, deadline=deadline)
            report.report = _report_text(server, run_id) if report.final_status == "done" else ""
        finally:
            server.close()
        # Work finished before a kill must never reach the model again.
        report.requests_repeated = sum(api.by_key(since)[key] for key, since in done_since.items())
        report.requests = len(api.keys)
    final = snapshot(database, run_id)
    report.integrity.append(integrity(database))
    with read_only(database) as conn:
        report.stale_running = sum(
            conn.execute(
                f"SELECT count(*) FROM {table} WHERE run_id = ? AND status = 'running'", (run_id,)
            ).fetchone()[0]
            for table in ("handoffs", "nodes")
        )
        for (data,) in conn.execute(
            "SELECT data FROM events WHERE run_id = ? AND kind = 'recovered'", (run_id,)
        ).fetchall():
            report.recovered.update(json.loads(data))
    report.acknowledged = len(acknowledged)
    report.lost = sum(1 for hid, digest in acknowledged.items() if final.handoffs.get(hid) != digest)
    for node, (handoff_id, started) in finished_nodes.items():
        if final.nodes.get(node) != (handoff_id, started):
            report.nodes_repeated += 1
    return report

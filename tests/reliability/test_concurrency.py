"""Many tool calls at once, two server processes on one data folder, and the model concurrency limit.

The model is the Anthropic backend through the real SDK against `TeamMessagesAPI` (a loopback fake
Messages API that answers every role after a delay, so calls overlap); the fake counts the requests
it is answering at once. Every figure is printed (pytest -s) as well as asserted.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.server.app import create_server
from tests.reliability.killharness import (
    SCRIPT,
    HeldTeam,
    StdioServer,
    TeamMessagesAPI,
    plan_tree,
    read_only,
    source_text,
    text_of,
)

#: Bounds that only stop a hang (a loaded machine can take minutes for what takes seconds idle).
HANG_S = 240
LOCKED = ("database is locked", "database table is locked", "SQLITE_BUSY")


@pytest.fixture
def team(monkeypatch: pytest.MonkeyPatch) -> Iterator[TeamMessagesAPI]:
    with TeamMessagesAPI(plan_tree(), delay=0.1) as api:
        monkeypatch.setenv("RESEARCH_MCP_MODEL", "anthropic")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        yield api


def count(database: Path, sql: str, params: tuple[Any, ...] = ()) -> int:
    with read_only(database) as conn:
        return int(conn.execute(sql, params).fetchone()[0])


async def test_forty_concurrent_tool_calls_on_one_server_all_answer_without_a_lock_error(
    team: TeamMessagesAPI,
) -> None:
    results: dict[str, list[dict[str, Any]]] = {"plan": [], "extract": [], "report": []}
    async with Client(create_server()) as client:
        first = await client.call_tool(
            "plan_research", {"query": "history of the records", "suggested_plan": plan_tree()}
        )
        plan_id = first.structured_content["id"]

        async def call(kind: str, tool: str, arguments: dict[str, Any]) -> None:
            result = await client.call_tool(tool, arguments)
            text = " ".join(getattr(part, "text", "") for part in result.content)
            results[kind].append({"error": result.is_error, "text": text, "data": result.structured_content})

        with anyio.fail_after(90):
            async with anyio.create_task_group() as group:
                for i in range(15):
                    group.start_soon(
                        call,
                        "plan",
                        "plan_research",
                        {"query": f"records, part {i}", "suggested_plan": plan_tree(1, 1, 1)},
                    )
                    group.start_soon(
                        call,
                        "extract",
                        "extract_source",
                        {"source": source_text(5 + i // 10, i % 10, i), "questions": ["When was it built?"]},
                    )
                for _ in range(10):
                    group.start_soon(call, "report", "report_results", {"id": plan_id, "view": "tree"})
    calls = [item for items in results.values() for item in items]
    errors = [item["text"] for item in calls if item["error"]]
    database = Settings().database_path
    extraction_ids = {item["data"]["id"] for item in results["extract"]}
    plan_ids = {item["data"]["id"] for item in results["plan"]} | {plan_id}
    facts_reported = sum(item["data"]["metrics"]["facts"] for item in results["extract"])
    stored = {
        "plans": count(database, "SELECT count(*) FROM plans"),
        "extractions": count(database, "SELECT count(*) FROM handoffs WHERE role = 'extractor'"),
        "facts": count(database, "SELECT count(*) FROM facts"),
    }
    print(
        f"\n40 concurrent calls on one server: {len(calls)} answered, {len(errors)} errors; "
        f"rows expected plans {len(plan_ids)}, extractions {len(extraction_ids)}, facts {facts_reported}; "
        f"found {stored}; model requests in flight at most {team.max_in_flight} (limit 4 + 2 for planning)"
    )
    assert len(calls) == 40
    assert errors == []
    assert stored == {"plans": len(plan_ids), "extractions": len(extraction_ids), "facts": facts_reported}
    # The run's model calls share 4 slots; planning has 2 of its own (a plan never waits behind runs).
    assert team.max_in_flight <= 4 + 2
    with sqlite3.connect(database) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


async def test_model_calls_in_flight_never_exceed_the_concurrency_limit_though_leaves_want_more(
    team: TeamMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_CONCURRENCY", "2")
    team.delay = 0.1
    async with Client(create_server()) as client:
        # 2 branches x 3 leaves x 3 sources: 18 extractions want to run at once.
        plan = await client.call_tool(
            "plan_research", {"query": "history of the records", "suggested_plan": plan_tree(2, 3, 3)}
        )
        with anyio.fail_after(60):
            run = await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 50}
            )
    print(
        f"\nconcurrency limit 2, 18 extractions at once wanted: {len(team.keys)} model requests, "
        f"at most {team.max_in_flight} in flight at the fake"
    )
    assert run.structured_content["status"] == "done", run.content
    assert len([key for key in team.keys if key.startswith("extract:")]) == 18
    assert team.max_in_flight == 2  # reached, never exceeded


@pytest.fixture
def held_team() -> Iterator[HeldTeam]:
    """The team, holding the synthesis of "leaf 0.1" (a leaf of the first process's plan only) until
    the second process has asked for that plan's run: the run is surely still running then."""
    with HeldTeam(plan_tree(), held="leaf 0.1") as api:
        api.delay = 0.1  # each answer takes a while, so the two processes' calls overlap
        try:
            yield api
        finally:
            api.release.set()  # a held answer never outlives the test


def test_two_server_processes_on_one_data_folder_lose_and_duplicate_nothing(
    held_team: HeldTeam, research_home: Path
) -> None:
    team = held_team
    if not SCRIPT.exists():
        pytest.fail("the research-mcp console script is not installed: run `make test`")
    research_home.mkdir(parents=True, exist_ok=True)
    env = {
        "RESEARCH_MCP_HOME": str(research_home),
        "RESEARCH_MCP_MODEL": "anthropic",
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": team.url,
        # A process waits for the other's turn with the vector folder as long as it takes (the
        # server's 10 s is a latency a loaded machine can exceed); a turn never given is a hang.
        "RESEARCH_MCP_INDEX_WAIT": "600",
    }
    logs = [research_home.parent / "a.stderr", research_home.parent / "b.stderr"]
    first = StdioServer(env, stderr=logs[0])
    first.initialize()
    second = StdioServer(env, stderr=logs[1])  # opened second: the two take turns with the vector folder
    second.initialize()
    answers: list[tuple[str, dict[str, Any]]] = []
    failures: list[str] = []
    shared_plan: dict[str, str] = {}
    ready = threading.Event()

    def record(kind: str, result: dict[str, Any]) -> dict[str, Any]:
        answers.append((kind, result))
        if result.get("isError"):
            failures.append(f"{kind}: {text_of(result)[:300]}")
        return result.get("structuredContent") or {}

    def finish(server: StdioServer, run_id: str) -> None:
        deadline = time.monotonic() + HANG_S  # a loaded machine may need many waits; this stops a hang
        while time.monotonic() < deadline:
            status = record("wait", server.call("execute_plan", {"run_id": run_id, "wait_seconds": 10}))
            if status.get("status") != "running":
                return

    def work(server: StdioServer, name: str, index: int) -> None:
        try:
            tree = plan_tree(1, 2, 2) if index == 0 else plan_tree(2, 1, 2)
            plan = record(
                "plan", server.call("plan_research", {"query": f"records {name}", "suggested_plan": tree})
            )
            run = record("run", server.call("execute_plan", {"plan_id": plan["id"], "wait_seconds": 0}))
            if index == 0:
                shared_plan["id"], shared_plan["run"] = plan["id"], run["id"]
                ready.set()
            # The other process asks to execute this process's plan while it runs (held at leaf 0.1):
            # it must be given the same run, not start another.
            if index == 1 and ready.wait(HANG_S):
                try:
                    same = record(
                        "run", server.call("execute_plan", {"plan_id": shared_plan["id"], "wait_seconds": 0})
                    )
                finally:
                    team.release.set()
                shared_plan["seen by b"] = same.get("status", "")
                shared_plan["b was given"] = same.get("id", "")
            for i in range(4):
                record(
                    "extract",
                    server.call(
                        "extract_source",
                        {"source": source_text(7 + index, i, i), "questions": ["When was it built?"]},
                    ),
                )
            finish(server, run["id"])
            if index == 1:
                finish(server, same["id"])
        except Exception as error:  # a thread's failure is reported by the test, not lost
            failures.append(f"{name}: {error!r}")

    threads = [
        threading.Thread(target=work, args=(server, name, index))
        for index, (server, name) in enumerate([(first, "a"), (second, "b")])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=2 * HANG_S)
    first.close()
    second.close()

    database = research_home / "research.db"
    runs = {r.get("structuredContent", {}).get("id") for kind, r in answers if kind == "run"}
    plans = {r.get("structuredContent", {}).get("id") for kind, r in answers if kind == "plan"}
    extractions = [r.get("structuredContent", {}) for kind, r in answers if kind == "extract"]
    statuses = {r.get("structuredContent", {}).get("status") for kind, r in answers if kind == "wait"}
    with read_only(database) as conn:
        found = {
            "runs": conn.execute("SELECT count(*) FROM runs").fetchone()[0],
            "plans": conn.execute("SELECT count(*) FROM plans").fetchone()[0],
            "extractions": conn.execute(
                "SELECT count(*) FROM handoffs WHERE role = 'extractor' AND run_id IS NULL"
            ).fetchone()[0],
            "extraction facts": conn.execute(
                "SELECT count(*) FROM facts f JOIN handoffs h ON h.id = f.handoff_id WHERE h.run_id IS NULL"
            ).fetchone()[0],
            "nodes run twice": conn.execute("SELECT count(*) FROM nodes WHERE runs_started > 1").fetchone()[
                0
            ],
            "runs not done": conn.execute("SELECT count(*) FROM runs WHERE status != 'done'").fetchone()[0],
        }
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    expected = {
        "runs": len(runs),
        "plans": len(plans),
        "extractions": len({e.get("id") for e in extractions}),
        "extraction facts": sum(e.get("metrics", {}).get("facts", 0) for e in extractions),
        "nodes run twice": 0,
        "runs not done": 0,
    }
    warnings = [log.read_text().count("Knowledge index unavailable") for log in logs]
    locked = [text_of(r) for _, r in answers if any(word in text_of(r) for word in LOCKED)]
    print(
        f"\ntwo processes on one folder: {len(answers)} calls, {len(failures)} errors, {len(locked)} lock errors; "
        f"rows expected {expected}, found {found}; integrity {integrity}; "
        f"Qdrant unavailable warnings per process {warnings}; b asked for a's run while it was "
        f"{shared_plan.get('seen by b')!r}"
    )
    assert failures == [] and locked == []
    assert shared_plan["seen by b"] == "running" and shared_plan["b was given"] == shared_plan["run"]
    assert statuses == {"done"}
    assert found == expected
    assert integrity == "ok"
    assert warnings == [0, 0]  # the vector folder is shared in turns: neither loses the index

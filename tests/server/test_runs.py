"""Runs outlive a tool call, report progress, can be cancelled, and resume without re-running finished nodes."""

from __future__ import annotations

import socket
from itertools import pairwise
from typing import Any

import anyio
import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import ExtractorPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs import manager
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished

#: A bound against a hang only, never a time limit that a loaded machine could reach.
HANG_S = 60

TEXTS = [
    f"Topic {name} has a long history of careful study by researchers. "
    f"The key finding about {name} is that it was first described in {1900 + i}. "
    f"Later work on {name} confirmed the original description in detail."
    for i, name in enumerate(["alpha", "beta", "gamma"])
]


def three_leaf_plan() -> dict[str, Any]:
    leaves = [
        {
            "kind": "leaf",
            "title": f"leaf {i}",
            "questions": [f"When was topic {i} described?"],
            "sources": [text],
        }
        for i, text in enumerate(TEXTS)
    ]
    return {"root": {"kind": "executor", "title": "three topics", "children": leaves}}


async def plan(client: Client) -> str:
    result = await client.call_tool(
        "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
    )
    assert not result.is_error, result.content
    return str(result.structured_content["id"])


async def test_execute_plan_returns_within_wait_seconds_while_the_run_goes_on() -> None:
    server = create_server(model=ScriptedModel(team_script, latency=0.4))
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with Client(server) as client:
        plan_id = await plan(client)
        first = await client.call_tool(
            "execute_plan", {"plan_id": plan_id, "wait_seconds": 1}, progress_callback=on_progress
        )
        assert first.structured_content["status"] == "running"  # it came back before the run ended
        run_id = first.structured_content["id"]

        later = await client.call_tool(
            "execute_plan", {"run_id": run_id, "wait_seconds": 20}, progress_callback=on_progress
        )
        assert later.structured_content["status"] == "done"
        assert later.structured_content["metrics"]["nodes_done"] == 4
    assert progress and all(total == 4 for _, total, _ in progress)


async def test_cancel_stops_a_run_and_executing_again_finishes_it() -> None:
    server = create_server(model=ScriptedModel(team_script, latency=0.3))
    async with Client(server) as client:
        plan_id = await plan(client)
        started = await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 0})
        run_id = started.structured_content["id"]
        cancelled = await client.call_tool("execute_plan", {"run_id": run_id, "cancel": True})
        assert cancelled.structured_content["status"] == "cancelled", cancelled.structured_content
        resumed = await client.call_tool("execute_plan", {"run_id": run_id, "wait_seconds": 20})
        assert resumed.structured_content["status"] == "done"


async def test_a_run_killed_between_nodes_resumes_without_running_a_finished_node_twice() -> None:
    gate = anyio.Event()
    reached = anyio.Event()

    async def script(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if isinstance(payload, ExtractorPayload) and "gamma" in payload.source_text and not gate.is_set():
            reached.set()
            await gate.wait()  # the process "dies" while this leaf is running
        return team_script(request)

    first_model = ScriptedModel(script)
    async with Client(create_server(model=first_model)) as client:
        plan_id = await plan(client)
        started = await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 0})
        run_id = started.structured_content["id"]
        with anyio.fail_after(HANG_S):
            await reached.wait()
        # Let the other two leaves finish, then leave: the server shuts down mid-run.
        with anyio.fail_after(HANG_S):
            while (
                len(
                    Store(Settings().database_path)
                    .db.execute("SELECT 1 FROM nodes WHERE run_id = ? AND status = 'done'", [run_id])
                    .fetchall()
                )
                < 2
            ):
                await anyio.sleep(0.02)

    store = Store(Settings().database_path)
    assert store.get_run(run_id).status == "running"  # as a killed process leaves it
    done_before = {n.node_id for n in store.nodes_for_run(run_id) if n.status == "done"}
    assert len(done_before) == 2

    gate.set()
    second_model = ScriptedModel(team_script)
    async with Client(create_server(model=second_model)) as client:
        resumed = await until_finished(
            client, await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 20})
        )
        assert resumed.structured_content["id"] == run_id
        assert resumed.structured_content["status"] == "done"

    nodes = {n.node_id: n for n in store.nodes_for_run(run_id)}
    assert all(nodes[key].runs_started == 1 for key in done_before)
    # The second process read only the unfinished leaf's source and synthesized the rest.
    read_again = [c.payload.source_text for c in second_model.calls_for("extractor")]
    assert read_again == [TEXTS[2]]


async def test_without_wait_seconds_execute_plan_returns_after_research_mcp_wait_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_WAIT_SECONDS", "0.2")
    release = anyio.Event()

    async def script(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, ExtractorPayload):
            await release.wait()  # the run cannot finish until the test lets it
        return team_script(request)

    async with Client(create_server(model=ScriptedModel(script))) as client:
        plan_id = await plan(client)
        with anyio.fail_after(30):
            first = await client.call_tool("execute_plan", {"plan_id": plan_id})
        assert first.structured_content["status"] == "running"
        release.set()
        later = await client.call_tool(
            "execute_plan", {"run_id": first.structured_content["id"], "wait_seconds": 20}
        )
        assert later.structured_content["status"] == "done"


async def test_a_plain_resume_after_a_crash_does_not_rerun_a_finished_leaf_that_named_a_failed_source() -> (
    None
):
    gate = anyio.Event()
    reached = anyio.Event()

    async def script(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if isinstance(payload, ExtractorPayload) and "gamma" in payload.source_text and not gate.is_set():
            reached.set()
            await gate.wait()  # the process "dies" while this leaf is running
        return team_script(request)

    tree = three_leaf_plan()
    # Leaf 0 also lists a private address: refused without a request, so the leaf ends done with a failure.
    tree["root"]["children"][0]["sources"].append("http://10.0.0.1/notes")
    async with Client(create_server(model=ScriptedModel(script))) as client:
        planned = await client.call_tool("plan_research", {"query": "three topics", "suggested_plan": tree})
        plan_id = planned.structured_content["id"]
        started = await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 0})
        run_id = started.structured_content["id"]
        with anyio.fail_after(HANG_S):
            await reached.wait()
            while sum(n.status == "done" for n in Store(Settings().database_path).nodes_for_run(run_id)) < 2:
                await anyio.sleep(0.02)

    gate.set()
    store = Store(Settings().database_path)
    done_before = {n.node_id for n in store.nodes_for_run(run_id) if n.status == "done"}
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        resumed = await until_finished(
            client, await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 20})
        )
    assert resumed.structured_content["status"] == "partial"  # the refused source is still named
    nodes = {n.node_id: n for n in store.nodes_for_run(run_id)}
    assert all(nodes[key].runs_started == 1 for key in done_before), nodes


async def test_progress_values_strictly_increase_within_a_call_and_none_follows_its_response(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(manager, "PROGRESS_EVERY_S", 0.05)  # heartbeats between nodes, many of them
    first_answered = anyio.Event()

    async def script(request: ModelRequest[Any]) -> Any:
        # The gamma leaf waits until the first call has been answered: the run is still going then,
        # on any machine, and the first call's seconds are heartbeats of a run held in progress.
        if isinstance(request.payload, ExtractorPayload) and "gamma" in request.payload.source_text:
            await first_answered.wait()
        return team_script(request)

    server = create_server(model=ScriptedModel(script, latency=0.3))
    seen: list[tuple[str, float]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(("progress", value))

    async with Client(server) as client:
        plan_id = await plan(client)
        first = await client.call_tool(
            "execute_plan", {"plan_id": plan_id, "wait_seconds": 3}, progress_callback=on_progress
        )
        seen.append(("response", 0))
        assert first.structured_content["status"] == "running"
        first_answered.set()
        second = await client.call_tool(
            "execute_plan",
            {"run_id": first.structured_content["id"], "wait_seconds": 30},
            progress_callback=on_progress,
        )
        seen.append(("response", 0))
        await anyio.sleep(0.3)  # a late notification would arrive here
        assert second.structured_content["status"] == "done"

    assert seen[-1] == ("response", 0)
    calls: list[list[float]] = [[]]
    for kind, value in seen:
        if kind == "response":
            calls.append([])
        else:
            calls[-1].append(value)
    calls.pop()
    assert len(calls) == 2 and all(calls)
    for values in calls:
        assert all(b > a for a, b in pairwise(values)), values
    assert any(value != int(value) for values in calls for value in values)  # heartbeats did happen


async def test_cancel_of_a_run_left_running_by_a_dead_process_records_it_cancelled_and_says_how_to_resume() -> (
    None
):
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        plan_id = await plan(client)
        store = Store(Settings().database_path)
        run_id = store.create_run([plan_id], "scripted", None)
        store.update_run(
            run_id, status="running", owner=f"{socket.gethostname()}:999999999"
        )  # its process died

        cancelled = await client.call_tool("execute_plan", {"run_id": run_id, "cancel": True})
        assert store.get_run(run_id).status == "cancelled"
        summary = await client.call_tool("report_results", {"id": run_id})
        report = await client.call_tool("report_results", {"id": run_id, "view": "report"})
        resumed = await client.call_tool("execute_plan", {"run_id": run_id, "wait_seconds": 20})

    assert cancelled.structured_content["status"] == "cancelled"
    assert "resumes it" in " ".join(cancelled.structured_content["summary"])
    assert cancelled.structured_content["next"][0] == f"execute_plan(run_id='{run_id}')"
    for answer in (summary, report):
        text = " ".join(getattr(block, "text", "") for block in answer.content)
        assert f"resume it with execute_plan(run_id='{run_id}')" in text, text
        assert f"research-mcp run --resume {run_id}" in text
    assert resumed.structured_content["status"] == "done"

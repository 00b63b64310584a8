"""Protocol tasks for runs (2025-11-25): a task-augmented execute_plan answers with a task at once;
tasks/get, tasks/result, tasks/cancel and tasks/list serve it; the task is the run. The SDK's client
validates a tools/call answer as a CallToolResult (a task answer is not one), so these tests speak
JSON-RPC by hand over the SDK's transports: in memory, over stdio and over streamable HTTP."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
from mcp.client._memory import InMemoryTransport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from tests.server.test_http import free_port, start_server
from tests.server.test_runs import three_leaf_plan
from tests.server.test_stdio import SCRIPT, server_params

INVALID_PARAMS = -32602


class RawSession:
    """A JSON-RPC session by hand on a transport's (read, write) streams."""

    def __init__(self, read: Any, write: Any) -> None:
        self.read, self.write = read, write
        self.ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response: {"result": ...} or {"error": ...}."""
        ident = next(self.ids)
        await self.write.send(
            SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=ident, method=method, params=params))
        )
        with anyio.fail_after(60):
            while True:
                message = await self.read.receive()
                if isinstance(message, Exception):
                    raise message
                answer = message.message
                if isinstance(answer, JSONRPCResponse) and answer.id == ident:
                    return {"result": answer.result}
                if isinstance(answer, JSONRPCError) and answer.id == ident:
                    return {"error": answer.error.model_dump(mode="json")}

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = await self.request(method, params)
        assert "result" in answer, answer
        return dict(answer["result"])

    async def open(self) -> dict[str, Any]:
        """The 2025-11-25 handshake of a client that can augment requests with tasks."""
        init = await self.result(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tasks": {"list": {}, "cancel": {}}},
                "clientInfo": {"name": "tasks-test", "version": "1"},
            },
        )
        await self.write.send(
            SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
        )
        return init

    async def call(
        self, name: str, arguments: dict[str, Any], task: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if task is not None:
            params["task"] = task
        return await self.result("tools/call", params)


async def run_a_task_to_completion(session: RawSession) -> None:
    init = await session.open()
    assert init["protocolVersion"] == "2025-11-25"
    assert init["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    tools = {tool["name"]: tool for tool in (await session.result("tools/list"))["tools"]}
    assert tools["execute_plan"]["execution"] == {"taskSupport": "optional"}
    assert "execution" not in tools["report_results"]

    plan = await session.call("plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()})
    assert not plan["isError"], plan
    created = await session.call(
        "execute_plan", {"plan_id": plan["structuredContent"]["id"]}, task={"ttl": 60_000}
    )
    task = created["task"]
    assert task["taskId"].startswith("run_") and task["status"] in ("working", "completed")
    assert task["createdAt"] and task["lastUpdatedAt"] and task["pollInterval"] > 0

    polled = await session.result("tasks/get", {"taskId": task["taskId"]})
    assert polled["taskId"] == task["taskId"] and polled["status"] in ("working", "completed")
    finished = await session.result("tasks/result", {"taskId": task["taskId"]})  # blocks until the run ends
    assert finished["structuredContent"]["id"] == task["taskId"]
    assert finished["structuredContent"]["status"] == "done"
    assert finished["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    assert (await session.result("tasks/get", {"taskId": task["taskId"]}))["status"] == "completed"
    listed = await session.result("tasks/list")
    assert task["taskId"] in [one["taskId"] for one in listed["tasks"]]
    # The same run through the polling flow, for clients without tasks.
    polling = await session.call("execute_plan", {"run_id": task["taskId"], "wait_seconds": 0})
    assert polling["structuredContent"]["status"] == "done"

    missing = await session.request("tasks/get", {"taskId": "run_000000000000"})
    assert missing["error"]["code"] == INVALID_PARAMS


async def test_a_task_augmented_run_completes_through_tasks_get_and_tasks_result_in_memory() -> None:
    server = create_server(model=ScriptedModel(team_script, latency=0.05))
    async with InMemoryTransport(server) as (read, write):
        await run_a_task_to_completion(RawSession(read, write))


async def test_tasks_cancel_cancels_the_run_and_polling_never_restarts_it() -> None:
    server = create_server(model=ScriptedModel(team_script, latency=0.5))
    async with InMemoryTransport(server) as (read, write):
        session = RawSession(read, write)
        await session.open()
        plan = await session.call(
            "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
        )
        task = (await session.call("execute_plan", {"plan_id": plan["structuredContent"]["id"]}, task={}))[
            "task"
        ]
        assert task["status"] == "working"
        cancelled = await session.result("tasks/cancel", {"taskId": task["taskId"]})
        assert cancelled["status"] == "cancelled"
        assert (await session.result("tasks/get", {"taskId": task["taskId"]}))["status"] == "cancelled"
        result = await session.result("tasks/result", {"taskId": task["taskId"]})
        assert result["structuredContent"]["status"] == "cancelled"
        again = await session.request("tasks/cancel", {"taskId": task["taskId"]})
        assert again["error"]["code"] == INVALID_PARAMS  # it has already ended


async def test_a_refused_task_augmented_call_is_an_invalid_params_error_that_says_what_to_fix() -> None:
    async with InMemoryTransport(create_server(model=ScriptedModel(team_script))) as (read, write):
        session = RawSession(read, write)
        await session.open()
        answer = await session.request(
            "tools/call", {"name": "execute_plan", "arguments": {"plan_id": "run_x"}, "task": {}}
        )
    assert answer["error"]["code"] == INVALID_PARAMS
    assert "pass it as run_id" in answer["error"]["message"]


async def test_a_task_survives_a_restart_of_the_stdio_server(tmp_path: Path) -> None:
    params = server_params(tmp_path / "home", RESEARCH_MCP_MODEL="extractive")
    assert SCRIPT.exists()
    async with stdio_client(params) as (read, write):
        await run_a_task_to_completion(RawSession(read, write))
    async with stdio_client(params) as (read, write):  # a new process on the same data folder
        session = RawSession(read, write)
        await session.open()
        listed = (await session.result("tasks/list"))["tasks"]
        assert listed and listed[0]["status"] == "completed"
        again = await session.result("tasks/result", {"taskId": listed[0]["taskId"]})
        assert again["structuredContent"]["status"] == "done"


async def test_a_task_augmented_run_completes_over_streamable_http(tmp_path: Path) -> None:
    port = free_port()
    server = start_server(f"127.0.0.1:{port}", tmp_path / "home", port)
    try:
        async with streamable_http_client(server.url) as (read, write):
            await run_a_task_to_completion(RawSession(read, write))
    finally:
        server.stop()


def modern(params: dict[str, Any], *, tasks: bool = True) -> dict[str, Any]:
    """Params in the 2026-07-28 envelope, declaring the tasks extension (or not) on this request."""
    capabilities: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}} if tasks else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    return {**params, "_meta": meta}


async def test_the_2026_tasks_extension_serves_a_run_as_a_task_to_clients_that_declare_it() -> None:
    server = create_server(model=ScriptedModel(team_script, latency=0.05))
    async with InMemoryTransport(server) as (read, write):
        session = RawSession(read, write)
        discovered = await session.result("server/discover", modern({}))
        assert "io.modelcontextprotocol/tasks" in discovered["capabilities"]["extensions"]
        plan = await session.result(
            "tools/call",
            modern(
                {
                    "name": "plan_research",
                    "arguments": {"query": "three topics", "suggested_plan": three_leaf_plan()},
                }
            ),
        )
        arguments = {"plan_id": plan["structuredContent"]["id"]}
        plain = await session.result(
            "tools/call", modern({"name": "execute_plan", "arguments": arguments}, tasks=False)
        )
        assert plain["structuredContent"]["kind"] == "run"  # no extension declared: today's result
        created = await session.result("tools/call", modern({"name": "execute_plan", "arguments": arguments}))
        assert created["resultType"] == "task" and created["taskId"].startswith("run_")
        assert created["ttlMs"] == 30 * 86_400_000 and created["pollIntervalMs"] > 0  # the retention
        assert "result" not in created  # the creation answer is the seed state, never the result
        with anyio.fail_after(30):
            task = await session.result("tasks/get", modern({"taskId": created["taskId"]}))
            while task["status"] == "working":
                await anyio.sleep(0.1)
                task = await session.result("tasks/get", modern({"taskId": created["taskId"]}))
        assert task["status"] == "completed" and task["resultType"] == "complete"
        assert task["result"]["structuredContent"]["status"] == "done"
        assert await session.result(
            "tasks/update", modern({"taskId": created["taskId"], "inputResponses": {}})
        ) == {
            "resultType": "complete",
            "_meta": task["_meta"],
        }
        undeclared = await session.request("tasks/get", modern({"taskId": created["taskId"]}, tasks=False))
        assert undeclared["error"]["code"] == -32021


async def test_tasks_list_pages_through_every_run_newest_first_with_an_opaque_cursor() -> None:
    from research_mcp.core.config import Settings
    from research_mcp.server.tasks import LIST_PAGE
    from research_mcp.storage.store import Store

    async with InMemoryTransport(create_server(model=ScriptedModel(team_script))) as (read, write):
        session = RawSession(read, write)
        await session.open()
        plan = await session.call(
            "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
        )
        store = Store(Settings().database_path)
        created = [store.create_run([plan["structuredContent"]["id"]], "scripted", None) for _ in range(205)]

        first = await session.result("tasks/list")
        store.create_run([plan["structuredContent"]["id"]], "scripted", None)  # a run started while paging
        second = await session.result("tasks/list", {"cursor": first["nextCursor"]})
        third = await session.result("tasks/list", {"cursor": second["nextCursor"]})
        bad = await session.request("tasks/list", {"cursor": "not-a-cursor"})

    pages = [first, second, third]
    assert [len(page["tasks"]) for page in pages] == [LIST_PAGE, LIST_PAGE, 5]
    assert "nextCursor" not in third
    listed = [task["taskId"] for page in pages for task in page["tasks"]]
    assert listed == list(reversed(created))  # every run once, newest first; the new one is on no later page
    assert bad["error"]["code"] == INVALID_PARAMS and "cursor" in bad["error"]["message"]


async def test_a_huge_task_id_is_echoed_at_most_80_characters_by_every_task_method() -> None:
    huge = "run_" + "x" * 900_000
    server = create_server(model=ScriptedModel(team_script))
    async with InMemoryTransport(server) as (read, write):
        session = RawSession(read, write)
        await session.open()
        answers = [
            await session.request(method, {"taskId": huge})
            for method in ("tasks/get", "tasks/cancel", "tasks/result")
        ]
    async with InMemoryTransport(server) as (read, write):  # the 2026-07-28 envelope: no handshake
        session = RawSession(read, write)
        answers += [
            await session.request(method, modern({"taskId": huge, "inputResponses": {}}))
            for method in ("tasks/get", "tasks/cancel", "tasks/update")
        ]
    for answer in answers:
        message = answer["error"]["message"]
        assert answer["error"]["code"] == INVALID_PARAMS, message[:200]
        assert "no task 'run_xxxx" in message and len(message) < 140, message[:200]


async def test_a_cancelled_task_names_who_cancelled_it() -> None:
    server = create_server(model=ScriptedModel(team_script, latency=0.5))
    async with InMemoryTransport(server) as (read, write):
        session = RawSession(read, write)
        await session.open()
        plan = await session.call(
            "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
        )
        created = await session.call("execute_plan", {"plan_id": plan["structuredContent"]["id"]}, task={})
        task_id = created["task"]["taskId"]
        await session.result("tasks/cancel", {"taskId": task_id})
        summary = await session.call("report_results", {"id": task_id, "view": "summary"})
    assert "cancelled by the host (tasks/cancel)" in summary["structuredContent"]["text"], summary


async def test_over_http_a_task_is_bound_to_the_session_that_created_it(tmp_path: Path) -> None:
    port = free_port()
    server = start_server(f"127.0.0.1:{port}", tmp_path / "home", port)
    try:
        async with (
            streamable_http_client(server.url) as (read, write),
            streamable_http_client(server.url) as (other_read, other_write),
        ):
            owner, other = RawSession(read, write), RawSession(other_read, other_write)
            await owner.open()
            await other.open()
            plan = await owner.call(
                "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
            )
            created = await owner.call("execute_plan", {"plan_id": plan["structuredContent"]["id"]}, task={})
            task_id = created["task"]["taskId"]

            assert task_id not in [task["taskId"] for task in (await other.result("tasks/list"))["tasks"]]
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                refused = await other.request(method, {"taskId": task_id})
                assert refused["error"]["code"] == INVALID_PARAMS, (method, refused)
                assert "no task" in refused["error"]["message"]  # the same answer as for an unknown id
            hijack = await other.request(
                "tools/call", {"name": "execute_plan", "arguments": {"run_id": task_id}, "task": {}}
            )
            assert hijack["error"]["code"] == INVALID_PARAMS

            assert [task["taskId"] for task in (await owner.result("tasks/list"))["tasks"]] == [task_id]
            finished = await owner.result("tasks/result", {"taskId": task_id})
            assert finished["structuredContent"]["status"] == "done"  # nobody else cancelled it
    finally:
        server.stop()


async def test_over_http_a_request_without_a_session_cannot_read_or_cancel_a_sessions_task(
    tmp_path: Path,
) -> None:
    """The 2026-07-28 envelope carries no session: such a request is not the session that owns a task."""
    from tests.server.test_team import modern_request

    port = free_port()
    server = start_server(f"127.0.0.1:{port}", tmp_path / "home", port)
    try:
        async with streamable_http_client(server.url) as (read, write):
            owner = RawSession(read, write)
            await owner.open()
            plan = await owner.call(
                "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
            )
            created = await owner.call("execute_plan", {"plan_id": plan["structuredContent"]["id"]}, task={})
            task_id = created["task"]["taskId"]

            for method in ("tasks/get", "tasks/cancel"):
                answer = await modern_request(server.url, None, method, {"taskId": task_id})
                assert answer.get("error", {}).get("code") == INVALID_PARAMS, (method, answer)
                assert "no task" in answer["error"]["message"]

            finished = await owner.result("tasks/result", {"taskId": task_id})
            assert finished["structuredContent"]["status"] == "done"  # nobody else cancelled it
    finally:
        server.stop()

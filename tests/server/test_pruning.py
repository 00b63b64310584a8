"""The retention setting applied by a running server: at start, then periodically, logged."""

from __future__ import annotations

import logging

import anyio
import pytest
from mcp import Client

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server import pruning
from research_mcp.server.app import create_server
from tests.server.test_runs import three_leaf_plan
from tests.server.waiting import until_finished


async def finished_run(client: Client) -> str:
    planned = await client.call_tool(
        "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
    )
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan",
            {"plan_id": planned.structured_content["id"], "wait_seconds": 30},  # type: ignore[index]
        ),
    )
    assert run.structured_content["status"] == "done", run.content  # type: ignore[index]
    return str(run.structured_content["id"])  # type: ignore[index]


async def gone(client: Client, run_id: str) -> bool:
    result = await client.call_tool("report_results", {"id": run_id})
    return result.is_error and "No run with id" in result.content[0].text  # type: ignore[union-attr]


async def test_a_server_prunes_runs_past_the_retention_at_start_and_logs_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="research_mcp")
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        old = await finished_run(client)
    monkeypatch.setenv("RESEARCH_MCP_RETENTION_DAYS", "1e-9")  # finished more than 0.1 ms ago
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        with anyio.fail_after(30):
            while not await gone(client, old):
                await anyio.sleep(0.05)  # the first pass runs beside the host's first requests
    assert f"retention: pruned 1 runs finished more than 1e-09 days ago: {old}" in caplog.messages


async def test_a_server_prunes_again_periodically_and_never_without_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pruning, "PRUNE_EVERY_S", 0.05)
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        kept = await finished_run(client)
        await anyio.sleep(0.2)  # four periods without the setting: nothing is pruned
        assert not await gone(client, kept)
    monkeypatch.setenv("RESEARCH_MCP_RETENTION_DAYS", "1e-9")
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        with anyio.fail_after(30):
            while not await gone(client, kept):
                await anyio.sleep(0.05)
            later = await finished_run(client)  # finished after the start's pass
            while not await gone(client, later):
                await anyio.sleep(0.05)

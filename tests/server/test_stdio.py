"""The installed console script over stdio: protocol on stdout only, a log line on stderr."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

import research_mcp
from research_mcp.core.config import Settings
from tests.server.waiting import until_finished

SCRIPT = Path(sys.executable).with_name("research-mcp")
#: The checkout whose research_mcp the tests imported, first on the server's path: the server runs the
#: code under test even where the console script was installed from another checkout.
REPO = Path(research_mcp.__file__).resolve().parent.parent


def server_params(home: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(SCRIPT),
        args=["serve"],
        env={
            "RESEARCH_MCP_HOME": str(home),
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(REPO),
            "HF_HUB_OFFLINE": "1",
            **env,
        },
    )


@pytest.fixture
def script() -> Path:
    if not SCRIPT.exists() and shutil.which("research-mcp") is None:
        pytest.fail("the research-mcp console script is not installed: run `make test`")
    return SCRIPT


async def test_the_stdio_server_lists_five_tools_with_output_schemas_in_at_most_4096_model_visible_bytes(
    script: Path,
) -> None:
    from bench.tool_definitions import model_visible_bytes

    async with Client(server_params(Settings().home), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        names = sorted(tool.name for tool in tools)
        assert names == ["execute_plan", "extract_source", "plan_research", "report_results", "scout_sources"]
        assert all(tool.output_schema is not None for tool in tools)
        # The design's bound on what the host's model carries every turn: name, title, description
        # and input schema. 4,096 B; `python -m bench.tool_definitions` prints it per tool.
        size = sum(
            model_visible_bytes(t.model_dump(mode="json", by_alias=True, exclude_none=True)) for t in tools
        )
        assert size <= 4096
        missing = await client.call_tool("report_results", {"id": "run_000000000000"})
        assert missing.is_error
        assert "No run with id" in missing.content[0].text


async def test_a_full_run_over_stdio_keeps_every_compact_result_under_1000_bytes(script: Path) -> None:

    text = (
        "The Great Barrier Reef is the largest coral reef system in the world. "
        "It is located in the Coral Sea off the coast of Queensland, Australia. "
        "The reef is composed of over 2,900 individual reefs and 900 islands."
    )
    plan_tree = {
        "root": {
            "kind": "executor",
            "title": "reef",
            "children": [
                {"kind": "leaf", "title": "reef", "questions": ["Where is the reef?"], "sources": [text]}
            ],
        }
    }
    async with Client(
        server_params(Settings().home, RESEARCH_MCP_MODEL="extractive"), mode="legacy"
    ) as client:
        plan = await client.call_tool(
            "plan_research", {"query": "Where is the reef?", "suggested_plan": plan_tree}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        report = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "max_tokens": 300}
        )
    for result in (plan, run):
        assert len(result.model_dump_json(by_alias=True, exclude_none=True).encode()) <= 1000
    assert run.structured_content["status"] == "done"
    assert "Queensland" in report.structured_content["text"]
    assert report.structured_content["page_tokens"] <= 300


async def test_a_claude_desktop_like_host_over_stdio_gets_a_run_served_by_its_own_model(script: Path) -> None:
    from tests.server.test_sampling import HostModel

    host = HostModel()
    async with Client(server_params(Settings().home), mode="legacy", sampling_callback=host) as client:
        plan = await client.call_tool("plan_research", {"query": "When was Hubble launched?"})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        report = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "report"}
        )
    assert run.structured_content["backend"] == "sampling"
    assert run.structured_content["status"] == "done", run.content
    assert "Hubble was launched in 1990 [F" in report.structured_content["text"]

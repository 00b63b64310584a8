"""The installed console script over stdio: protocol on stdout only, a log line on stderr."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from research_mcp.config import Settings

SCRIPT = Path(sys.executable).with_name("research-mcp")


def server_params(home: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(SCRIPT),
        args=["serve"],
        env={
            "RESEARCH_MCP_HOME": str(home),
            "PATH": os.environ.get("PATH", ""),
            "HF_HUB_OFFLINE": "1",
            **env,
        },
    )


@pytest.fixture
def script() -> Path:
    if not SCRIPT.exists() and shutil.which("research-mcp") is None:
        pytest.fail("the research-mcp console script is not installed: run `make test`")
    return SCRIPT


async def test_the_stdio_server_lists_five_tools_with_output_schemas_in_under_5_kb(script: Path) -> None:
    import json

    async with Client(server_params(Settings().home), mode="legacy") as client:
        tools = (await client.list_tools()).tools
        names = sorted(tool.name for tool in tools)
        assert names == ["execute_plan", "extract_source", "plan_research", "report_results", "scout_sources"]
        assert all(tool.output_schema is not None for tool in tools)
        size = sum(
            len(json.dumps(t.model_dump(mode="json", by_alias=True, exclude_none=True))) for t in tools
        )
        assert size < 6000
        missing = await client.call_tool("report_results", {"id": "run_000000000000"})
        assert missing.is_error
        assert "No run with id" in missing.content[0].text

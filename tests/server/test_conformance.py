"""The protocol done exactly (issue 26), asserted against the running server: in memory, over the
initialize handshake (2025-11-25) and the 2026-07-28 per-request form, and over stdio through the
installed console script."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from research_mcp.config import Settings
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from tests.server.test_stdio import SCRIPT, server_params

CONNECTIONS = ("memory-2025-11-25", "memory-2026-07-28", "stdio")


@asynccontextmanager
async def connected(connection: str, **options: Any) -> AsyncIterator[Client]:
    """A client of the server over `connection` (the stdio server runs the extractive backend)."""
    if connection == "stdio":
        if not SCRIPT.exists():
            pytest.fail("the research-mcp console script is not installed: run `make test`")
        params = server_params(Settings().home, RESEARCH_MCP_MODEL="extractive")
        async with Client(params, mode="legacy", **options) as client:
            yield client
        return
    mode = "legacy" if connection.endswith("2025-11-25") else "2026-07-28"
    async with Client(create_server(model=ScriptedModel(team_script)), mode=mode, **options) as client:
        yield client


@pytest.fixture(params=CONNECTIONS)
def connection(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_an_unknown_tool_is_invalid_params(connection: str) -> None:
    async with connected(connection) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("no_such_tool", {})
        known = await client.call_tool("report_results", {"id": "run_000000000000"})
    assert refused.value.error.code == INVALID_PARAMS
    assert "Unknown tool 'no_such_tool'" in refused.value.error.message
    assert "plan_research" in refused.value.error.message
    assert known.is_error  # a known tool's own failure stays a tool result

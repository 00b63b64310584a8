"""The raw JSON-RPC a host writes first to a research-mcp process (stdio or HTTP), for the tests and
benchmarks that speak to a real `research-mcp serve` without an MCP client library."""

from __future__ import annotations

from typing import Any

__all__ = ["INITIALIZE", "INITIALIZED", "LIST_TOOLS", "initialize"]


def initialize(client: str = "t", ident: int = 1) -> dict[str, Any]:
    """An `initialize` request as a 2025-06-18 host sends it."""
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


INITIALIZE = initialize()
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}

"""Waiting, in a test, until a server has finished indexing its corpus in the background."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp import Client

STATUS = "research://corpus/status"


async def corpus_status(client: Client) -> dict[str, Any]:
    result = await client.read_resource(STATUS)
    return dict(json.loads(result.contents[0].text))  # type: ignore[union-attr]


async def wait_until_indexed(client: Client, timeout: float = 300) -> dict[str, Any]:
    """The corpus status once the background pass has ended (ready, stopped or failed); the bound
    is generous because several test processes may share two cores."""
    with anyio.fail_after(timeout):
        while True:
            status = await corpus_status(client)
            if status["phase"] in ("ready", "stopped", "failed", "not_configured"):
                return status
            await anyio.sleep(0.05)

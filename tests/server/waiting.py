"""Waiting for a run to end, however loaded the machine: one `execute_plan` wait of N seconds is a
bound a busy machine can reach, not a fact about the run, so a test calls again while it runs."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

#: Only stops a hang: a scripted run takes well under a second on an idle machine.
HANG_S = 300


async def until_finished(client: Client, result: Any, bound_s: float = HANG_S) -> Any:
    """``result`` of execute_plan, or, while its run is pending or running, that of a further wait."""
    with anyio.fail_after(bound_s):
        while not result.is_error and (result.structured_content or {}).get("status") in (
            "pending",
            "running",
        ):
            result = await client.call_tool(
                "execute_plan", {"run_id": result.structured_content["id"], "wait_seconds": 50}
            )
    return result

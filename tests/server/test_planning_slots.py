"""Planning is interactive: plan_research answers while background runs hold every model slot, and a
server already making as many plans as it takes says so at once instead of keeping the caller waiting."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import ExtractorPayload, PlannerInput
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.admission import QUEUE_PER_SLOT
from research_mcp.server.app import create_server
from tests.server.test_runs import three_leaf_plan


class Gate:
    """Calls of the chosen kind wait here until `open` is set; `entered` counts those waiting."""

    def __init__(self, held: type) -> None:
        self.held = held
        self.open = anyio.Event()
        self.entered = 0
        self.changed = anyio.Event()

    async def script(self, request: ModelRequest[Any]) -> Any:
        payload = request.payload
        held = isinstance(payload, self.held) and not (
            isinstance(payload, PlannerInput) and payload.query.startswith("free")
        )
        if held:
            self.entered += 1
            self.changed.set()
            await self.open.wait()
        return team_script(request)

    async def until(self, count: int) -> None:
        with anyio.fail_after(30):
            while self.entered < count:
                self.changed = anyio.Event()
                await self.changed.wait()


async def test_plan_research_answers_while_background_runs_hold_every_model_slot() -> None:
    gate = Gate(ExtractorPayload)
    settings = Settings(RESEARCH_MCP_CONCURRENCY=2, RESEARCH_MCP_ASK_BEFORE_RUN=False)  # type: ignore[call-arg]
    server = create_server(settings, model=ScriptedModel(gate.script))
    async with Client(server) as client:
        planned = await client.call_tool(
            "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
        )
        run = await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 0}
        )
        assert not run.is_error, run.content
        await gate.until(2)  # both model slots are held by the run's extractions

        with anyio.fail_after(30):
            answer = await client.call_tool("plan_research", {"query": "free: how are runs planned?"})
        assert not answer.is_error, answer.content
        assert answer.structured_content["status"] == "feasible"
        assert gate.entered == 2  # the run is still held: planning did not wait for it
        gate.open.set()


async def test_plan_research_at_capacity_says_so_at_once() -> None:
    gate = Gate(PlannerInput)
    settings = Settings(RESEARCH_MCP_PLANNING_SLOTS=1, RESEARCH_MCP_ASK_BEFORE_RUN=False)  # type: ignore[call-arg]
    server = create_server(settings, model=ScriptedModel(gate.script))
    most = QUEUE_PER_SLOT * 1
    async with Client(server) as client, anyio.create_task_group() as group:
        answers: list[Any] = []

        async def plan(query: str) -> None:
            answers.append(await client.call_tool("plan_research", {"query": query}))

        group.start_soon(plan, "held 0")
        await gate.until(1)  # one plan asks the model (the one planning slot)
        for index in range(1, most):
            group.start_soon(plan, f"held {index}")
        with anyio.fail_after(30):  # the others wait for the slot, inside the server: every task is blocked
            await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(30):
            refused = await client.call_tool("plan_research", {"query": "one too many"})
        assert refused.is_error
        assert f"at capacity: {most} plans are being made now" in refused.content[0].text
        gate.open.set()
    assert [answer.is_error for answer in answers] == [False] * most

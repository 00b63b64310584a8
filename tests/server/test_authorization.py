"""Authorization before a run: execute_plan asks a client that can elicit (the plan's leaves, its
estimate, any scope warning) and starts the run only on the user's yes; `elicitation/create` on
2025-11-25 (legacy handshake) and the `input_required` round trip on 2026-07-28 (the SDK default)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import CallToolResult, ElicitRequest, ElicitRequestParams, ElicitResult, InputRequiredResult

from research_mcp.core.config import Settings
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.test_runs import plan

MODES = ["legacy", "auto"]


class User:
    """The person behind the client: answers each authorization question with `action`."""

    def __init__(self, action: str = "accept", start: bool = True) -> None:
        self.action, self.start = action, start
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        content = {"start": self.start} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


def runs() -> int:
    store = Store(Settings().database_path)
    try:
        return len(store.recent_runs(100))
    finally:
        store.close()


async def start(client: Client, plan_id: str) -> dict[str, Any]:
    result = await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 20})
    assert not result.is_error, result.content
    return dict(result.structured_content)


@pytest.mark.parametrize("mode", MODES)
async def test_the_user_is_shown_the_leaves_and_estimate_and_a_yes_starts_the_run(mode: str) -> None:
    user = User()
    server = create_server(model=ScriptedModel(team_script))
    async with Client(server, mode=mode, elicitation_callback=user) as client:  # type: ignore[arg-type]
        handle = await start(client, await plan(client))
    assert handle["kind"] == "run" and handle["status"] == "done"
    [question] = user.asked
    assert "leaf 0" in question and "leaf 1" in question and "leaf 2" in question
    assert "3 leaves" in question and "model calls" in question and "Start this research run?" in question


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("action", "said"), [("decline", "declined"), ("cancel", "dismissed")])
async def test_a_declined_run_does_not_start_and_the_result_says_so(
    mode: str, action: str, said: str
) -> None:
    user = User(action)
    async with Client(
        create_server(model=ScriptedModel(team_script)),
        mode=mode,
        elicitation_callback=user,  # type: ignore[arg-type]
    ) as client:
        plan_id = await plan(client)
        handle = await start(client, plan_id)
    assert (handle["kind"], handle["id"], handle["status"]) == ("plan", plan_id, "declined")
    assert said in handle["summary"][0] and "nothing ran" in handle["summary"][0]
    assert runs() == 0


async def test_answering_yes_but_unticking_start_is_a_decline() -> None:
    user = User("accept", start=False)
    async with Client(create_server(model=ScriptedModel(team_script)), elicitation_callback=user) as client:  # type: ignore[arg-type]
        handle = await start(client, await plan(client))
    assert handle["status"] == "declined" and runs() == 0


async def test_a_too_broad_query_is_flagged_in_the_question() -> None:
    user = User()
    async with Client(create_server(model=ScriptedModel(team_script)), elicitation_callback=user) as client:  # type: ignore[arg-type]
        result = await client.call_tool("plan_research", {"query": "everything about the history of science"})
        await start(client, result.structured_content["id"])
    [question] = user.asked
    assert "warning: too broad" in question


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_elicitation_runs_as_before(mode: str) -> None:
    async with Client(create_server(model=ScriptedModel(team_script)), mode=mode) as client:
        handle = await start(client, await plan(client))
    assert handle["status"] == "done"


async def test_the_setting_turns_the_question_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_ASK_BEFORE_RUN", "false")
    user = User("decline")
    async with Client(create_server(model=ScriptedModel(team_script)), elicitation_callback=user) as client:  # type: ignore[arg-type]
        handle = await start(client, await plan(client))
    assert handle["status"] == "done" and user.asked == []


async def test_waiting_on_a_run_is_never_asked_again() -> None:
    user = User()
    async with Client(create_server(model=ScriptedModel(team_script)), elicitation_callback=user) as client:  # type: ignore[arg-type]
        handle = await start(client, await plan(client))
        again = await client.call_tool("execute_plan", {"run_id": handle["id"], "wait_seconds": 1})
    assert again.structured_content["status"] == "done"
    assert len(user.asked) == 1


async def test_an_unknown_plan_is_refused_without_a_question() -> None:
    user = User()
    async with Client(create_server(model=ScriptedModel(team_script)), elicitation_callback=user) as client:  # type: ignore[arg-type]
        result = await client.call_tool("execute_plan", {"plan_id": "plan_000000000000"})
    assert result.is_error and user.asked == []


async def test_on_2026_07_28_the_question_is_an_input_required_result_answered_by_the_retry() -> None:
    async with Client(create_server(model=ScriptedModel(team_script)), elicitation_callback=User()) as client:  # type: ignore[arg-type]
        plan_id = await plan(client)
        arguments = {"plan_id": plan_id, "wait_seconds": 20}
        asked = await client.session.call_tool("execute_plan", arguments, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult) and runs() == 0
        [(key, request)] = asked.input_requests.items()
        assert isinstance(request, ElicitRequest) and "Start this research run?" in request.params.message
        answer = ElicitResult(action="accept", content={"start": True})
        done = await client.session.call_tool(
            "execute_plan",
            arguments,
            input_responses={key: answer},
            request_state=asked.request_state,
            allow_input_required=True,
        )
    assert isinstance(done, CallToolResult) and done.structured_content["status"] == "done"
    assert runs() == 1


async def test_starting_a_plan_that_already_ran_returns_its_run_without_asking_again() -> None:
    user = User()
    async with Client(create_server(model=ScriptedModel(team_script)), elicitation_callback=user) as client:  # type: ignore[arg-type]
        plan_id = await plan(client)
        first = await start(client, plan_id)
        again = await start(client, plan_id)
    assert again["id"] == first["id"] and len(user.asked) == 1

"""`research-mcp run`: one research run driven from the terminal through the server's own tools.

An in-memory MCP client calls plan_research, then execute_plan until the run has finished, while
`LiveProgress` shows the run from the store. Ctrl-C cancels the run through execute_plan's cancel
path (the run records itself as cancelled; every store write is a whole transaction) and
`Interrupted` carries its id, so that `research-mcp run --resume RUN_ID` can finish it: nodes already
done are read back, not run again.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult

from research_mcp.cli.progress import LiveProgress
from research_mcp.core.config import Settings

__all__ = ["Interrupted", "RunFailed", "RunRequest", "drive"]

WAIT_S = 30.0  # each execute_plan call waits this long (the tool allows at most 55 s)
CORPUS_STATUS = "research://corpus/status"
CORPUS_POLL_S = 0.2
CORPUS_NOTE_S = 2.0  # at most one line about indexing this often


class RunFailed(Exception):
    """The run could not be planned, started or finished; the message says what to do."""


class Interrupted(Exception):
    """Ctrl-C: the run (if one had started) was cancelled and can be resumed."""

    def __init__(self, run_id: str | None, status: str | None) -> None:
        super().__init__(run_id)
        self.run_id = run_id
        self.status = status


@dataclass
class RunRequest:
    query: str | None = None
    resume: str | None = None
    budget: dict[str, Any] | None = None
    # Asks the person at the terminal the server's authorization question; None: start unasked.
    confirm: Callable[[str], bool] | None = None


@dataclass
class _State:
    phase: str = "planning"  # planning | asking | starting | running
    run_id: str | None = None
    interrupted: bool = False
    main: anyio.CancelScope = field(default_factory=anyio.CancelScope)


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content).strip()


def _handle(result: Any, doing: str) -> dict[str, Any]:
    if result.is_error or result.structured_content is None:
        message = re.sub(r"^Error executing tool \w+: ", "", _text(result))
        raise RunFailed(f"{doing} failed: {message}")
    return dict(result.structured_content)


async def drive(settings: Settings, request: RunRequest, progress: LiveProgress) -> dict[str, Any]:
    """Plan (or resume) and execute one run; its final handle (status done, budget_exhausted...)."""
    from research_mcp.server.app import create_server

    state = _State()
    handle: dict[str, Any] = {}
    failure: RunFailed | None = None
    asker = _asker(request.confirm, state) if request.confirm is not None else None
    async with (
        Client(create_server(settings), elicitation_callback=asker) as client,
        anyio.create_task_group() as group,
    ):
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            group.start_soon(_on_interrupt, signals, client, state, progress)
            try:
                with state.main:
                    handle = await _run(client, request, state, progress, group)
            except RunFailed as error:  # raised once the server has shut down, not wrapped in its task groups
                failure = error
            finally:
                group.cancel_scope.cancel()
    if failure is not None and not state.interrupted:
        raise failure
    if state.interrupted:
        raise Interrupted(state.run_id, handle.get("status"))
    return handle


async def _run(
    client: Client, request: RunRequest, state: _State, progress: LiveProgress, group: Any
) -> dict[str, Any]:
    await _wait_for_corpus(client, progress)
    if request.resume is not None:
        state.phase = "starting"
        handle = _handle(
            await client.call_tool(
                "execute_plan", {"run_id": request.resume, "wait_seconds": 0, "retry": True}
            ),
            f"resuming {request.resume}",
        )
    else:
        assert request.query is not None
        progress.note(f"planning: {request.query}")
        arguments: dict[str, Any] = {"query": request.query}
        if request.budget:
            arguments["budget"] = request.budget
        plan = _handle(await client.call_tool("plan_research", arguments), "planning")
        if plan["status"] != "feasible":
            raise RunFailed(" ".join(plan["summary"]))
        progress.note(f"plan {plan['id']} ({plan['backend']}): " + " · ".join(plan["summary"][:2]))
        state.phase = "starting"
        start = {"plan_id": plan["id"], "wait_seconds": 0}  # the plan's budget binds its run
        handle = _handle(await client.call_tool("execute_plan", start), "starting the run")
        if handle["status"] == "declined":
            raise RunFailed(f"not started: the run was declined; the plan is kept as {plan['id']}")
    state.run_id, state.phase = handle["id"], "running"
    if state.interrupted:  # Ctrl-C while the run was being started: cancel it now that its id is known
        return await _cancel(client, state.run_id)
    watcher = anyio.CancelScope()

    async def follow() -> None:
        with watcher:
            await progress.follow(handle["id"])

    group.start_soon(follow)
    try:
        while handle["status"] in ("pending", "running") and not state.interrupted:
            handle = _handle(
                await client.call_tool("execute_plan", {"run_id": handle["id"], "wait_seconds": WAIT_S}),
                f"waiting on {handle['id']}",
            )
    finally:
        watcher.cancel()
    return handle


def _asker(confirm: Callable[[str], bool], state: _State) -> Any:
    """The client's elicitation callback: the server's question, asked on the terminal."""

    async def ask(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        state.phase = "asking"
        try:
            start = await anyio.to_thread.run_sync(confirm, params.message, abandon_on_cancel=True)
        finally:
            state.phase = "starting"
        return ElicitResult(action="accept", content={"start": start})

    return ask


async def _wait_for_corpus(client: Client, progress: LiveProgress) -> None:
    """A terminal run searches the whole corpus: wait for the server's indexing pass, saying how far
    it has got every few seconds (a server answering a host does not wait: its results say what
    they could search)."""
    shown, last = "", 0.0
    while True:
        result = await client.read_resource(CORPUS_STATUS)
        status = json.loads(getattr(result.contents[0], "text", "{}"))
        if status.get("phase") in (None, "ready", "stopped", "failed", "not_configured"):
            if shown and status.get("line"):
                progress.note(status["line"])
            return
        if status["line"] != shown and anyio.current_time() - last >= CORPUS_NOTE_S:
            progress.note(status["line"])
            shown, last = status["line"], anyio.current_time()
        await anyio.sleep(CORPUS_POLL_S)


async def _cancel(client: Client, run_id: str) -> dict[str, Any]:
    result = await client.call_tool("execute_plan", {"run_id": run_id, "cancel": True})
    return _handle(result, f"cancelling {run_id}")


async def _on_interrupt(signals: Any, client: Client, state: _State, progress: LiveProgress) -> None:
    async for _ in signals:
        if state.interrupted:
            progress.note("still cancelling the run; it takes a few seconds at most")
            continue
        state.interrupted = True
        if state.phase in ("planning", "asking"):
            progress.note(f"interrupted while {state.phase}: stopping")
            state.main.cancel()
        elif state.phase == "running" and state.run_id is not None:
            progress.note(f"interrupted: cancelling run {state.run_id}")
            try:
                await _cancel(client, state.run_id)
            except RunFailed as error:
                progress.note(str(error))
                state.main.cancel()
        # "starting": the main flow cancels the run as soon as execute_plan has returned its id

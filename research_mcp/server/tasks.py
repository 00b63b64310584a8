"""Protocol tasks for runs: a task-augmented `execute_plan` returns a task at once, and the task is
the run (its id is the run id), so tasks live in the store with the runs and survive a restart.

Two wire forms, one store:

- 2025-11-25: the client sends `params.task` on `tools/call`; the server declares
  `capabilities.tasks` and `execution.taskSupport: "optional"` on `execute_plan`, answers with
  `{task: {...}}`, and serves `tasks/get`, `tasks/result` (blocks until the run ends), `tasks/cancel`
  and `tasks/list` (paged: `cursor` in, `nextCursor` out).
- 2026-07-28, the `io.modelcontextprotocol/tasks` extension: the client declares the extension in
  its per-request capabilities; the server answers `{resultType: "task", ...}` and serves
  `tasks/get` (the finished result inlined), `tasks/cancel` and `tasks/update` (empty
  acknowledgements).

A call without either is served exactly as before (the polling flow: `execute_plan(run_id)`).

Isolation, as the tasks spec asks: over streamable HTTP a task is bound to the caller that created
it (research_mcp/core/callers.py), recorded with the run in the store, so it outlives the server process:
the user its bearer token names, else its session (`mcp-session-id`), else the anonymous caller of
requests with neither, whatever the protocol version. Another caller's `tasks/list` does not show it,
and its `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update` get the same "no task" error
as an unknown id. Over stdio and in memory one host holds the connection and sees every run. A
task id is echoed in an error at most 80 characters long (`errors.shown`), and a cancelled run
names who cancelled it.
The SDK validates a `tools/call` result against `CallToolResult` at 2025-11-25, so a task answer
is made in a server middleware, the seam whose result the SDK passes through as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from research_mcp.core.callers import may_see_task
from research_mcp.core.contracts import FINISHED, CompactReturn
from research_mcp.core.errors import NotFound, ResearchError, shown
from research_mcp.server.context import ServerState, caller_of

__all__ = ["TASKS_EXTENSION", "RunTasks", "TaskRequests"]

logger = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TASK_VERSION = "2025-11-25"  # the one handshake version that has tasks in its core
TASK_TOOL = "execute_plan"
POLL_INTERVAL_MS = 2000
LIST_PAGE = 100  # tasks per tasks/list page
WAIT_SLICE_S = 55.0  # tasks/result waits on the run in slices, as execute_plan does

TaskStatus = Literal["working", "completed", "failed", "cancelled"]
RequestContext = ServerRequestContext[ServerState, Any]


class TaskParams(RequestParams):
    task_id: str


class ListParams(RequestParams):
    cursor: str | None = None


def _modern(ctx: RequestContext) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _iso(stamp: str | None) -> str:
    """The store's timestamps as ISO 8601 with a zone (they are UTC)."""
    moment = datetime.fromisoformat(stamp) if stamp else datetime.now(UTC)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def _status(run_status: str, modern: bool) -> TaskStatus:
    if run_status in FINISHED:
        return "completed"
    if run_status == "cancelled":
        return "cancelled"
    if run_status == "failed":
        # 2026-07-28 keeps `failed` for JSON-RPC errors; a failed run is a tool result saying so.
        return "completed" if modern else "failed"
    return "working"


def _call_result(handle: CompactReturn) -> dict[str, Any]:
    """The handle as the `CallToolResult` that execute_plan(run_id) would return."""
    return {
        "content": [{"type": "text", "text": handle.render()}],
        "structuredContent": handle.model_dump(mode="json"),
        "isError": False,
    }


def _retention_ms(state: ServerState) -> int:
    return round(state.service.settings.task_retention_days * 86_400_000)


def _keep(state: ServerState, run_id: str, requested: Any) -> None:
    """Record how long the task is kept: the client's `ttl` (ms), bounded by the retention setting."""
    ttl = _retention_ms(state)
    if isinstance(requested, int) and not isinstance(requested, bool) and requested >= 0:
        ttl = min(requested, ttl)
    state.service.keep_as_task(run_id, ttl)


def _ttl_ms(state: ServerState, run_id: str) -> int:
    """How long the run is kept as a task: as recorded when it was started as one, else the retention."""
    ttl = state.service.task_ttl_ms(run_id)
    return ttl if ttl is not None else _retention_ms(state)


def _expired(state: ServerState, run: Any) -> bool:
    age = datetime.now(UTC) - datetime.fromisoformat(_iso(run.created_at))
    return age.total_seconds() * 1000 > _ttl_ms(state, run.id)


def _task(state: ServerState, run_id: str, modern: bool) -> dict[str, Any]:
    """The run as a task (wire field names of the negotiated version)."""
    run = state.service.run(run_id)
    status = _status(run.status, modern)
    handle = state.service.run_handle(run)
    task: dict[str, Any] = {
        "taskId": run_id,
        "status": status,
        "statusMessage": handle.summary[0] if handle.summary else run.status,
        "createdAt": _iso(run.created_at),
        "lastUpdatedAt": _iso(run.finished_at or run.started_at or run.created_at),
    }
    if modern:
        task |= {"ttlMs": _ttl_ms(state, run_id), "pollIntervalMs": POLL_INTERVAL_MS}
        if status == "completed":
            task["result"] = _call_result(handle)
    else:
        task |= {"ttl": _ttl_ms(state, run_id), "pollInterval": POLL_INTERVAL_MS}
    return task


def _known(ctx: RequestContext, task_id: str) -> str:
    """The task's id, if it is a run this caller may see, still kept as a task (its ttl not yet past)."""
    state = ctx.lifespan_context
    try:
        run = state.service.run(task_id)
    except (NotFound, ResearchError):
        run = None
    if run is None or not may_see_task(run.caller, caller_of(ctx)):
        raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no task {shown(task_id)}")
    if _expired(state, run):
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"Failed to retrieve task: task {shown(task_id)} has expired (its ttl has passed); "
            f"execute_plan(run_id={shown(task_id)}) still reads the run",
        )
    return task_id


def _canceller(ctx: RequestContext) -> str:
    """Who cancels, as the cancelled run records it."""
    caller = caller_of(ctx)
    if caller is not None and caller.startswith("session:"):
        return f"the host (tasks/cancel, session {caller.removeprefix('session:')[:8]}…)"
    return f"the host (tasks/cancel, {caller})" if caller else "the host (tasks/cancel)"


async def _go_on(ctx: RequestContext, run_id: str, wait_seconds: float) -> CompactReturn:
    """Wait on the run up to `wait_seconds`, resuming it first if a restart interrupted it. A run
    that has ended (cancelled ones included) is only read: polling a task never restarts it."""
    state = ctx.lifespan_context
    run = state.service.run(run_id)
    if _status(run.status, modern=False) != "working":
        return state.service.run_handle(run)
    tool_ctx: Context[ServerState] = Context(request_context=ctx)
    return await state.service.execute(
        plan_ids=[],
        run_id=run_id,
        wait_seconds=wait_seconds,
        cancel=False,
        progress=None,
        model=lambda: state.model_for(tool_ctx),
    )


async def get_task(ctx: RequestContext, params: TaskParams) -> dict[str, Any]:
    if _modern(ctx):
        require_client_extension(ctx, TASKS_EXTENSION)
    run_id = _known(ctx, params.task_id)
    await _go_on(ctx, run_id, 0)
    return _task(ctx.lifespan_context, run_id, _modern(ctx))


async def task_result(ctx: RequestContext, params: TaskParams) -> dict[str, Any]:
    """2025-11-25: block until the run has ended, then return what execute_plan would have."""
    run_id = _known(ctx, params.task_id)
    handle = await _go_on(ctx, run_id, WAIT_SLICE_S)
    while _status(handle.status, modern=False) == "working":
        handle = await _go_on(ctx, run_id, WAIT_SLICE_S)
    return _call_result(handle) | {"_meta": {RELATED_TASK: {"taskId": run_id}}}


async def cancel_task(ctx: RequestContext, params: TaskParams) -> dict[str, Any]:
    state = ctx.lifespan_context
    modern = _modern(ctx)
    if modern:
        require_client_extension(ctx, TASKS_EXTENSION)
    run_id = _known(ctx, params.task_id)
    if _status(state.service.run(run_id).status, modern) != "working":
        if modern:
            return {}  # cancellation is cooperative: a finished task stays as it ended
        raise MCPError(code=INVALID_PARAMS, message=f"Cannot cancel task {run_id!r}: it has already ended")
    await state.service.cancel(run_id, by=_canceller(ctx))
    return {} if modern else _task(state, run_id, modern=False)


async def update_task(ctx: RequestContext, params: TaskParams) -> dict[str, Any]:
    """2026-07-28: no run ever asks for input, so an update is acknowledged and ignored."""
    require_client_extension(ctx, TASKS_EXTENSION)
    _known(ctx, params.task_id)
    return {}


_BAD_CURSOR = "Invalid cursor: give the nextCursor of the last page, or none."


async def list_tasks(ctx: RequestContext, params: ListParams) -> dict[str, Any]:
    """2025-11-25: every run (over HTTP, the session's own tasks), newest first, a page of
    `LIST_PAGE` at a time. The cursor is opaque to the client (it is the last run of the page);
    `nextCursor` is left out on the last page."""
    state = ctx.lifespan_context
    caller = caller_of(ctx)
    try:
        if caller is None:
            runs = state.service.runs_page(LIST_PAGE + 1, after=params.cursor)
        else:
            if params.cursor is not None and not may_see_task(
                state.service.run(params.cursor).caller, caller
            ):
                raise NotFound("run", params.cursor)
            runs = state.service.task_runs_page(caller, LIST_PAGE + 1, after=params.cursor)
    except NotFound:
        raise MCPError(code=INVALID_PARAMS, message=_BAD_CURSOR) from None
    page = runs[:LIST_PAGE]
    kept = [run for run in page if not _expired(state, run)]
    listed: dict[str, Any] = {"tasks": [_task(state, run.id, modern=False) for run in kept]}
    if len(runs) > LIST_PAGE:
        listed["nextCursor"] = page[-1].id
    return listed


class RunTasks(Extension):
    """The task methods, served over the runs; the extension is advertised to 2026-07-28 clients."""

    identifier = TASKS_EXTENSION

    def methods(self) -> Sequence[MethodBinding]:
        legacy = frozenset({TASK_VERSION})
        return (
            MethodBinding("tasks/get", TaskParams, get_task),
            MethodBinding("tasks/cancel", TaskParams, cancel_task),
            MethodBinding("tasks/result", TaskParams, task_result, protocol_versions=legacy),
            MethodBinding("tasks/list", ListParams, list_tasks, protocol_versions=legacy),
            MethodBinding(
                "tasks/update", TaskParams, update_task, protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS)
            ),
        )


class TaskRequests:
    """Server middleware: task-augmented `execute_plan` calls, and the 2025-11-25 declarations."""

    async def __call__(self, ctx: RequestContext, call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and self._task_of_another_tool(ctx):
            raise MCPError(
                code=METHOD_NOT_FOUND,
                message=f"Tool {(ctx.params or {}).get('name')!r} does not run as a task: call it without `task`.",
            )
        if ctx.method == "tools/call" and self._wants_task(ctx):
            return await self._start_task(ctx, call_next)
        result = await call_next(ctx)
        if (
            isinstance(result, dict)
            and ctx.method == "initialize"
            and result.get("protocolVersion") == TASK_VERSION
        ):
            capabilities = result.setdefault("capabilities", {})
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        if isinstance(result, dict) and ctx.method == "tools/list" and ctx.protocol_version == TASK_VERSION:
            for tool in result.get("tools", []):
                if tool.get("name") == TASK_TOOL:
                    tool["execution"] = {"taskSupport": "optional"}
        return result

    @staticmethod
    def _task_of_another_tool(ctx: RequestContext) -> bool:
        """2025-11-25: a task-augmented call of a tool without `execution.taskSupport` (-32601)."""
        params = ctx.params or {}
        return (
            ctx.protocol_version == TASK_VERSION
            and params.get("name") != TASK_TOOL
            and isinstance(params.get("task"), dict)
        )

    @staticmethod
    def _wants_task(ctx: RequestContext) -> bool:
        params = ctx.params or {}
        if params.get("name") != TASK_TOOL:
            return False
        if _modern(ctx):
            capabilities = ctx.session.client_capabilities
            return bool(
                capabilities and capabilities.extensions and TASKS_EXTENSION in capabilities.extensions
            )
        return ctx.protocol_version == TASK_VERSION and isinstance(params.get("task"), dict)

    @staticmethod
    async def _start_task(ctx: RequestContext, call_next: CallNext) -> HandlerResult:
        """Start (or find) the run at once, and answer with it as a task."""
        params = dict(ctx.params or {})
        requested = params.get("task", {}).get("ttl") if isinstance(params.get("task"), dict) else None
        arguments = params.get("arguments")
        params["arguments"] = {**(arguments if isinstance(arguments, dict) else {}), "wait_seconds": 0}
        params.pop("task", None)
        result = await call_next(replace(ctx, params=params))
        structured = result.get("structuredContent") if isinstance(result, dict) else None
        declined = isinstance(structured, dict) and structured.get("kind") != "run"  # the user said no
        if (
            not isinstance(result, dict)
            or result.get("isError")
            or not isinstance(structured, dict)
            or declined
        ):
            if _modern(ctx) or not isinstance(result, dict):
                return result  # the server decides per request: a refused call is no task
            content = result.get("content") or [{}]
            raise MCPError(code=INVALID_PARAMS, message=str(content[0].get("text", "Invalid arguments")))
        run_id = str(structured["id"])
        # Bound to the caller that started it; execute_plan(run_id) of another caller's run is refused.
        if not may_see_task(ctx.lifespan_context.service.run(run_id).caller, caller_of(ctx)):
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no task {shown(run_id)}")
        _keep(ctx.lifespan_context, run_id, requested)
        task = _task(ctx.lifespan_context, run_id, _modern(ctx))
        task.pop("result", None)
        if _modern(ctx):
            return {"resultType": "task", **task, "_meta": result.get("_meta", {})}
        return {"task": task}

"""The five tools: each parses, calls one service method, and returns its compact result."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp_types import INVALID_PARAMS
from pydantic import Field, ValidationError

from research_mcp.contracts import Budget, CompactReturn, ReportPage, View
from research_mcp.errors import InvalidInput, ResearchError, shown
from research_mcp.llm.base import ModelBackend
from research_mcp.server import inputs
from research_mcp.server.context import ToolContext
from research_mcp.server.schemas import output_outline, published_schema
from research_mcp.service import ResearchService

__all__ = ["UnknownTools", "build_tools"]

P = ParamSpec("P")
R = TypeVar("R")

Compact = Annotated[CallToolResult, CompactReturn]
Page = Annotated[CallToolResult, ReportPage]


def research_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Anticipated failures become isError results carrying what to do next."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except ResearchError as error:
            raise ToolError(str(error)) from error

    return wrapper


def compact(result: CompactReturn) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=result.render())], structured_content=result.model_dump()
    )


def page(result: ReportPage) -> CallToolResult:
    text = result.text + (f"\n[more: cursor={result.cursor}]" if result.cursor else "")
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=result.model_dump()
    )


# Only the hints that differ from the protocol's defaults (readOnly false, destructive true, openWorld true).
WRITES = ToolAnnotations(destructive_hint=False)
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class CheckedTool(Tool):
    """A tool that refuses unknown arguments, and whose argument errors name each argument, what is
    wrong with it and what was given (the SDK's own message is pydantic's, several lines long)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        known = list(self.parameters.get("properties", {}))
        unknown = [key for key in arguments if key not in known]
        if unknown:
            raise ToolError(
                f"Error executing tool {self.name}: unknown argument {shown(unknown[0])}; "
                f"give only {', '.join(known)}."
            )
        try:
            return await super().run(arguments, context, convert_result=convert_result)
        except ToolError as error:  # the SDK validates the arguments once; its message is reworded here
            cause = error.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"Error executing tool {self.name}: {inputs.describe(cause)}") from cause
            if isinstance(cause, RecursionError):
                raise ToolError(
                    f"Error executing tool {self.name}: an argument is nested too deeply."
                ) from None
            raise


class StrictArguments(FuncMetadata):
    """Arguments validated strictly, nested objects included: "5" is not 5 and "true" is not true.
    (The SDK still parses a list or object sent as a JSON string, which some hosts do.)"""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        parsed = self.arg_model.model_validate(self.pre_parse_json(arguments_to_validate), strict=True)
        return parsed.model_dump_one_level()


def _tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    tool = CheckedTool.from_function(fn, annotations=annotations)
    loose = tool.fn_metadata
    tool.fn_metadata = StrictArguments(
        arg_model=loose.arg_model,
        output_schema=loose.output_schema,
        output_model=loose.output_model,
        wrap_output=loose.wrap_output,
    )
    tool.parameters = {**published_schema(tool.parameters), "additionalProperties": False}
    if tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_schema = output_outline(tool.fn_metadata.output_schema)
    return tool


def _model(ctx: ToolContext) -> ModelBackend:
    """The model backend for this call: picked here, where the client's capabilities are known."""
    return ctx.request_context.lifespan_context.model_for(ctx)


def _service(ctx: ToolContext) -> ResearchService:
    return ctx.request_context.lifespan_context.service


@research_errors
async def plan_research(
    query: Annotated[inputs.Query, Field(description="The research question, narrowed with the user.")],
    ctx: ToolContext,
    suggested_plan: Annotated[
        inputs.SuggestedPlan | None,
        Field(description="Optional plan: nodes, root first; parent is an earlier node's index."),
    ] = None,
    budget: Budget | None = None,
) -> Compact:
    """A feasible research plan and its estimate; nothing runs yet."""
    service = _service(ctx)
    return compact(await service.plan(query, suggested=suggested_plan, budget=budget, model=_model(ctx)))


@research_errors
async def execute_plan(
    ctx: ToolContext,
    plan_id: inputs.PlanId | None = None,
    plan_ids: Annotated[
        list[inputs.PlanId] | None, Field(description="Several plans, one final answer.")
    ] = None,
    run_id: inputs.RunId | None = None,
    wait_seconds: Annotated[
        inputs.WaitSeconds | None,
        Field(description="Seconds to wait (default 45); the run goes on."),
    ] = None,
    cancel: bool | None = None,
    retry: Annotated[bool | None, Field(description="Rerun a partial run's failed parts.")] = None,
    budget: Budget | None = None,
) -> Compact:
    """Start a research run of plan_id(s), or wait on, resume or cancel run_id."""
    ids = inputs.check_plan_ids(plan_id, plan_ids)
    if run_id is None and not ids:
        raise InvalidInput("give plan_id (or plan_ids) to start a run, or run_id to wait on one.")
    if cancel and run_id is None:
        raise InvalidInput("cancel needs the run_id of the run to stop.")

    async def progress(value: float, total: int, message: str) -> None:
        await ctx.report_progress(value, total, message)

    service = _service(ctx)
    return compact(
        await service.execute(
            plan_ids=ids,
            run_id=run_id,
            wait_seconds=service.settings.wait_seconds if wait_seconds is None else wait_seconds,
            cancel=bool(cancel),
            budget=budget,
            progress=progress,
            model=lambda: _model(ctx),
            retry=bool(retry),
        )
    )


@research_errors
async def extract_source(
    source: Annotated[inputs.SourceRef, Field(description="URL, corpus:<id>, S<id> or the text itself.")],
    questions: inputs.Questions,
    ctx: ToolContext,
    task_spec: Annotated[inputs.TaskSpec | None, Field(description="How to extract.")] = None,
) -> Compact:
    """Extract facts with verbatim, checked quotes from one source."""
    asked = [question.strip() for question in questions if question.strip()]
    if not asked and task_spec is None:
        raise InvalidInput("give at least one question to ask of the source.")
    service = _service(ctx)
    return compact(await service.extract(source, asked, task_spec=task_spec, model=_model(ctx)))


@research_errors
async def scout_sources(
    topic: inputs.Topic,
    ctx: ToolContext,
    queries: Annotated[inputs.SearchQueries | None, Field(description="Extra search queries.")] = None,
    limit: inputs.ScoutLimit | None = 8,
) -> Compact:
    """Find, de-duplicate, rank and tag sources on a topic."""
    service = _service(ctx)
    return compact(await service.scout(topic.strip(), list(queries or []), limit or 8, model=_model(ctx)))


@research_errors
async def report_results(
    id: inputs.ReportId,
    ctx: ToolContext,
    view: View | None = "summary",
    cursor: inputs.Cursor = None,
    max_tokens: inputs.MaxTokens | None = 2000,
) -> Page:
    """Read a run, plan or handoff, one view and page at a time."""
    return page(_service(ctx).report(id, view or "summary", cursor, max_tokens or 2000))


def build_tools() -> list[Tool]:
    """The five tools, with compact schemas."""
    return [
        _tool(plan_research, WRITES),
        _tool(execute_plan, WRITES),
        _tool(extract_source, WRITES),
        _tool(scout_sources, WRITES),
        _tool(report_results, READS),
    ]


class UnknownTools:
    """Server middleware: `tools/call` of a tool this server does not have is invalid params (-32602),
    a protocol error as the tools pages of 2025-06-18 and later list it, not an isError result."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if not isinstance(name, str) or name not in self.names:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"Unknown tool {shown(name)}: the tools are {', '.join(self.names)}.",
                    data={"name": name},
                )
        return await call_next(ctx)

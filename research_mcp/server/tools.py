"""The five tools: each parses, calls one service method, and returns its compact result."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Resolve
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from research_mcp.core.contracts import Budget, CompactReturn, ReportPage
from research_mcp.core.errors import InvalidInput, ResearchError, shown
from research_mcp.core.printable import printable
from research_mcp.llm.base import ModelBackend
from research_mcp.server import inputs
from research_mcp.server.authorization import RunAuthorization, authorize_run
from research_mcp.server.context import ToolContext, caller_of
from research_mcp.server.schemas import published_output, published_schema
from research_mcp.service import ResearchService

__all__ = ["READS", "build_tools", "checked_tool"]

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


def shown_to_host(value: Any) -> Any:
    """Every string of a result made printable: what a document wrote is shown, never reordered or
    hidden (bidi overrides, zero-width and tag characters) or obeyed (terminal controls)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {key: shown_to_host(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shown_to_host(item) for item in value]
    return value


def compact(result: CompactReturn) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=printable(result.render()))],
        structured_content=shown_to_host(result.model_dump()),
    )


def page(result: ReportPage) -> CallToolResult:
    text = result.text + (f"\n[more: cursor={result.cursor}]" if result.cursor else "")
    return CallToolResult(
        content=[TextContent(type="text", text=printable(text))],
        structured_content=shown_to_host(result.model_dump()),
    )


# Published as the default of an optional list: leaving it out (or null, or []) means none.
EMPTY_LIST: dict[str, Any] = {"default": []}
NO_LIMITS: dict[str, Any] = {"default": {}}  # a budget without limits is no budget

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


def checked_tool(fn: Callable[..., Any], title: str, annotations: ToolAnnotations) -> Tool:
    """The tool of `fn`: arguments checked strictly, compact input schema, full output schema."""
    tool = CheckedTool.from_function(fn, title=title, annotations=annotations)
    loose = tool.fn_metadata
    tool.fn_metadata = StrictArguments(
        arg_model=loose.arg_model,
        output_schema=loose.output_schema,
        output_model=loose.output_model,
        wrap_output=loose.wrap_output,
    )
    tool.parameters = published_schema(tool.parameters)
    if tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_schema = published_output(tool.fn_metadata.output_schema)
    return tool


def _model(ctx: ToolContext) -> ModelBackend:
    """The model backend for this call: picked here, where the client's capabilities are known."""
    return ctx.request_context.lifespan_context.model_for(ctx)


def _service(ctx: ToolContext) -> ResearchService:
    return ctx.request_context.lifespan_context.service


def _caller(ctx: ToolContext) -> str | None:
    return caller_of(ctx.request_context)


@research_errors
async def plan_research(
    query: Annotated[inputs.Query, Field(description="The question, narrowed with the user.")],
    ctx: ToolContext,
    suggested_plan: Annotated[
        inputs.SuggestedPlan, Field(description="Nodes, root first.", json_schema_extra=EMPTY_LIST)
    ] = None,
    budget: Annotated[Budget | None, Field(description="Limits.", json_schema_extra=NO_LIMITS)] = None,
) -> Compact:
    """A feasible research plan and its estimate; nothing runs yet."""
    service = _service(ctx)
    return compact(
        await service.plan(
            query,
            suggested=suggested_plan,
            budget=inputs.limits_given(budget),
            model=_model(ctx),
            caller=_caller(ctx),
        )
    )


@research_errors
async def execute_plan(
    ctx: ToolContext,
    authorization: Annotated[ElicitationResult[RunAuthorization], Resolve(authorize_run)],
    plan_id: Annotated[inputs.PlanId | None, Field(description="The plan to run.")] = None,
    plan_ids: Annotated[
        inputs.PlanIds | None, Field(description="Plans to run as one.", json_schema_extra=EMPTY_LIST)
    ] = None,
    run_id: Annotated[inputs.RunId | None, Field(description="The run to wait on.")] = None,
    wait_seconds: Annotated[
        inputs.WaitSeconds | None,
        Field(description="Seconds to wait; run goes on.", json_schema_extra={"default": 45}),
    ] = None,
    cancel: Annotated[inputs.Flag, Field(description="Stop run_id.")] = False,
    retry: Annotated[inputs.Flag, Field(description="Rerun failed parts.")] = False,
) -> Compact:
    """Run plan_id(s), or wait on, resume or cancel run_id."""
    ids = inputs.check_plan_ids(plan_id, plan_ids)
    if run_id is None and not ids:
        raise InvalidInput("give plan_id (or plan_ids) to start a run, or run_id to wait on one.")
    if cancel and run_id is None:
        raise InvalidInput("cancel needs the run_id of the run to stop.")
    if run_id is None and not (isinstance(authorization, AcceptedElicitation) and authorization.data.start):
        return compact(
            _service(ctx).declined(ids, cancelled=authorization.action == "cancel", caller=_caller(ctx))
        )

    async def progress(value: float, total: int, message: str) -> None:
        await ctx.report_progress(value, total, message)

    service = _service(ctx)
    return compact(
        await service.execute(
            plan_ids=ids,
            run_id=run_id,
            wait_seconds=service.settings.wait_seconds if wait_seconds is None else wait_seconds,
            cancel=bool(cancel),
            progress=progress,
            model=lambda: _model(ctx),
            retry=bool(retry),
            caller=_caller(ctx),
        )
    )


@research_errors
async def extract_source(
    source: Annotated[inputs.SourceRef, Field(description="URL, corpus:<id>, S<id> or the text itself.")],
    questions: Annotated[inputs.Questions, Field(description="What to ask.")],
    ctx: ToolContext,
    task_spec: Annotated[inputs.TaskSpec | None, Field(description="How to extract.")] = None,
) -> Compact:
    """Extract facts with verbatim, checked quotes from one source."""
    asked = [question.strip() for question in questions if question.strip()]
    if not asked and task_spec is None:
        raise InvalidInput("give at least one question to ask of the source.")
    service = _service(ctx)
    return compact(
        await service.extract(source, asked, task_spec=task_spec, model=_model(ctx), caller=_caller(ctx))
    )


@research_errors
async def scout_sources(
    topic: Annotated[inputs.Topic, Field(description="What to find sources on.")],
    ctx: ToolContext,
    queries: Annotated[
        inputs.SearchQueries | None, Field(description="Extra search queries.", json_schema_extra=EMPTY_LIST)
    ] = None,
    limit: Annotated[inputs.SourcesWanted, Field(description="Sources to return.")] = 8,
) -> Compact:
    """Find, de-duplicate, rank and tag sources on a topic."""
    service = _service(ctx)
    return compact(
        await service.scout(
            topic.strip(), list(queries or []), limit or 8, model=_model(ctx), caller=_caller(ctx)
        )
    )


@research_errors
async def report_results(
    id: Annotated[inputs.ReportId, Field(description="A run, plan or handoff id.")],
    ctx: ToolContext,
    view: Annotated[inputs.PageView, Field(description="Part to read.")] = "summary",
    cursor: Annotated[
        inputs.Cursor, Field(description="From the last page.", json_schema_extra={"default": ""})
    ] = None,
    max_tokens: Annotated[inputs.PageTokens, Field(description="Page size in tokens.")] = 2000,
) -> Page:
    """Read a run, plan or handoff, one view and page at a time."""
    return page(_service(ctx).report(id, view or "summary", cursor, max_tokens or 2000, caller=_caller(ctx)))


def build_tools(wait_seconds: float = 45.0) -> list[Tool]:
    """The five tools, with compact schemas; execute_plan publishes the server's `wait_seconds`."""
    run = checked_tool(execute_plan, "Run a plan", WRITES)
    run.parameters["properties"]["wait_seconds"]["default"] = (
        int(wait_seconds) if wait_seconds.is_integer() else wait_seconds
    )
    return [
        checked_tool(plan_research, "Plan research", WRITES),
        run,
        checked_tool(extract_source, "Extract source", WRITES),
        checked_tool(scout_sources, "Scout sources", WRITES),
        checked_tool(report_results, "Read results", READS),
    ]

"""The five tools: each parses, calls one service method, and returns its compact result."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from research_mcp.contracts import Budget, CompactReturn, ReportPage, View
from research_mcp.errors import ResearchError, shown
from research_mcp.server import inputs
from research_mcp.server.schemas import compact_schema
from research_mcp.service import ResearchService

__all__ = ["build_tools"]

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


def _service(ctx: Context[Any, Any]) -> ResearchService:
    return ctx.request_context.lifespan_context  # type: ignore[no-any-return]


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


def _tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    tool = CheckedTool.from_function(fn, annotations=annotations)
    tool.parameters = compact_schema(tool.parameters)
    if tool.fn_metadata.output_schema is not None:
        output = compact_schema(tool.fn_metadata.output_schema)
        output.pop("description", None)  # the tool's own description says it
        tool.fn_metadata.output_schema = output
    return tool


@research_errors
async def plan_research(
    query: Annotated[str, Field(description="The research question, narrowed with the user.")],
    ctx: Context[Any, Any],
    suggested_plan: Annotated[
        dict[str, Any] | None, Field(description="Optional plan tree to adopt.")
    ] = None,
    budget: Budget | None = None,
) -> Compact:
    """Plan research: a feasible plan tree and an estimate. Nothing runs yet."""
    inputs.check_text("query", query, inputs.MAX_QUERY_CHARS)
    inputs.check_suggested_plan(suggested_plan)
    return compact(await _service(ctx).plan(query, suggested_plan=suggested_plan, budget=budget, ctx=ctx))


@research_errors
async def execute_plan(
    ctx: Context[Any, Any],
    plan_id: str | None = None,
    plan_ids: Annotated[list[str] | None, Field(description="Several plans, one final answer.")] = None,
    run_id: Annotated[str | None, Field(description="Wait on, resume or cancel this run.")] = None,
    wait_seconds: Annotated[
        float | None, Field(description="Return after this long (default 45 s); the run goes on.")
    ] = None,
    cancel: bool = False,
    retry: Annotated[bool, Field(description="Rerun a partial run's failed parts.")] = False,
    budget: Budget | None = None,
) -> Compact:
    """Start, resume, wait on or cancel a research run."""
    ids = inputs.check_plan_ids(plan_id, plan_ids)
    run_id = inputs.check_run_id(run_id)

    async def progress(done: int, total: int, message: str) -> None:
        await ctx.report_progress(done, total, message)

    service = _service(ctx)
    return compact(
        await service.execute(
            plan_ids=ids,
            run_id=run_id,
            wait_seconds=service.settings.wait_seconds if wait_seconds is None else wait_seconds,
            cancel=cancel,
            budget=budget,
            progress=progress,
            ctx=ctx,
            retry=retry,
        )
    )


@research_errors
async def extract_source(
    source: Annotated[str, Field(description="URL, corpus:<id>, S<id> or the text itself.")],
    questions: list[str],
    ctx: Context[Any, Any],
    task_spec: Annotated[dict[str, Any] | None, Field(description="Optional extractor task spec.")] = None,
) -> Compact:
    """Extract facts with verbatim, checked quotes from one source."""
    inputs.check_source(source)
    inputs.check_list("questions", questions, inputs.MAX_QUESTIONS, inputs.MAX_QUESTION_CHARS)
    spec = inputs.check_task_spec(task_spec)
    return compact(await _service(ctx).extract(source, questions, task_spec=spec, ctx=ctx))


@research_errors
async def scout_sources(
    topic: str,
    ctx: Context[Any, Any],
    queries: Annotated[list[str] | None, Field(description="Extra search queries.")] = None,
    limit: int = 8,
) -> Compact:
    """Find, de-duplicate, rank and tag sources on a topic."""
    inputs.check_text("topic", topic, inputs.MAX_QUERY_CHARS)
    inputs.check_list("queries", list(queries or []), inputs.MAX_QUERIES, inputs.MAX_SEARCH_QUERY_CHARS)
    return compact(await _service(ctx).scout(topic, list(queries or []), limit, ctx=ctx))


@research_errors
async def report_results(
    id: Annotated[str, Field(description="A run, plan or handoff id.")],
    ctx: Context[Any, Any],
    view: View = "summary",
    cursor: str | None = None,
    max_tokens: int = 2000,
) -> Page:
    """Read a run, plan or handoff, one view and page at a time."""
    ident = inputs.check_report_id(id)
    return page(_service(ctx).report(ident, view, inputs.check_cursor(cursor), max_tokens))


def build_tools() -> list[Tool]:
    """The five tools, with compact schemas."""
    return [
        _tool(plan_research, WRITES),
        _tool(execute_plan, WRITES),
        _tool(extract_source, WRITES),
        _tool(scout_sources, WRITES),
        _tool(report_results, READS),
    ]

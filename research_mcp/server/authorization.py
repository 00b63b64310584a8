"""Authorization before a run: execute_plan asks the user, through the client, before a run starts.

The question (the plans' leaves, estimate and any scope warning) is an elicitation, asked by the
SDK's resolver machinery in the form the negotiated protocol has: a standalone `elicitation/create`
request up to 2025-11-25, an `input_required` result answered by the client's retry from 2026-07-28.
Nothing is asked when the client cannot elicit (it is served as before), when the call waits on,
resumes or cancels a run, or when RESEARCH_MCP_ASK_BEFORE_RUN is false (unattended use).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.resolve import Elicit
from pydantic import BaseModel, Field

from research_mcp.core.errors import ResearchError
from research_mcp.server import inputs
from research_mcp.server.context import ToolContext, caller_of

__all__ = ["RunAuthorization", "authorize_run"]


class RunAuthorization(BaseModel):
    """The form the user answers; `start` false is a decline."""

    start: bool = Field(default=True, description="Start the research run now.")


NOT_ASKED = RunAuthorization(start=True)


def _can_elicit(ctx: ToolContext) -> bool:
    """The client declared form elicitation (a bare `elicitation: {}` is form support)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def authorize_run(
    ctx: ToolContext, plan_id: Any, plan_ids: Any, run_id: Any
) -> Elicit[RunAuthorization] | RunAuthorization:
    """The question to ask before starting a run of the plans given, or NOT_ASKED."""
    service = ctx.request_context.lifespan_context.service
    if run_id is not None or not service.settings.ask_before_run or not _can_elicit(ctx):
        return NOT_ASKED
    try:
        ids = inputs.check_plan_ids(plan_id, plan_ids)
        question = service.authorization_question(ids, caller_of(ctx.request_context)) if ids else None
    except (ResearchError, ValueError):
        return NOT_ASKED  # the tool body reports the bad plan id
    return NOT_ASKED if question is None else Elicit(question, RunAuthorization)

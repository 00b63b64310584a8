"""What the Anthropic backend says when a call fails: each SDK error and each stop reason that no
repair can fix, as a `ModelError` naming the cause and what to do."""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic.types import Message, TextBlock

from research_mcp.core.errors import ModelError
from research_mcp.core.retry import RetryPolicy, retry_outcome
from research_mcp.llm.base import ModelRequest

__all__ = ["api_error", "message_text", "raise_on_stop"]


def api_error(
    error: anthropic.APIError, *, model: str, policy: RetryPolicy, timeout: float, base_url: object
) -> ModelError:
    """An SDK failure as a ModelError that says what to do (retryable ones were already retried)."""
    retried = _how_retried(error, policy)
    if isinstance(error, anthropic.APITimeoutError):
        return ModelError(
            f"The Anthropic API did not answer within {timeout:g} s {retried}. "
            "Try again, or narrow the request so the answer is shorter."
        )
    if isinstance(error, anthropic.APIConnectionError):
        cause = error.__cause__
        why = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return ModelError(
            f"The connection to the Anthropic API at {base_url} failed{why} {retried}. "
            "Check the network, and ANTHROPIC_BASE_URL if it is set."
        )
    if not isinstance(error, anthropic.APIStatusError):
        return ModelError(f"The Anthropic SDK failed: {error.message}")
    return _status_error(error, model=model, retried=retried)


def _how_retried(error: anthropic.APIError, policy: RetryPolicy) -> str:
    """How the retries of a failed call went, as the words that follow its failure: how many were
    made and over how long, or that the API asked for a longer wait than the call had left."""
    outcome = retry_outcome(error.response) if isinstance(error, anthropic.APIStatusError) else None
    if outcome is not None and outcome.asked is not None:
        return (
            f"(it asked to wait {outcome.asked:.0f} s, more than this {outcome.policy.name} call "
            f"has left of its {outcome.policy.max_wait:g} s for retries)"
        )
    if outcome is not None:
        return f"after {outcome.retries} retries over {outcome.waited:.1f} s"
    return f"after retrying (up to {policy.max_retries} times)"


def _status_error(error: anthropic.APIStatusError, *, model: str, retried: str) -> ModelError:
    """An HTTP status the API answered with, as what it means for the key, the model, the account,
    the limits or the request, and what to do."""
    status = error.status_code
    if error.response.headers.get("x-should-retry") == "false":
        retried = "(the API said not to retry it)"
    detail = f"{status}: {error.api_message or error.message}"
    if error.request_id:
        detail += f"; request id {error.request_id}"
    if isinstance(error, anthropic.AuthenticationError):
        return ModelError(
            f"Anthropic rejected the API key ({detail}). Check ANTHROPIC_API_KEY, or choose "
            "RESEARCH_MCP_MODEL=extractive to research without a language model."
        )
    if isinstance(error, anthropic.PermissionDeniedError):
        return ModelError(
            f"The API key is not allowed to use model {model!r} or this API ({detail}). Check the key's "
            "workspace and model access in the Anthropic Console, or choose another model with "
            "RESEARCH_MCP_ANTHROPIC_MODEL or RESEARCH_MCP_ROLE_MODELS."
        )
    if isinstance(error, anthropic.NotFoundError):
        return ModelError(
            f"Anthropic did not find model {model!r} ({detail}). Set RESEARCH_MCP_ANTHROPIC_MODEL or "
            "RESEARCH_MCP_ROLE_MODELS to a model your key can use, and check ANTHROPIC_BASE_URL "
            "if it is set."
        )
    if isinstance(error, anthropic.PaymentRequiredError):
        return ModelError(
            f"Anthropic refused the call for billing reasons ({detail}). "
            "Check the account's credits and spend limits in the Anthropic Console."
        )
    if (
        isinstance(error, anthropic.RateLimitError)
        and error.response.headers.get("x-should-retry") == "false"
    ):
        return ModelError(
            f"Anthropic refused the call with a limit that waiting will not lift ({detail}; "
            "the API said not to retry it), such as the organisation's spend limit. Check the "
            "limits and credits in the Anthropic Console."
        )
    if isinstance(error, anthropic.RateLimitError):
        return ModelError(
            f"Anthropic's rate limit was still exceeded {retried} ({detail}). Wait a minute and try "
            "again, or lower RESEARCH_MCP_CONCURRENCY."
        )
    if status == 413:
        return ModelError(
            f"The request was too large for the API ({detail}). Narrow it: fewer or shorter sources."
        )
    if isinstance(error, anthropic.BadRequestError):
        return ModelError(
            f"Anthropic rejected the request as invalid ({detail}).{_bad_request_hint(error, model)}"
        )
    if status == 529:
        return ModelError(f"Anthropic's API is overloaded ({detail}) {retried}. Try again in a few minutes.")
    if status >= 500:
        return ModelError(f"Anthropic's API failed ({detail}) {retried}. Try again shortly.")
    return ModelError(f"The Anthropic API refused the call ({detail}).")


def raise_on_stop(reply: Message, request: ModelRequest[Any], model: str, max_tokens: int) -> None:
    """Stop reasons that no repair can fix."""
    what = request.output_type.__name__
    if reply.stop_reason == "max_tokens":
        raise ModelError(
            f"The {request.role}'s answer ({what}) was cut off at the {max_tokens}-token output limit "
            f"of {model!r}, so it is incomplete. Raise max_tokens for this role, or narrow the request "
            "(fewer questions, fewer or shorter sources)."
        )
    if reply.stop_reason == "refusal":
        said = message_text(reply)
        details = reply.stop_details
        if details is not None and details.explanation:
            said = f"{said} {details.explanation}".strip()
        category = f" (category: {details.category})" if details is not None and details.category else ""
        raise ModelError(
            f"Model {model!r} refused to produce the {request.role}'s {what}{category}: "
            f"{said or 'it gave no reason'}. Rephrase or narrow the request, or leave out the source that "
            "triggered it."
        )
    if reply.stop_reason == "model_context_window_exceeded":
        raise ModelError(
            f"The {request.role}'s prompt and answer do not fit in {model!r}'s context window. "
            "Narrow the request: fewer or shorter sources."
        )


def _bad_request_hint(error: anthropic.BadRequestError, model: str) -> str:
    said = (error.api_message or error.message).lower()
    if "tool_choice" in said or "tool use" in said:
        return (
            f" Model {model!r} may not support forced tool use; choose one that does "
            "(e.g. claude-sonnet-4-6) with RESEARCH_MCP_ANTHROPIC_MODEL or RESEARCH_MCP_ROLE_MODELS."
        )
    if "too long" in said or "context" in said:
        return " Narrow the request: fewer or shorter sources."
    return ""


def message_text(reply: Message) -> str:
    """The text blocks of an answer, joined."""
    return "\n".join(
        block.text for block in reply.content if isinstance(block, TextBlock) and block.text
    ).strip()

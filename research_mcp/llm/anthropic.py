"""The Anthropic backend: the Messages API with one forced "submit" tool per role output.

Each call offers a single tool, `submit`, whose `input_schema` is the role's output model's JSON
schema, and forces it with `tool_choice`; the tool input is validated with the same model. An
invalid answer is sent back as an erroring `tool_result` carrying the validation errors, at most
`MAX_REPAIRS` times (see `base.generate_with_repair`). The role's stable system prompt is marked
for prompt caching. Transient failures (429, 5xx, 529, timeouts, dropped connections) are retried
by the SDK; what is left is raised as `ModelError` saying what to do. Every call, the SDK's retries and
their waits included, runs under one wall-clock deadline (`call_deadline`): the SDK's own timeout
bounds each socket read, not a response dripped a byte at a time, and it waits out any
`retry-after` the API sends, however long.

Nothing here touches the network until `generate` is called, and the backend is only built when an
API key is configured (`AnthropicModel.from_settings` raises `NotConfigured` otherwise).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anthropic
import anyio
from anthropic.types import (
    Message,
    MessageParam,
    TextBlock,
    TextBlockParam,
    ToolChoiceToolParam,
    ToolParam,
    ToolUseBlock,
)
from pydantic import BaseModel

from research_mcp.config import Settings
from research_mcp.errors import ModelError, NotConfigured
from research_mcp.llm.base import Generation, ModelRequest, OutputT, Usage, generate_with_repair
from research_mcp.llm.pricing import cost_usd, pricing_note

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_RETRY_WAIT_SECONDS",
    "SUBMIT_TOOL",
    "AnthropicModel",
]

SUBMIT_TOOL = "submit"
DEFAULT_TIMEOUT_SECONDS = 300.0
# What the default deadline allows for each wait between the SDK's retries (a retry-after header).
MAX_RETRY_WAIT_SECONDS = 60.0
DEFAULT_MAX_OUTPUT_TOKENS = 16_000

_NO_TOOL_CALL = (
    f"You answered without calling the `{SUBMIT_TOOL}` tool. Answer only by calling `{SUBMIT_TOOL}` "
    "with input that matches its schema."
)


class AnthropicModel:
    """Role outputs from Claude through the Messages API, with forced tool use and validation repair.

    `model_for(role)` names the model each role uses. A request's `max_tokens` is clipped to
    `max_output_tokens`, a ceiling on what any one call may spend. `timeout` bounds each HTTP
    request (seconds per connect, read or write) and `call_deadline` one call in all, retries and
    their waits included (default: `timeout` plus `MAX_RETRY_WAIT_SECONDS` per attempt).
    `http_client` is an `httpx2.AsyncClient` for the SDK (proxies, custom transports); the client
    honours ANTHROPIC_BASE_URL when `base_url` is None.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        model_for: Callable[[str], str],
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        call_deadline: float | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        if max_retries < 0 or timeout <= 0 or (call_deadline is not None and call_deadline <= 0):
            raise ValueError("max_retries must be >= 0, timeout and call_deadline > 0")
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
            http_client=http_client,
        )
        self.model_for = model_for
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_output_tokens = max_output_tokens
        self.call_deadline = (
            call_deadline
            if call_deadline is not None
            else (timeout + MAX_RETRY_WAIT_SECONDS) * (max_retries + 1)
        )

    @classmethod
    def from_settings(cls, settings: Settings, **options: Any) -> AnthropicModel:
        """The backend as configured, or `NotConfigured` when no API key is set.

        `options` go to the constructor (`max_retries`, `timeout`, `call_deadline`, `max_output_tokens`,
        `http_client`).
        """
        key = settings.anthropic_api_key.get_secret_value().strip() if settings.anthropic_api_key else ""
        if not key:
            raise NotConfigured(
                "The anthropic model backend needs an API key: set ANTHROPIC_API_KEY, or choose "
                "RESEARCH_MCP_MODEL=extractive to research without a language model "
                "(or RESEARCH_MCP_MODEL=sampling to use the host's own model)."
            )
        return cls(api_key=key, base_url=settings.anthropic_base_url, model_for=settings.model_for, **options)

    async def aclose(self) -> None:
        await self.client.close()

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def generate(self, request: ModelRequest[OutputT]) -> Generation[OutputT]:
        model = self.model_for(request.role)
        max_tokens = min(request.max_tokens, self.max_output_tokens)
        system: list[TextBlockParam] = (
            [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
            if request.system
            else []
        )
        tool = _submit_tool(request.output_type)
        tool_choice: ToolChoiceToolParam = {
            "type": "tool",
            "name": SUBMIT_TOOL,
            "disable_parallel_tool_use": True,
        }
        messages: list[MessageParam] = [{"role": "user", "content": request.prompt}]
        previous: Message | None = None
        spent = Usage(model=model)  # every answer's usage, kept for a call that fails in the end

        async def attempt(feedback: str | None) -> tuple[Any, Usage]:
            nonlocal previous
            if feedback is not None and previous is not None:
                messages.extend(_repair_turns(previous, feedback))
            try:
                with anyio.fail_after(self.call_deadline):
                    reply = await self.client.messages.create(
                        model=model,
                        max_tokens=max_tokens,
                        system=system or anthropic.omit,
                        messages=list(messages),
                        tools=[tool],
                        tool_choice=tool_choice,
                    )
            except TimeoutError:
                raise ModelError(
                    f"The Anthropic API did not finish answering within {self.call_deadline:g} s "
                    f"(retries and their waits included; up to {self.max_retries} retries). It may be "
                    "overloaded, asking to wait longer than that, or sending its answer very slowly. "
                    "Try again later."
                ) from None
            except anthropic.APIError as error:
                raise self._model_error(error, model) from error
            _check_shape(reply, self.client.base_url)
            previous = reply
            usage = _usage(model, reply)
            spent.add(usage)
            _raise_on_stop(reply, request, model, max_tokens)
            submitted = _submitted(reply)
            return (submitted.input if submitted else None), usage

        try:
            generation = await generate_with_repair(request.output_type, attempt)
        except ModelError as error:
            error.usage = spent
            raise
        if max_tokens < request.max_tokens:
            generation.notes.append(
                f"max_tokens clipped from {request.max_tokens} to this backend's ceiling of {max_tokens}."
            )
        note = pricing_note(model)
        if note:
            generation.notes.append(note)
        return generation

    def _model_error(self, error: anthropic.APIError, model: str) -> ModelError:
        """An SDK failure as a ModelError that says what to do (retryable ones were already retried)."""
        retried = f"after retrying (up to {self.max_retries} times)"
        if isinstance(error, anthropic.APITimeoutError):
            return ModelError(
                f"The Anthropic API did not answer within {self.timeout:g} s {retried}. "
                "Try again, or narrow the request so the answer is shorter."
            )
        if isinstance(error, anthropic.APIConnectionError):
            cause = error.__cause__
            why = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
            return ModelError(
                f"The connection to the Anthropic API at {self.client.base_url} failed{why} {retried}. "
                "Check the network, and ANTHROPIC_BASE_URL if it is set."
            )
        if not isinstance(error, anthropic.APIStatusError):
            return ModelError(f"The Anthropic SDK failed: {error.message}")
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
            return ModelError(
                f"Anthropic's API is overloaded ({detail}) {retried}. Try again in a few minutes."
            )
        if status >= 500:
            return ModelError(f"Anthropic's API failed ({detail}) {retried}. Try again shortly.")
        return ModelError(f"The Anthropic API refused the call ({detail}).")


def _submit_tool(output_type: type[BaseModel]) -> ToolParam:
    """The one tool a call offers: its input schema is the output model's JSON schema."""
    own_doc = output_type.__dict__.get("__doc__")
    what = inspect.cleandoc(own_doc).split("\n\n", 1)[0] if own_doc else output_type.__name__
    return {
        "name": SUBMIT_TOOL,
        "description": f"Submit your answer. {what}",
        "input_schema": output_type.model_json_schema(),
    }


def _check_shape(reply: object, base_url: object) -> None:
    """A 200 answer that is not a Message (an HTML page, `{}`, a proxy's reply) fails clearly here.

    The SDK does not validate a successful body: text that is not JSON comes back as a `str`, and
    JSON of another shape as a Message whose fields are None.
    """
    if isinstance(reply, Message) and isinstance(reply.content, list) and reply.usage is not None:
        return
    seen = reply if isinstance(reply, str) else "JSON without a message's content and usage"
    seen = " ".join(str(seen).split())[:120]
    raise ModelError(
        f"The Anthropic API at {base_url} answered with something that is not a Messages API "
        f"response ({seen!r}). Check ANTHROPIC_BASE_URL if it is set (a proxy or a wrong address "
        "answers like this), or try again later."
    )


def _submitted(reply: Message) -> ToolUseBlock | None:
    return next(
        (block for block in reply.content if isinstance(block, ToolUseBlock) and block.name == SUBMIT_TOOL),
        None,
    )


def _text(reply: Message) -> str:
    return "\n".join(
        block.text for block in reply.content if isinstance(block, TextBlock) and block.text
    ).strip()


def _repair_turns(previous: Message, feedback: str) -> list[MessageParam]:
    """The previous answer and the errors it drew, to append before asking again."""
    submitted = _submitted(previous)
    text = _text(previous)
    if submitted is None:
        # Consecutive user turns are merged by the API, so an answer with no text needs no assistant turn.
        turns: list[MessageParam] = [{"role": "assistant", "content": text}] if text else []
        turns.append({"role": "user", "content": _NO_TOOL_CALL})
        return turns
    content: list[Any] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": submitted.id, "name": submitted.name, "input": submitted.input})
    return [
        {"role": "assistant", "content": content},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": submitted.id, "is_error": True, "content": feedback}
            ],
        },
    ]


def _raise_on_stop(reply: Message, request: ModelRequest[Any], model: str, max_tokens: int) -> None:
    """Stop reasons that no repair can fix."""
    what = request.output_type.__name__
    if reply.stop_reason == "max_tokens":
        raise ModelError(
            f"The {request.role}'s answer ({what}) was cut off at the {max_tokens}-token output limit "
            f"of {model!r}, so it is incomplete. Raise max_tokens for this role, or narrow the request "
            "(fewer questions, fewer or shorter sources)."
        )
    if reply.stop_reason == "refusal":
        said = _text(reply)
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


def _usage(model: str, reply: Message) -> Usage:
    """One call's usage; cache reads and writes count as input tokens and are priced as such."""
    usage = reply.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    return Usage(
        model=model,
        tokens_in=usage.input_tokens + cache_read + cache_write,
        tokens_out=usage.output_tokens,
        cost_usd=cost_usd(model, usage.input_tokens, usage.output_tokens, cache_read, cache_write),
        calls=1,
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

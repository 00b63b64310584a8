"""The Anthropic backend: the Messages API with one forced "submit" tool per role output.

Each call offers a single tool, `submit`, whose `input_schema` is the role's output model's JSON
schema, and forces it with `tool_choice`; the tool input is validated with the same model. Each
`generate` is one call: an invalid answer raises `InvalidAnswer`, and when `perform` asks again the
earlier answers are replayed with an erroring `tool_result` carrying the validation errors. The
role's stable system prompt is marked for prompt caching.

Transient failures (408, 409, 429, 5xx, 529, timeouts, dropped connections) are retried by a
`retry.RetryingTransport` under the calling context's policy (short for a tool call, long for a
background run), honouring `retry-after`; what is left is raised as `ModelError` saying what to
do, its text redacted of configured secrets. Every call, retries and their waits included, runs
under one wall-clock deadline: the request timeout bounds each socket read, not a response
dripped a byte at a time.

Nothing here touches the network until `generate` is called, and the backend is only built when an
API key is configured (`AnthropicModel.from_settings` raises `NotConfigured` otherwise).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anthropic
import anyio
import httpx2
from anthropic.types import (
    Message,
    MessageParam,
    TextBlockParam,
    ToolChoiceToolParam,
    ToolParam,
    ToolUseBlock,
)
from pydantic import BaseModel

from research_mcp.core.config import Settings
from research_mcp.core.errors import ModelError, NotConfigured
from research_mcp.core.redaction import Redactor
from research_mcp.core.retry import RetryingTransport, RetryPolicy, current_policy
from research_mcp.llm.anthropic_errors import api_error, message_text, raise_on_stop
from research_mcp.llm.base import Generation, ModelRequest, OutputT, Usage, validated
from research_mcp.llm.pricing import cost_usd, pricing_note

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_TIMEOUT_SECONDS",
    "SUBMIT_TOOL",
    "AnthropicModel",
]

logger = logging.getLogger(__name__)

SUBMIT_TOOL = "submit"
DEFAULT_TIMEOUT_SECONDS = 300.0
DEFAULT_MAX_OUTPUT_TOKENS = 16_000
# Added to a call's deadline, so that a request's own timeout fires first, with the clearer message.
DEADLINE_SLACK_SECONDS = 5.0

_NO_TOOL_CALL = (
    f"You answered without calling the `{SUBMIT_TOOL}` tool. Answer only by calling `{SUBMIT_TOOL}` "
    "with input that matches its schema."
)


class AnthropicModel:
    """Role outputs from Claude through the Messages API, with forced tool use.

    `model_for(role)` names the model each role uses. A request's `max_tokens` is clipped to
    `max_output_tokens`, a ceiling on what any one call may spend. Overloads, rate limits, 5xx and
    dropped connections are retried by a `RetryingTransport` under `retry`, or, when None, under the
    policy of the calling context (`retry.patience`: short in a tool call, long in a background
    run); the SDK's own retries are off. `timeout` bounds each HTTP request (seconds per connect,
    read or write) and `call_deadline` one call in all, retries and their waits included (default:
    `deadline(policy)`). `http_client` is an `httpx2.AsyncClient` for the SDK (proxies, custom
    transports; its transports are wrapped for retries); the client honours ANTHROPIC_BASE_URL
    when `base_url` is None.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        model_for: Callable[[str], str],
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        call_deadline: float | None = None,
        http_client: httpx2.AsyncClient | None = None,
        redact: Redactor | None = None,
    ) -> None:
        if timeout <= 0 or (call_deadline is not None and call_deadline <= 0):
            raise ValueError("timeout and call_deadline must be > 0")
        self.retry = retry
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,  # the transport retries, under the context's policy
            timeout=timeout,
            http_client=_with_retries(http_client or anthropic.DefaultAsyncHttpxClient(), retry),
        )
        self.model_for = model_for
        # Every text the API sends back (errors, refusals, answers) is redacted before it goes on.
        self.redact = redact if redact is not None else Redactor([api_key])
        self.timeout = timeout
        self.max_output_tokens = max_output_tokens
        self._priced: set[str] = set()  # models whose pricing was already noted
        self._call_deadline = call_deadline

    def policy(self) -> RetryPolicy:
        """The retry policy of a call made now."""
        return self.retry or current_policy()

    def deadline(self, policy: RetryPolicy) -> float:
        """One call's deadline under `policy`: its time budget for retries, then the last attempt's timeout."""
        if self._call_deadline is not None:
            return self._call_deadline
        return policy.max_wait + self.timeout + DEADLINE_SLACK_SECONDS

    @classmethod
    def from_settings(cls, settings: Settings, **options: Any) -> AnthropicModel:
        """The backend as configured, or `NotConfigured` when no API key is set.

        `options` go to the constructor (`retry`, `timeout`, `call_deadline`, `max_output_tokens`,
        `http_client`).
        """
        key = settings.anthropic_key
        if key is None:
            raise NotConfigured(
                "The anthropic model backend needs an API key: set ANTHROPIC_API_KEY, or choose "
                "RESEARCH_MCP_MODEL=extractive to research without a language model "
                "(or RESEARCH_MCP_MODEL=sampling to use the host's own model)."
            )
        options.setdefault("redact", Redactor.from_settings(settings))
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
        """One Messages call: the validated answer, or `InvalidAnswer` / `ModelError` carrying its usage."""
        model = self.model_for(request.role)
        max_tokens = min(request.max_tokens, self.max_output_tokens)
        if max_tokens < request.max_tokens:
            logger.debug("%s: max_tokens clipped from %d to %d", request.role, request.max_tokens, max_tokens)
        self._note_pricing(model)
        system: list[TextBlockParam] = (
            [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
            if request.system
            else []
        )
        tool_choice: ToolChoiceToolParam = {
            "type": "tool",
            "name": SUBMIT_TOOL,
            "disable_parallel_tool_use": True,
        }
        messages: list[MessageParam] = [{"role": "user", "content": request.prompt}]
        for repair in request.repairs:
            messages.extend(_repair_turns(repair.answer, repair.feedback, self.redact))
        policy = self.policy()
        deadline = self.deadline(policy)
        try:
            with anyio.fail_after(deadline):
                reply = await self.client.messages.create(
                    model=model,
                    max_tokens=max_tokens,
                    system=system or anthropic.omit,
                    messages=messages,
                    tools=[_submit_tool(request.output_type)],
                    tool_choice=tool_choice,
                )
        except TimeoutError:
            raise ModelError(
                f"The Anthropic API did not finish answering within {deadline:g} s "
                f"(retries and their waits included; up to {policy.max_retries} retries). It may be "
                "overloaded, asking to wait longer than that, or sending its answer very slowly. "
                "Try again later."
            ) from None
        except anthropic.APIError as error:
            failure = api_error(
                error, model=model, policy=policy, timeout=self.timeout, base_url=self.client.base_url
            )
            raise ModelError(self.redact(str(failure))) from None
        try:
            _check_shape(reply, self.client.base_url)
        except ModelError as error:
            raise ModelError(self.redact(str(error))) from None
        usage = _usage(model, reply)
        try:
            raise_on_stop(reply, request, model, max_tokens)
        except ModelError as error:
            stopped = ModelError(self.redact(str(error)))
            stopped.usage = usage  # a cut-off or refused answer is paid for all the same
            raise stopped from None
        submitted = _submitted(reply)
        raw = self.redact.value(submitted.input) if submitted else None
        return validated(request, raw, usage, answer=reply)

    def _note_pricing(self, model: str) -> None:
        """Say once per model when its cost is an estimate at fallback prices."""
        if model in self._priced:
            return
        self._priced.add(model)
        note = pricing_note(model)
        if note:
            logger.warning("%s", note)


def _should_retry(response: httpx2.Response) -> bool:
    """The answers the SDK would retry: its `x-should-retry` header, else 408, 409, 429 and 5xx (529 too)."""
    said = response.headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return response.status_code in (408, 409, 429) or response.status_code >= 500


def _with_retries(client: httpx2.AsyncClient, policy: RetryPolicy | None) -> httpx2.AsyncClient:
    """`client` with each of its transports (the default one and any proxy mounts) wrapped in a
    RetryingTransport. Wrapping in place keeps what the SDK's default client sets up (keep-alive
    socket options, proxies from the environment); httpx keeps its transports in `_transport` and
    `_mounts`, the attributes its own `mounts=` argument fills."""

    def wrap(transport: Any) -> Any:
        if transport is None or isinstance(transport, RetryingTransport):
            return transport
        return RetryingTransport(
            transport, should_retry=_should_retry, retry_errors=(httpx2.TransportError,), policy=policy
        )

    client._transport = wrap(client._transport)
    client._mounts = {pattern: wrap(transport) for pattern, transport in client._mounts.items()}
    return client


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


def _repair_turns(previous: Message, feedback: str, redact: Redactor) -> list[MessageParam]:
    """The previous answer (redacted, as everything an upstream sent) and the errors it drew, to
    append before asking again."""
    submitted = _submitted(previous)
    text = redact(message_text(previous))
    if submitted is None:
        # Consecutive user turns are merged by the API, so an answer with no text needs no assistant turn.
        turns: list[MessageParam] = [{"role": "assistant", "content": text}] if text else []
        turns.append({"role": "user", "content": _NO_TOOL_CALL})
        return turns
    content: list[Any] = [{"type": "text", "text": text}] if text else []
    replayed = redact.value(submitted.input)
    content.append({"type": "tool_use", "id": submitted.id, "name": submitted.name, "input": replayed})
    return [
        {"role": "assistant", "content": content},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": submitted.id, "is_error": True, "content": feedback}
            ],
        },
    ]


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

"""The `sampling` backend: the host's own model, asked through MCP sampling (no API key needed).

Each request carries the output model's JSON schema; the answer is parsed as JSON and validated with
the same model. Each `generate` is one request; when `perform` asks again after an invalid answer,
the earlier answers and their validation errors are replayed as the conversation. Sampling needs a back-channel to the client: a
handshake-era session (stdio, or the legacy initialize handshake) whose client declared the
capability.
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any, Literal

import anyio
import mcp.types as types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from research_mcp.core.errors import ModelError
from research_mcp.core.redaction import Redactor
from research_mcp.llm.base import Generation, ModelRequest, OutputT, Usage, validated

__all__ = ["SamplingModel", "parse_json_answer"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)

INSTRUCTIONS = (
    "Answer with ONE JSON object and nothing else (no prose, no code fence) that validates against this "
    "JSON schema:\n{schema}"
)


def parse_json_answer(text: str) -> Any:
    """The JSON object in a sampled answer: bare, fenced, or the outermost braces."""
    for candidate in (text.strip(), *(m.strip() for m in _FENCE.findall(text))):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            return json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            pass
    return {"__unparsed__": text[:200]}


class SamplingModel:
    """Structured role outputs from the host's model via `sampling/createMessage`."""

    name = "sampling"

    def __init__(
        self, session: Any, *, max_tokens: int = 4096, timeout: float = 300.0, redact: Redactor | None = None
    ) -> None:
        self.session = session
        self.redact = redact or Redactor()  # what the host sends back is redacted before it goes on
        self.max_tokens = max_tokens
        self.timeout = timeout

    def model_for(self, role: str) -> str:
        return ""  # the host picks its model; its name is known only from the answer

    async def generate(self, request: ModelRequest[OutputT]) -> Generation[OutputT]:
        """One sampling request: the validated answer, or `InvalidAnswer` / `ModelError`."""
        schema = json.dumps(request.output_type.model_json_schema(), separators=(",", ":"))
        system = request.system + "\n\n" + INSTRUCTIONS.format(schema=schema)
        messages = [_message("user", request.prompt)]
        for repair in request.repairs:
            messages += [_message("assistant", str(repair.answer)), _message("user", repair.feedback)]
        try:
            with warnings.catch_warnings(), anyio.fail_after(self.timeout):
                # Sampling is deprecated in the 2026-07-28 protocol, but it is what handshake-era hosts offer.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await self.session.create_message(
                    messages,
                    max_tokens=min(request.max_tokens, self.max_tokens),
                    system_prompt=system,
                )
        except TimeoutError:
            raise ModelError(
                f"The host's model did not answer the {request.role} within {self.timeout:.0f} s "
                "(a host may wait for the user to approve each sampling request)."
            ) from None
        except MCPError as error:
            raise ModelError(
                f"The host's model could not be sampled: {self.redact(str(error))}. "
                "Configure ANTHROPIC_API_KEY or set RESEARCH_MCP_MODEL=extractive."
            ) from None
        content = result.content
        text = self.redact(content.text) if isinstance(content, types.TextContent) else ""
        usage = Usage(
            model=result.model or "host-model",
            tokens_in=(len(system) + len(request.prompt) + sum(len(r.feedback) for r in request.repairs))
            // 4,
            tokens_out=len(text) // 4,
            calls=1,
        )
        if result.stop_reason == "maxTokens":
            cut = ModelError(
                f"The host's model stopped at the token limit while writing the {request.role} output."
            )
            cut.usage = usage  # a cut-off answer is paid for all the same
            raise cut
        return validated(request, parse_json_answer(text), usage, answer=text)


def _message(role: Literal["user", "assistant"], text: str) -> types.SamplingMessage:
    return types.SamplingMessage(role=role, content=types.TextContent(type="text", text=text))

"""A scripted model: a function stands in for the language model, behind the same protocol.

Part of the design, not only of the tests (as pydantic-ai's FunctionModel): tests and benchmarks
swap it in at the one seam where a backend is chosen. It records every request it serves.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel

from research_mcp.llm.base import Generation, ModelRequest, OutputT, Usage, generate_with_repair

__all__ = ["ScriptedModel"]

Script = Callable[[ModelRequest[Any]], Any] | Callable[[ModelRequest[Any]], Awaitable[Any]]


@dataclass
class ScriptedModel:
    """Answers each request with `script(request)`: a model instance or a dict validated like any answer.

    `latency` seconds are slept per call (for benchmarks); tokens are estimated from text length so
    that budgets and cost accounting have something to count.
    """

    script: Script
    latency: float = 0.0
    name: str = "scripted"
    model: str = "scripted-model"
    calls: list[ModelRequest[Any]] = field(default_factory=list)

    async def generate(self, request: ModelRequest[OutputT]) -> Generation[OutputT]:
        async def attempt(feedback: str | None) -> tuple[Any, Usage]:
            self.calls.append(request)
            if self.latency:
                await anyio.sleep(self.latency)
            answer = self.script(request)
            if isinstance(answer, Awaitable):
                answer = await answer
            raw = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else answer
            tokens_in = (len(request.system) + len(request.prompt) + len(feedback or "")) // 4
            tokens_out = len(str(raw)) // 4
            return raw, Usage(model=self.model, tokens_in=tokens_in, tokens_out=tokens_out, calls=1)

        return await generate_with_repair(request.output_type, attempt)

    def calls_for(self, role: str) -> list[ModelRequest[Any]]:
        return [call for call in self.calls if call.role == role]

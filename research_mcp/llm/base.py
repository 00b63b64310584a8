"""The one protocol between roles and model backends.

A role builds a `ModelRequest` naming its output model; a backend returns a `Generation` holding a
validated instance of that model and the usage it cost, or raises `ModelError`. Roles never know
which backend serves them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from research_mcp.errors import ModelError

__all__ = [
    "Generation",
    "ModelBackend",
    "ModelRequest",
    "Usage",
    "generate_with_repair",
    "validation_feedback",
]

OutputT = TypeVar("OutputT", bound=BaseModel)

MAX_REPAIRS = 2


@dataclass(frozen=True)
class ModelRequest(Generic[OutputT]):
    """What a role asks of a model.

    `system` is the role's stable prompt (cacheable), `prompt` the per-call content with any
    untrusted source text already framed as data. `payload` is the role's typed input, for
    backends that work from structure rather than prose (the extractive backend).
    """

    role: str
    system: str
    prompt: str
    output_type: type[OutputT]
    payload: BaseModel | None = None
    max_tokens: int = 4096


@dataclass
class Usage:
    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, other: Usage) -> None:
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.cost_usd += other.cost_usd
        self.calls += other.calls


@dataclass
class Generation(Generic[OutputT]):
    output: OutputT
    usage: Usage
    attempts: int = 1
    notes: list[str] = field(default_factory=list)


class ModelBackend(Protocol):
    """A source of structured role outputs."""

    name: str

    async def generate(self, request: ModelRequest[OutputT]) -> Generation[OutputT]: ...


def validation_feedback(error: ValidationError) -> str:
    """Validation errors as a short message a model can act on."""
    lines = []
    for item in error.errors()[:12]:
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        lines.append(f"- {where}: {item['msg']}")
    return "The submitted input did not validate:\n" + "\n".join(lines) + "\nSubmit again, corrected."


async def generate_with_repair(
    output_type: type[OutputT],
    attempt: Callable[[str | None], Awaitable[tuple[Any, Usage]]],
    *,
    max_repairs: int = MAX_REPAIRS,
) -> Generation[OutputT]:
    """Ask, validate with the output model, and feed validation errors back at most `max_repairs` times.

    `attempt(feedback)` performs one model call (feedback is None on the first) and returns the raw
    structured answer and that call's usage; it keeps its own conversation state.
    """
    total: Usage | None = None
    feedback: str | None = None
    for number in range(1, max_repairs + 2):
        raw, usage = await attempt(feedback)
        if total is None:
            total = Usage(model=usage.model)
        total.add(usage)
        try:
            output = output_type.model_validate(raw)
        except ValidationError as error:
            feedback = validation_feedback(error)
            continue
        return Generation(output=output, usage=total, attempts=number)
    raise ModelError(
        f"The model's {output_type.__name__} did not validate after {max_repairs} repairs. "
        f"Last errors: {feedback}"
    )

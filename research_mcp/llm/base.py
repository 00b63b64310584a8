"""The one protocol between roles and model backends.

A role builds a `ModelRequest` naming its output model; a backend makes ONE attempt at it and
returns a `Generation` holding a validated instance of that model and the usage it cost, or raises
`ModelError`. An answer that does not validate raises `InvalidAnswer`, carrying the raw answer, the
backend's own record of it (for the repair turn) and its usage; `roles.base.perform` owns the repair
loop (`ModelRequest.repaired`), the usage totals and the budget. Roles never know which backend
serves them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from research_mcp.core.errors import ModelError

__all__ = [
    "Generation",
    "InvalidAnswer",
    "ModelBackend",
    "ModelRequest",
    "Repair",
    "Usage",
    "validated",
    "validation_feedback",
]

OutputT = TypeVar("OutputT", bound=BaseModel)


@dataclass(frozen=True)
class Repair:
    """One earlier answer that did not validate, and the feedback sent back about it.

    `answer` is the backend's own record of what it answered (an Anthropic `Message`, a sampled
    text), replayed by that backend as the conversation's assistant turn."""

    answer: Any
    feedback: str


@dataclass(frozen=True)
class ModelRequest(Generic[OutputT]):
    """What a role asks of a model.

    `system` is the role's stable prompt (cacheable), `prompt` the per-call content with any
    untrusted source text already framed as data. `payload` is the role's typed input, for
    backends that work from structure rather than prose (the extractive backend). `repairs` are the
    earlier answers of this request that did not validate, oldest first.
    """

    role: str
    system: str
    prompt: str
    output_type: type[OutputT]
    payload: BaseModel | None = None
    max_tokens: int = 4096
    repairs: tuple[Repair, ...] = ()

    def repaired(self, error: InvalidAnswer) -> ModelRequest[OutputT]:
        """The same request, asked again with `error`'s answer and its validation feedback."""
        return replace(self, repairs=(*self.repairs, Repair(error.answer, error.feedback)))


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


class InvalidAnswer(ModelError):
    """One answer did not validate against the output model; a repair may fix it.

    `raw` is the structured answer as parsed, `answer` the backend's record of it (see `Repair`),
    `feedback` the validation errors worded for the model, `usage` what the answer cost."""

    def __init__(self, message: str, *, raw: Any, answer: Any, feedback: str, usage: Usage) -> None:
        super().__init__(message)
        self.raw = raw
        self.answer = answer
        self.feedback = feedback
        self.usage = usage


class ModelBackend(Protocol):
    """A source of structured role outputs, one attempt per `generate`."""

    name: str

    def model_for(self, role: str) -> str:
        """The model that answers `role` ("" when the backend cannot know before it answers)."""
        ...

    async def generate(self, request: ModelRequest[OutputT]) -> Generation[OutputT]: ...


def validation_feedback(error: ValidationError) -> str:
    """Validation errors as a short message a model can act on."""
    lines = []
    for item in error.errors()[:12]:
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        lines.append(f"- {where}: {item['msg']}")
    return "The submitted input did not validate:\n" + "\n".join(lines) + "\nSubmit again, corrected."


def validated(
    request: ModelRequest[OutputT], raw: Any, usage: Usage, *, answer: Any = None
) -> Generation[OutputT]:
    """`raw` validated with the request's output model, or `InvalidAnswer` carrying the feedback."""
    try:
        output = request.output_type.model_validate(raw)
    except ValidationError as error:
        feedback = validation_feedback(error)
        raise InvalidAnswer(
            f"The model's {request.output_type.__name__} did not validate. Last errors: {feedback}",
            raw=raw,
            answer=answer,
            feedback=feedback,
            usage=usage,
        ) from None
    return Generation(output=output, usage=usage)

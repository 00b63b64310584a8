"""What every role shares: its dependencies, its prompt, and the one way a role's work becomes a
handoff (opened, the model asked, the handoff committed with its summary, usage recorded)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from research_mcp.errors import BudgetExhausted, ModelError, ResearchError
from research_mcp.llm.base import Generation, InvalidAnswer, ModelBackend, ModelRequest, Usage
from research_mcp.redaction import Redactor
from research_mcp.retry import recording_retries
from research_mcp.roles.node_budgets import charge_nodes, check_nodes
from research_mcp.storage.outputs import StoredOutput, stored_output

if TYPE_CHECKING:
    from research_mcp.config import Settings
    from research_mcp.contracts import Budget
    from research_mcp.sources.library import SourceLibrary
    from research_mcp.storage.knowledge_base import KnowledgeBase
    from research_mcp.storage.models import RunUsage
    from research_mcp.storage.outputs import CachedOutput
    from research_mcp.storage.store import Store

__all__ = ["BudgetTracker", "RoleDeps", "RoleResult", "cache_key", "load_prompt", "perform"]

OutputT = TypeVar("OutputT", bound=BaseModel)

PROMPT_VERSION = "1"
MAX_REPAIRS = 2  # answers that do not validate are asked again at most this many times


@cache
def load_prompt(name: str) -> str:
    """A role's system prompt, from roles/prompts/<name>.md."""
    return resources.files("research_mcp.roles").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


@dataclass
class BudgetTracker:
    """Spending of one run against its limits; checked before each model call and each source read."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None
    max_sources: int | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    sources: int = 0
    sources_skipped: int = 0  # sources not read because max_sources was reached
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def from_limits(cls, limits: Budget | None, *, spent: RunUsage | None = None) -> BudgetTracker:
        tracker = cls(**(limits.model_dump() if limits else {}))
        if spent:
            tracker.tokens = spent.tokens_in + spent.tokens_out
            tracker.cost_usd = spent.cost_usd
        return tracker

    def exceeded(self) -> str | None:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"{self.tokens} of {self.max_tokens} tokens spent"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"${self.cost_usd:.4f} of ${self.max_cost_usd:.4f} spent"
        if self.max_seconds is not None and time.monotonic() - self.started >= self.max_seconds:
            return f"{self.max_seconds:.0f} s time limit reached"
        return None

    def check(self) -> None:
        reason = self.exceeded()
        if reason:
            raise BudgetExhausted(reason)

    def take_source(self) -> bool:
        """Count a source about to be read; False, and counted as skipped, once max_sources is reached.

        A source budget does not stop the run: the sources already read are extracted and synthesized
        (they are paid for), further ones are skipped and named, and the run ends `budget_exhausted`."""
        if self.max_sources is not None and self.sources >= self.max_sources:
            self.sources_skipped += 1
            return False
        self.sources += 1
        return True

    def source_limit_reached(self) -> str | None:
        if not self.sources_skipped:
            return None
        return f"Budget exhausted: {self.max_sources} sources read, {self.sources_skipped} more not read."

    def spend(self, usage: Usage) -> None:
        self.tokens += usage.tokens_in + usage.tokens_out
        self.cost_usd += usage.cost_usd


@dataclass
class RoleDeps:
    """Long-lived collaborators handed to every role."""

    store: Store
    model: ModelBackend
    sources: SourceLibrary
    settings: Settings
    limiter: anyio.CapacityLimiter
    budget: BudgetTracker = field(default_factory=BudgetTracker)
    # Facts merged and found again across runs, and role outputs reused; None: neither.
    knowledge: KnowledgeBase | None = None


@dataclass
class RoleResult(Generic[OutputT]):
    handoff_id: str
    output: OutputT
    usage: Usage


def cache_key(deps: RoleDeps, role: str, inputs: dict[str, Any]) -> str:
    """What a role's output depends on: its inputs, its prompt (version and text), backend and model."""
    material = {
        "role": role,
        "prompt_version": PROMPT_VERSION,
        "prompt": hashlib.sha256(load_prompt(role).encode()).hexdigest(),
        "backend": deps.model.name,
        "model": deps.model.model_for(role),
        "inputs": inputs,
    }
    encoded = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def _reusable(
    deps: RoleDeps, key: str | None, output_type: type[OutputT]
) -> tuple[CachedOutput, OutputT] | None:
    """The cached output under `key`, if the knowledge base holds one that still validates."""
    if key is None or deps.knowledge is None:
        return None
    cached = deps.knowledge.cached_output(key)
    if cached is None:
        return None
    fields = cached.output.model_dump(mode="json", include=set(output_type.model_fields), exclude_unset=True)
    try:
        return cached, output_type.model_validate(fields)
    except ValidationError:
        return None


async def perform(
    deps: RoleDeps,
    *,
    role: str,
    input: BaseModel,
    output_type: type[OutputT],
    payload: BaseModel | None = None,
    prompt: str,
    summarize: Callable[[OutputT], list[str]],
    finish: Callable[[str, OutputT], dict[str, Any]] | None = None,
    run_id: str | None = None,
    node_id: str | None = None,
    iteration: int = 0,
    max_tokens: int = 4096,
    reuse_key: str | None = None,
    on_reuse: Callable[[str, StoredOutput], None] | None = None,
) -> RoleResult[OutputT]:
    """Run one role invocation as a handoff.

    The handoff is opened (status running), the model asked within the concurrency limit and the
    budget, then `finish(handoff_id, output)` may do the role's checking (storing facts, checking
    citations) and return extra fields kept with the output; the handoff is committed as done with
    its summary before this returns. A failure is committed as failed, with its error, and re-raised.

    With a `reuse_key` (see `cache_key`) and a knowledge base, a done handoff of the same key is
    reused instead of asking the model: the new handoff is committed with its output marked
    `cached: true`, after `on_reuse(handoff_id, output)` (re-linking facts) has run.
    """
    store = deps.store
    handoff_id = store.start_handoff(
        role=role,
        input=input.model_dump(mode="json"),
        backend=deps.model.name,
        run_id=run_id,
        node_id=node_id,
        iteration=iteration,
    )
    reusable = _reusable(deps, reuse_key, output_type)
    if reusable is not None:
        return _reuse(deps, handoff_id, *reusable, on_reuse)
    request = ModelRequest(
        role=role,
        system=load_prompt(role),
        # The last net before a prompt leaves: no configured secret goes to a model, whatever text
        # (a source, an earlier failure) the prompt was built from.
        prompt=Redactor.from_settings(deps.settings)(prompt),
        output_type=output_type,
        payload=payload or input,
        max_tokens=max_tokens,
    )
    spent = Usage(model=deps.model.model_for(role))  # every attempt's usage, success or failure

    def record_call(usage: Usage, status: str, started: float, error: str | None = None) -> None:
        """One model_calls row: an attempt (`ok`, `invalid`, `failed`) or a request the transport
        retried (`retried`, no tokens, `latency_s` the wait)."""
        store.record_model_call(
            handoff_id,
            role=role,
            backend=deps.model.name,
            model=usage.model,
            tokens_in=usage.tokens_in,
            tokens_out=usage.tokens_out,
            cost_usd=usage.cost_usd,
            calls=usage.calls,
            latency_s=time.monotonic() - started,
            status=status,
            error=error,
        )

    try:
        generation = await _ask(deps, request, spent, record_call)
        extra = finish(handoff_id, generation.output) if finish else {}
        output = stored_output(role, {**generation.output.model_dump(mode="json"), **extra})
        store.finish_handoff(
            handoff_id,
            status="done",
            output=output,
            summary=summarize(generation.output)[:3],
            model=spent.model,
            tokens_in=spent.tokens_in,
            tokens_out=spent.tokens_out,
            cost_usd=spent.cost_usd,
        )
        if reuse_key is not None and deps.knowledge is not None:
            deps.knowledge.remember_output(reuse_key, role, handoff_id)
    except ResearchError as error:
        store.finish_handoff(
            handoff_id,
            status="failed",
            output=None,
            summary=[str(error)[:200]],
            error=str(error),
            model=spent.model if spent.calls else "",
            tokens_in=spent.tokens_in,
            tokens_out=spent.tokens_out,
            cost_usd=spent.cost_usd,
        )
        raise
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            store.finish_handoff(
                handoff_id,
                status="cancelled",
                output=None,
                summary=["cancelled"],
                tokens_in=spent.tokens_in,
                tokens_out=spent.tokens_out,
                cost_usd=spent.cost_usd,
            )
        raise
    except Exception as error:  # a bug below: the handoff must still not be left running
        message = f"internal error in the {role} ({type(error).__name__}: {error}); please report it."
        store.finish_handoff(handoff_id, status="failed", output=None, summary=[message[:200]], error=message)
        raise
    return RoleResult(handoff_id=handoff_id, output=generation.output, usage=spent)


async def _ask(
    deps: RoleDeps,
    request: ModelRequest[OutputT],
    spent: Usage,
    record_call: Callable[..., None],
) -> Generation[OutputT]:
    """The repair loop: ask within the budget and the concurrency limit, one backend attempt at a
    time; an answer that does not validate is asked again with its errors, at most `MAX_REPAIRS`
    times. Every attempt is charged to the budget and to `spent`, and recorded as a model call
    (`ok`, `invalid` or `failed`), whatever its outcome; each request the transport retried
    (an overload, a rate limit) is recorded too, as `retried`."""
    for number in range(MAX_REPAIRS + 1):
        deps.budget.check()
        started = time.monotonic()
        try:
            with recording_retries() as retried:
                try:
                    async with deps.limiter:
                        check_nodes(request.role)  # here, where parallel calls of one node take turns
                        generation = await deps.model.generate(request)
                finally:
                    for attempt in retried:  # overloads ridden out (or not): kept with the handoff
                        model = spent.model or deps.model.name
                        record_call(
                            Usage(model=model),
                            "retried",
                            time.monotonic() - attempt.waited,
                            attempt.describe(),
                        )
        except ModelError as error:
            usage = error.usage if isinstance(error.usage, Usage) else None
            if usage is not None:  # answers that fail are paid for all the same
                spent.model = usage.model
                spent.add(usage)
                deps.budget.spend(usage)
                charge_nodes(usage)
                status = "invalid" if isinstance(error, InvalidAnswer) else "failed"
                record_call(usage, status, started, str(error))
            if isinstance(error, InvalidAnswer) and number < MAX_REPAIRS:
                request = request.repaired(error)
                continue
            if isinstance(error, InvalidAnswer):
                raise ModelError(
                    f"The model's {request.output_type.__name__} did not validate after {MAX_REPAIRS} "
                    f"repairs. Last errors: {error.feedback}"
                ) from error
            raise
        spent.model = generation.usage.model
        spent.add(generation.usage)
        deps.budget.spend(generation.usage)
        charge_nodes(generation.usage)
        record_call(generation.usage, "ok", started)
        return generation
    raise AssertionError("unreachable: the last attempt returns or raises")


def _reuse(
    deps: RoleDeps,
    handoff_id: str,
    cached: CachedOutput,
    output: OutputT,
    on_reuse: Callable[[str, StoredOutput], None] | None,
) -> RoleResult[OutputT]:
    """Commit `handoff_id` as done with a cached output: no model call, no tokens."""
    stored = cached.output.model_copy(update={"cached": True, "cached_from": cached.handoff_id})
    try:
        if on_reuse is not None:
            on_reuse(handoff_id, stored)
        deps.store.finish_handoff(
            handoff_id, status="done", output=stored, summary=cached.summary, model=cached.model
        )
    except ResearchError as error:
        deps.store.finish_handoff(
            handoff_id, status="failed", output=None, summary=[str(error)[:200]], error=str(error)
        )
        raise
    return RoleResult(handoff_id=handoff_id, output=output, usage=Usage(model=cached.model))

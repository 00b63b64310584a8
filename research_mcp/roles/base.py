"""What every role shares: its dependencies, its prompt, and the one way a role's work becomes a
handoff (opened, the model asked, the handoff committed with its summary, usage recorded)."""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from research_mcp.core.contracts import HandoffStatus, RoleName
from research_mcp.core.errors import ModelError, ResearchError
from research_mcp.core.redaction import Redactor
from research_mcp.core.retry import recording_retries
from research_mcp.llm.base import Generation, InvalidAnswer, ModelBackend, ModelRequest, Usage
from research_mcp.roles.node_budgets import charge_nodes, check_nodes
from research_mcp.roles.run_budget import BudgetTracker
from research_mcp.storage.outputs import StoredOutput, stored_output

if TYPE_CHECKING:
    from research_mcp.core.config import Settings
    from research_mcp.sources.library import SourceLibrary
    from research_mcp.storage.knowledge_base import KnowledgeBase
    from research_mcp.storage.outputs import CachedOutput
    from research_mcp.storage.store import Store

__all__ = [
    "BudgetTracker",
    "HandoffContext",
    "Place",
    "Role",
    "RoleDeps",
    "RoleResult",
    "cache_key",
    "load_prompt",
    "perform",
]

OutputT = TypeVar("OutputT", bound=BaseModel)
StoredT = TypeVar("StoredT", bound=StoredOutput)

PROMPT_VERSION = "1"
MAX_REPAIRS = 2  # answers that do not validate are asked again at most this many times


@cache
def load_prompt(name: str) -> str:
    """A role's system prompt, from roles/prompts/<name>.md."""
    return resources.files("research_mcp.roles").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


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
    caller: str | None = None  # who asked (research_mcp/core/callers.py); kept with what is made


@dataclass
class RoleResult(Generic[OutputT]):
    handoff_id: str
    output: OutputT
    usage: Usage
    #: What the handoff was committed with: the answer as checked, with what code added.
    stored: StoredOutput | None = None


@dataclass(frozen=True)
class Place:
    """Where a handoff sits: its run, plan node and phase iteration (no run: a direct tool call)."""

    run_id: str | None = None
    node_id: str | None = None
    iteration: int = 0


@dataclass(frozen=True)
class HandoffContext:
    """What a role's check sees: the collaborators and the handoff about to be committed."""

    deps: RoleDeps
    handoff_id: str
    place: Place

    @property
    def run_id(self) -> str | None:
        return self.place.run_id


class Role(ABC, Generic[OutputT, StoredT]):
    """One invocation of a role: its input, what it asks the model, and the check code makes of the
    answer before the handoff is committed (as pydantic-ai runs output validators on a typed
    context). A role module subclasses it; `perform` runs it."""

    name: RoleName
    output_type: type[OutputT]
    stored_type: type[StoredT]
    max_tokens: int = 4096

    def __init__(self, input: BaseModel, payload: BaseModel | None = None) -> None:
        self.input = input
        self.payload = payload or input

    @abstractmethod
    def prompt(self) -> str:
        """What the model is asked (untrusted text framed as data)."""

    @abstractmethod
    def summary(self, output: OutputT) -> list[str]:
        """The handoff's summary lines (at most three are kept)."""

    def check(self, context: HandoffContext, output: OutputT) -> StoredT:
        """The answer as it is committed; a role storing facts or checking citations overrides it."""
        return self.stored(output)

    def reuse_key(self, deps: RoleDeps) -> str | None:
        """The key (see `cache_key`) under which an earlier answer may be reused; None: never."""
        return None

    def reused(self, context: HandoffContext, stored: StoredOutput) -> None:
        """Called before a handoff is committed with a reused output (to re-link its facts)."""

    def worth_reusing(self, output: OutputT) -> bool:
        """Whether an answer is remembered under `reuse_key`: one the caller will ask again about
        (an infeasible plan, to be repaired) is not."""
        return True

    def stored(self, output: OutputT, **added: Any) -> StoredT:
        """The answer plus what code added, every key declared by `stored_type`."""
        kept = stored_output(self.name, {**output.model_dump(mode="json"), **added})
        assert isinstance(kept, self.stored_type)
        return kept


@cache
def code_version() -> str:
    """A digest of this package's code. A stored output was made (the no-model backend is code) and
    checked (citations, evidence caps) by code: after an upgrade the same inputs are answered and
    judged again, not served as the earlier code left them. About 140 files, hashed once a process."""
    package = resources.files("research_mcp")
    digest = hashlib.sha256()
    for name, file in sorted(_python_files(package), key=lambda found: found[0]):
        digest.update(name.encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _python_files(folder: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """The package's Python files below `folder`, each with its path inside the package."""
    found: list[tuple[str, Any]] = []
    for entry in folder.iterdir():
        name = f"{prefix}{entry.name}"
        if entry.is_dir() and entry.name != "__pycache__":
            found += _python_files(entry, f"{name}/")
        elif entry.name.endswith(".py"):
            found.append((name, entry))
    return found


def cache_key(deps: RoleDeps, role: str, inputs: dict[str, Any]) -> str:
    """What a role's output depends on: its inputs, its prompt (version and text), backend and model,
    and the code that made and checked it (`code_version`)."""
    material = {
        "role": role,
        "prompt_version": PROMPT_VERSION,
        "prompt": hashlib.sha256(load_prompt(role).encode()).hexdigest(),
        "backend": deps.model.name,
        "model": deps.model.model_for(role),
        "code": code_version(),
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
    deps: RoleDeps, role: Role[OutputT, StoredT], place: Place | None = None
) -> RoleResult[OutputT]:
    """Run one role invocation as a handoff.

    The handoff is opened (status running), the model asked within the concurrency limit and the
    budget, then `role.check` makes the role's checks (storing facts, checking citations) and gives
    the output as committed; the handoff is committed as done with its summary before this returns.
    A failure is committed as failed, with its error, and re-raised.

    With a `role.reuse_key` and a knowledge base, a done handoff of the same key is reused instead of
    asking the model: the new handoff is committed with its output marked `cached: true`, after
    `role.reused` (re-linking facts) has run.
    """
    place = place or Place()
    handoff_id = deps.store.start_handoff(
        role=role.name,
        input=role.input.model_dump(mode="json"),
        backend=deps.model.name,
        run_id=place.run_id,
        node_id=place.node_id,
        iteration=place.iteration,
        caller=deps.caller,
    )
    context = HandoffContext(deps, handoff_id, place)
    reuse_key = role.reuse_key(deps)
    reusable = _reusable(deps, reuse_key, role.output_type)
    if reusable is not None:
        return _reuse(context, role, *reusable)
    spent = Usage(model=deps.model.model_for(role.name))  # every attempt's usage, success or failure
    try:
        generation = await _ask(deps, _request(deps, role), spent, _CallLog(context, role.name))
        stored = role.check(context, generation.output)
        _finish(
            context, status="done", spent=spent, output=stored, summary=role.summary(generation.output)[:3]
        )
        if reuse_key is not None and deps.knowledge is not None and role.worth_reusing(generation.output):
            deps.knowledge.remember_output(reuse_key, role.name, handoff_id)
    except ResearchError as error:
        _finish(context, status="failed", spent=spent, summary=[str(error)[:200]], error=str(error))
        raise
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            _finish(context, status="cancelled", spent=spent, summary=["cancelled"])
        raise
    except Exception as error:  # a bug below: the handoff must still not be left running
        message = f"internal error in the {role.name} ({type(error).__name__}: {error}); please report it."
        deps.store.finish_handoff(
            handoff_id, status="failed", output=None, summary=[message[:200]], error=message
        )
        raise
    return RoleResult(handoff_id=handoff_id, output=generation.output, usage=spent, stored=stored)


def _request(deps: RoleDeps, role: Role[OutputT, StoredT]) -> ModelRequest[OutputT]:
    return ModelRequest(
        role=role.name,
        system=load_prompt(role.name),
        # The last net before a prompt leaves: no configured secret goes to a model, whatever text
        # (a source, an earlier failure) the prompt was built from.
        prompt=Redactor.from_settings(deps.settings)(role.prompt()),
        output_type=role.output_type,
        payload=role.payload,
        max_tokens=role.max_tokens,
    )


def _finish(
    context: HandoffContext,
    *,
    status: HandoffStatus,
    spent: Usage,
    summary: list[str],
    output: StoredOutput | None = None,
    error: str | None = None,
) -> None:
    """Commit the handoff with what its attempts spent (the model named once one was asked)."""
    asked = status == "done" or (status == "failed" and spent.calls > 0)
    context.deps.store.finish_handoff(
        context.handoff_id,
        status=status,
        output=output,
        summary=summary,
        error=error,
        model=spent.model if asked else "",
        tokens_in=spent.tokens_in,
        tokens_out=spent.tokens_out,
        cost_usd=spent.cost_usd,
    )


@dataclass(frozen=True)
class _CallLog:
    """Records model_calls rows for one handoff."""

    context: HandoffContext
    role: str

    def __call__(self, usage: Usage, status: str, started: float, error: str | None = None) -> None:
        """One model_calls row: an attempt (`ok`, `invalid`, `failed`) or a request the transport
        retried (`retried`, no tokens, `latency_s` the wait)."""
        deps = self.context.deps
        deps.store.record_model_call(
            self.context.handoff_id,
            role=self.role,
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
    context: HandoffContext, role: Role[OutputT, StoredT], cached: CachedOutput, output: OutputT
) -> RoleResult[OutputT]:
    """Commit the handoff as done with a cached output: no model call, no tokens."""
    store, handoff_id = context.deps.store, context.handoff_id
    stored = cached.output.model_copy(update={"cached": True, "cached_from": cached.handoff_id})
    try:
        role.reused(context, stored)
        store.finish_handoff(
            handoff_id, status="done", output=stored, summary=cached.summary, model=cached.model
        )
    except ResearchError as error:
        store.finish_handoff(
            handoff_id, status="failed", output=None, summary=[str(error)[:200]], error=str(error)
        )
        raise
    return RoleResult(handoff_id=handoff_id, output=output, usage=Usage(model=cached.model), stored=stored)

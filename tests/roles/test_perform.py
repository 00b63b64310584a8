"""`perform` owns the repair loop, the usage totals and the budget, the same for every backend.

A backend makes one attempt per `generate`; an answer that does not validate is asked again with
its errors at most twice, and every attempt — valid, invalid or failed after being paid for — is
charged to the budget, counted in the handoff's tokens and recorded as a model call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from pydantic import BaseModel

from research_mcp.core.config import Settings
from research_mcp.core.contracts import Confidence, ExtractorOutput
from research_mcp.core.errors import BudgetExhausted, ModelError
from research_mcp.llm.anthropic import AnthropicModel
from research_mcp.llm.base import ModelBackend, ModelRequest
from research_mcp.llm.sampling import SamplingModel
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.roles.base import MAX_REPAIRS, BudgetTracker, Role, RoleDeps, RoleResult, perform
from research_mcp.sources.library import SourceLibrary
from research_mcp.storage.outputs import StoredExtraction
from research_mcp.storage.store import Store
from tests.llm.fake_anthropic import FakeMessagesAPI, message_usage

VALID = ExtractorOutput(facts=[], answers=[], confidence=Confidence(level="low", reasoning="nothing found"))
INVALID = {"facts": [], "confidence": {"level": "certain"}}


class Ask(BaseModel):
    question: str


class SamplingSession:
    """A host's sampling back-channel (the MCP boundary): answers `texts` in turn, recording requests."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.requests: list[list[types.SamplingMessage]] = []

    async def create_message(
        self, messages: list[types.SamplingMessage], **_: Any
    ) -> types.CreateMessageResult:
        self.requests.append(messages)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.texts.pop(0)),
            model="host-model",
            stop_reason="endTurn",
        )


@pytest.fixture
def store(research_home: Path) -> Store:
    return Store(Settings().database_path)


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        yield fake


def deps_for(store: Store, model: ModelBackend, budget: BudgetTracker | None = None) -> RoleDeps:
    return RoleDeps(
        store=store,
        model=model,
        sources=SourceLibrary(store),
        settings=Settings(),
        limiter=anyio.CapacityLimiter(2),
        budget=budget or BudgetTracker(),
    )


class Asking(Role[ExtractorOutput, StoredExtraction]):
    name = "extractor"
    output_type = ExtractorOutput
    stored_type = StoredExtraction

    def prompt(self) -> str:
        return "<source>The bridge opened in 1932.</source>"

    def summary(self, output: ExtractorOutput) -> list[str]:
        return [output.confidence.reasoning]


async def ask(deps: RoleDeps) -> RoleResult[ExtractorOutput]:
    return await perform(deps, Asking(Ask(question="When did it open?")))


def scripted(answers: list[Any]) -> ScriptedModel:
    return ScriptedModel(lambda request: answers.pop(0))


def sampling(answers: list[Any]) -> SamplingModel:
    return SamplingModel(
        SamplingSession([json.dumps(a if isinstance(a, dict) else a.model_dump()) for a in answers])
    )


def handoff_and_calls(store: Store) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    [handoff] = store.db.query("SELECT status, error, tokens_in, tokens_out, model FROM handoffs")
    calls = list(store.db.query("SELECT status, calls, tokens_in, tokens_out FROM model_calls ORDER BY id"))
    return handoff, calls


BACKENDS: dict[str, Callable[[list[Any]], ModelBackend]] = {"scripted": scripted, "sampling": sampling}


@pytest.mark.parametrize("backend", list(BACKENDS))
async def test_an_invalid_answer_is_repaired_and_both_attempts_are_charged(
    store: Store, backend: str
) -> None:
    model = BACKENDS[backend]([INVALID, VALID])
    budget = BudgetTracker()

    result = await ask(deps_for(store, model, budget))

    assert result.output == VALID
    handoff, calls = handoff_and_calls(store)
    assert [call["status"] for call in calls] == ["invalid", "ok"]
    assert all(call["calls"] == 1 and call["tokens_in"] > 0 for call in calls)
    assert handoff["status"] == "done"
    assert handoff["tokens_in"] == sum(call["tokens_in"] for call in calls) == result.usage.tokens_in
    assert budget.tokens == handoff["tokens_in"] + handoff["tokens_out"]
    assert result.usage.calls == 2


@pytest.mark.parametrize("backend", list(BACKENDS))
async def test_a_call_that_never_validates_fails_after_two_repairs_and_is_still_charged(
    store: Store, backend: str
) -> None:
    model = BACKENDS[backend]([INVALID] * (MAX_REPAIRS + 1))
    budget = BudgetTracker()

    with pytest.raises(ModelError, match="ExtractorOutput did not validate after 2 repairs"):
        await ask(deps_for(store, model, budget))

    handoff, calls = handoff_and_calls(store)
    assert [call["status"] for call in calls] == ["invalid"] * 3
    assert handoff["status"] == "failed"
    assert "did not validate after 2 repairs" in handoff["error"]
    assert handoff["tokens_in"] == sum(call["tokens_in"] for call in calls) > 0
    assert budget.tokens == handoff["tokens_in"] + handoff["tokens_out"] > 0


async def test_the_sampling_repair_replays_the_answer_and_its_errors_to_the_host(store: Store) -> None:
    session = SamplingSession(["not json at all", VALID.model_dump_json()])

    await ask(deps_for(store, SamplingModel(session)))

    first, second = session.requests
    assert len(first) == 1
    assert [message.role for message in second] == ["user", "assistant", "user"]
    assert second[1].content.text == "not json at all"  # type: ignore[union-attr]
    assert "did not validate" in second[2].content.text  # type: ignore[union-attr]


async def test_a_budget_spent_by_a_failed_attempt_stops_the_repair(store: Store) -> None:
    budget = BudgetTracker(max_tokens=1)  # the first answer spends it
    model = scripted([INVALID, VALID])

    with pytest.raises(BudgetExhausted):
        await ask(deps_for(store, model, budget))

    assert len(model.calls) == 1
    handoff, calls = handoff_and_calls(store)
    assert handoff["status"] == "failed" and handoff["tokens_in"] > 0
    assert [call["status"] for call in calls] == ["invalid"]


async def test_anthropic_attempts_are_charged_per_answer_with_cache_tokens_as_input(
    store: Store, api: FakeMessagesAPI
) -> None:
    api.reply_tool_use(INVALID, usage=message_usage(1000, 200, cache_creation_input_tokens=3000))
    api.reply_tool_use(VALID.model_dump(), usage=message_usage(1200, 300, cache_read_input_tokens=3000))
    model = AnthropicModel(api_key="test-key", base_url=api.url, model_for=lambda role: "claude-sonnet-4-6")

    async with model:
        result = await ask(deps_for(store, model))

    # Sonnet 4.6: $3 in, $15 out per million; cache writes 1.25x input, cache reads 0.1x input.
    expected_cost = (2200 * 3 + 3000 * 3 * 1.25 + 3000 * 3 * 0.1 + 500 * 15) / 1_000_000
    assert (result.usage.tokens_in, result.usage.tokens_out, result.usage.calls) == (8200, 500, 2)
    assert result.usage.cost_usd == pytest.approx(expected_cost)
    handoff, calls = handoff_and_calls(store)
    assert [(c["status"], c["tokens_in"], c["tokens_out"]) for c in calls] == [
        ("invalid", 4000, 200),
        ("ok", 4200, 300),
    ]
    assert (handoff["tokens_in"], handoff["model"]) == (8200, "claude-sonnet-4-6")


async def test_a_backend_makes_one_attempt_per_generate(api: FakeMessagesAPI) -> None:
    api.reply_tool_use(INVALID)
    model = AnthropicModel(api_key="test-key", base_url=api.url, model_for=lambda role: "claude-haiku-4-5")
    request = ModelRequest(role="extractor", system="s", prompt="p", output_type=ExtractorOutput)
    generate: Callable[[ModelRequest[ExtractorOutput]], Awaitable[Any]] = model.generate

    async with model:
        with pytest.raises(ModelError) as caught:
            await generate(request)

    assert len(api.requests) == 1
    assert caught.value.usage is not None  # the answer's cost travels with the error

"""Overload: a tool call waits little and says "try again"; a background run rides it out.

The retry policy comes from the context (`patience`), the retrying transport applies it to the
Anthropic SDK (httpx2) and to Tavily (httpx) alike, honours retry-after, gives up at once when asked
to wait longer than the policy allows, and every retry is recorded with the handoff it served.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import ExtractorOutput
from research_mcp.core.errors import ModelError, SourceError
from research_mcp.core.retry import BACKGROUND, INTERACTIVE, RetryPolicy, patience, recording_retries
from research_mcp.llm.anthropic import AnthropicModel
from research_mcp.llm.base import ModelRequest
from research_mcp.server.app import create_server
from research_mcp.sources.search import WebSearch
from research_mcp.storage.store import Store
from tests.llm.fake_anthropic import FakeMessagesAPI
from tests.server.waiting import until_finished
from tests.sources.fake_tavily import FakeTavily

TEXT = "The bridge opened in 1932. It carries eight lanes of traffic and a railway line across the harbour."
EXTRACTION = {
    "facts": [
        {"statement": "It opened in 1932.", "quote": "The bridge opened in 1932.", "question_index": 0}
    ],
    "answers": [],
    "confidence": {"level": "high", "reasoning": "stated"},
}
OVERLOADS = 5  # quick ones: ridden out by a tool call and a run alike
FAST = {"retry-after-ms": "1"}


def overloaded(api: FakeMessagesAPI, times: int, headers: dict[str, str] = FAST) -> None:
    for _ in range(times):
        api.reply_error(529, "overloaded_error", "Overloaded", headers=headers)


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        yield fake


def request() -> ModelRequest[ExtractorOutput]:
    return ModelRequest(role="extractor", system="s", prompt="p", output_type=ExtractorOutput)


class VirtualClock:
    """The time a policy reads and waits on, advanced by its waits alone: minutes take no time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()

    def policy(self, policy: RetryPolicy) -> RetryPolicy:
        return replace(policy, clock=self.clock, sleep=self.sleep)


async def test_a_tool_call_rides_out_a_burst_of_overload_rate_limit_and_server_error(
    api: FakeMessagesAPI,
) -> None:
    api.reply_error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0"})
    api.reply_error(429, "rate_limit_error", "Slow down", headers={"retry-after": "0"})
    api.reply_error(500, "api_error", "injected", headers={"retry-after": "0"})
    api.reply_tool_use(EXTRACTION)

    async with AnthropicModel(
        api_key="test-key", base_url=api.url, model_for=lambda r: "claude-haiku-4-5"
    ) as model:
        with recording_retries() as retried:
            generation = await model.generate(request())

    assert generation.output == ExtractorOutput.model_validate(EXTRACTION)
    assert [(a.status, a.policy, a.waited) for a in retried] == [
        (529, "interactive", 0.0),
        (429, "interactive", 0.0),
        (500, "interactive", 0.0),
    ]


async def test_a_tool_call_gives_up_on_a_lasting_overload_within_its_time_budget_saying_try_again(
    api: FakeMessagesAPI,
) -> None:
    time = VirtualClock()
    overloaded_for_ever = 1 + INTERACTIVE.max_retries
    for _ in range(overloaded_for_ever):
        api.reply_error(529, "overloaded_error", "Overloaded")  # no retry-after: our backoff

    async with AnthropicModel(
        api_key="test-key", base_url=api.url, model_for=lambda r: "claude-haiku-4-5"
    ) as model:
        with patience(time.policy(INTERACTIVE)), pytest.raises(ModelError) as caught:
            await model.generate(request())

    # Backoff doubling from 0.5 s (each wait 75-100 % of it, jittered), stopped before the budget ends.
    doubling = [min(0.5 * 2**n, 8.0) for n in range(len(time.waits))]
    assert all(0.75 * full <= wait <= full for wait, full in zip(time.waits, doubling, strict=True))
    assert 4 <= len(time.waits) < overloaded_for_ever and sum(time.waits) <= INTERACTIVE.max_wait
    assert INTERACTIVE.max_wait < 60  # inside the host's minute
    assert "overloaded" in str(caught.value) and "Try again in a few minutes" in str(caught.value)
    assert f"after {len(time.waits)} retries over {sum(time.waits):.1f} s" in str(caught.value)


async def test_a_background_call_rides_out_minutes_of_overload_without_a_retry_after(
    api: FakeMessagesAPI,
) -> None:
    time = VirtualClock()
    overloaded(api, 9, headers={})
    api.reply_tool_use(EXTRACTION)

    async with AnthropicModel(
        api_key="test-key", base_url=api.url, model_for=lambda r: "claude-haiku-4-5"
    ) as model:
        with patience(time.policy(BACKGROUND)):
            generation = await model.generate(request())

    assert generation.output == ExtractorOutput.model_validate(EXTRACTION)
    assert len(time.waits) == 9 and 5 * 60 < time.now < BACKGROUND.max_wait  # minutes, no real sleep


async def test_a_background_call_rides_out_the_same_overload(api: FakeMessagesAPI) -> None:
    overloaded(api, OVERLOADS)
    api.reply_tool_use(EXTRACTION)

    async with AnthropicModel(
        api_key="test-key", base_url=api.url, model_for=lambda r: "claude-haiku-4-5"
    ) as model:
        with patience(BACKGROUND), recording_retries() as retried:
            generation = await model.generate(request())

    assert generation.output == ExtractorOutput.model_validate(EXTRACTION)
    assert generation.usage.calls == 1  # five overloads cost nothing
    assert len(api.requests) == OVERLOADS + 1
    assert [a.policy for a in retried] == ["background"] * OVERLOADS


async def test_the_wait_is_the_retry_after_the_upstream_asked_for(api: FakeMessagesAPI) -> None:
    api.reply_error(529, "overloaded_error", "Overloaded", headers={"retry-after": "0.2"})
    api.reply_error(429, "rate_limit_error", "Slow down", headers={"retry-after-ms": "150"})
    api.reply_tool_use(EXTRACTION)

    async with AnthropicModel(
        api_key="test-key", base_url=api.url, model_for=lambda r: "claude-haiku-4-5"
    ) as model:
        with recording_retries() as retried:
            await model.generate(request())

    assert [(a.status, a.waited, a.asked) for a in retried] == [(529, 0.2, True), (429, 0.15, True)]


@pytest.mark.parametrize("policy", [INTERACTIVE, BACKGROUND])
async def test_a_wait_longer_than_the_policy_allows_fails_at_once_naming_the_wait(
    api: FakeMessagesAPI, policy: RetryPolicy
) -> None:
    api.reply_error(
        529, "overloaded_error", "Overloaded", headers={"retry-after": str(int(policy.max_wait) + 1)}
    )

    async with AnthropicModel(
        api_key="test-key", base_url=api.url, model_for=lambda r: "claude-haiku-4-5"
    ) as model:
        with patience(policy), pytest.raises(ModelError) as caught:
            await model.generate(request())

    assert len(api.requests) == 1
    assert f"asked to wait {int(policy.max_wait) + 1} s" in str(caught.value)
    assert f"this {policy.name} call" in str(caught.value)


async def test_tavily_is_retried_by_the_same_transport_under_the_context_policy() -> None:
    with FakeTavily() as tavily:
        for _ in range(OVERLOADS):
            tavily.reply(429, {"detail": {"error": "Too many requests"}}, headers={"Retry-After": "0"})
        tavily.reply(
            200, {"results": [{"url": "https://a.example", "title": "A", "content": "a", "score": 0.5}]}
        )
        for _ in range(1 + INTERACTIVE.max_retries):
            tavily.reply(503, {"detail": {"error": "unavailable"}}, headers={"Retry-After": "0"})

        async with WebSearch("tvly-test-key", tavily.url) as web:
            with patience(BACKGROUND):
                hits = await web.search("q")
            with pytest.raises(SourceError, match=r"HTTP 503"):
                await web.search("q")  # a tool call: its retries, then Tavily's side

        assert [hit.url for hit in hits] == ["https://a.example"]
        assert len(tavily.requests) == OVERLOADS + 1 + 1 + INTERACTIVE.max_retries


async def test_a_run_rides_out_an_overload_and_keeps_each_retry_with_its_handoff(
    anthropic_api: FakeMessagesAPI,
) -> None:
    leaf = {"kind": "leaf", "title": "bridge", "questions": ["When did the bridge open?"], "sources": [TEXT]}
    anthropic_api.reply_tool_use({"root": {"kind": "executor", "title": "bridge", "children": [leaf]}})
    overloaded(anthropic_api, OVERLOADS)  # the extraction, in the background run
    anthropic_api.reply_tool_use(EXTRACTION)
    for _ in range(2):
        anthropic_api.reply_tool_use(
            {
                "report": "The bridge opened in 1932 [F1].",
                "confidence": {"level": "high", "reasoning": "direct"},
            }
        )

    async with Client(create_server()) as client:
        plan = await client.call_tool("plan_research", {"query": "When did the bridge open?"})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )

    assert run.structured_content["status"] == "done", run.content
    store = Store(Settings().database_path)
    rows: list[dict[str, Any]] = list(
        store.db.query(
            "SELECT m.status, m.calls, m.error FROM model_calls m JOIN handoffs h ON h.id = m.handoff_id "
            "WHERE h.role = 'extractor' ORDER BY m.id"
        )
    )
    assert [row["status"] for row in rows] == ["retried"] * OVERLOADS + ["ok"]
    assert all("HTTP 529" in row["error"] and "background policy" in row["error"] for row in rows[:-1])
    # The retries cost no call: the extraction and the two syntheses are the run's model calls.
    assert store.run_usage(run.structured_content["id"]).llm_calls == 3

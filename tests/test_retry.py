"""Overload: a tool call waits little and says "try again"; a background run rides it out.

The retry policy comes from the context (`patience`), the retrying transport applies it to the
Anthropic SDK (httpx2) and to Tavily (httpx) alike, honours retry-after, gives up at once when asked
to wait longer than the policy allows, and every retry is recorded with the handoff it served.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from research_mcp.config import Settings
from research_mcp.contracts import ExtractorOutput
from research_mcp.errors import ModelError, SourceError
from research_mcp.llm.anthropic import AnthropicModel
from research_mcp.llm.base import ModelRequest
from research_mcp.retry import BACKGROUND, INTERACTIVE, RetryPolicy, patience, recording_retries
from research_mcp.server.app import create_server
from research_mcp.sources.search import WebSearch
from research_mcp.storage.store import Store
from tests.llm.fake_anthropic import FakeMessagesAPI
from tests.sources.fake_tavily import FakeTavily

TEXT = "The bridge opened in 1932. It carries eight lanes of traffic and a railway line across the harbour."
EXTRACTION = {
    "facts": [
        {"statement": "It opened in 1932.", "quote": "The bridge opened in 1932.", "question_index": 0}
    ],
    "answers": [],
    "confidence": {"level": "high", "reasoning": "stated"},
}
OVERLOADS = 5  # more than a tool call's 2 retries, well within a run's 8
FAST = {"retry-after-ms": "1"}


def overloaded(api: FakeMessagesAPI, times: int) -> None:
    for _ in range(times):
        api.reply_error(529, "overloaded_error", "Overloaded", headers=FAST)


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        yield fake


def request() -> ModelRequest[ExtractorOutput]:
    return ModelRequest(role="extractor", system="s", prompt="p", output_type=ExtractorOutput)


async def test_a_tool_call_gives_up_on_a_long_overload_after_two_retries_saying_try_again(
    api: FakeMessagesAPI,
) -> None:
    overloaded(api, OVERLOADS)
    api.reply_tool_use(EXTRACTION)

    async with AnthropicModel(
        api_key="test-key", base_url=api.url, model_for=lambda r: "claude-haiku-4-5"
    ) as model:
        with recording_retries() as retried, pytest.raises(ModelError) as caught:
            await model.generate(request())

    assert len(api.requests) == 3
    assert "overloaded" in str(caught.value) and "Try again in a few minutes" in str(caught.value)
    assert "after 2 retries" in str(caught.value)
    assert [(a.status, a.policy, a.asked) for a in retried] == [(529, "interactive", True)] * 2


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
        for _ in range(3):
            tavily.reply(503, {"detail": {"error": "unavailable"}}, headers={"Retry-After": "0"})

        async with WebSearch("tvly-test-key", tavily.url) as web:
            with patience(BACKGROUND):
                hits = await web.search("q")
            with pytest.raises(SourceError, match=r"HTTP 503"):
                await web.search("q")  # a tool call: two retries, then Tavily's side

        assert [hit.url for hit in hits] == ["https://a.example"]
        assert len(tavily.requests) == OVERLOADS + 1 + 3


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
        run = await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
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

"""The tools served by the Anthropic backend, through the real SDK against a loopback fake of the API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.llm.fake_anthropic import FakeMessagesAPI
from tests.server.waiting import until_finished

TEXT = "The bridge opened in 1932. It carries eight lanes of traffic and a railway line across the harbour."


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("RESEARCH_MCP_ANTHROPIC_MODEL", "claude-sonnet-4-6")
        yield api


async def test_an_extraction_by_the_anthropic_backend_checks_each_quote(fake: FakeMessagesAPI) -> None:
    fake.reply_tool_use(
        {
            "facts": [
                {
                    "statement": "The bridge opened in 1932.",
                    "quote": "The bridge opened in 1932.",
                    "question_index": 0,
                },
                {
                    "statement": "It opened in 1930.",
                    "quote": "The bridge opened in 1930.",
                    "question_index": 0,
                },
            ],
            "answers": [{"question": "When did it open?", "answer": "1932", "fact_indexes": [0]}],
            "confidence": {"level": "high", "reasoning": "stated directly"},
        }
    )
    async with Client(create_server()) as client:
        result = await client.call_tool(
            "extract_source", {"source": TEXT, "questions": ["When did it open?"]}
        )
    assert not result.is_error, result.content
    assert result.structured_content["backend"] == "anthropic"
    assert result.structured_content["metrics"] == {"facts": 2, "verified": 1}
    facts = Store(Settings().database_path).facts_for_handoffs([result.structured_content["id"]])
    assert [(f.quote, f.verified) for f in facts] == [
        ("The bridge opened in 1932.", True),
        ("The bridge opened in 1930.", False),
    ]
    request = fake.bodies[0]
    assert request["tool_choice"]["name"] == "submit"
    assert "UNTRUSTED SOURCE" in request["messages"][0]["content"]


async def test_a_max_tokens_stop_is_a_clear_tool_error_recorded_in_the_handoff(fake: FakeMessagesAPI) -> None:
    fake.reply_tool_use({"facts": []}, stop_reason="max_tokens")
    async with Client(create_server(), mode="legacy") as client:
        result = await client.call_tool(
            "extract_source", {"source": TEXT, "questions": ["When did it open?"]}
        )
    assert result.is_error
    assert "max_tokens" in result.content[0].text or "cut" in result.content[0].text
    store = Store(Settings().database_path)
    (row,) = store.db.query("SELECT status, error FROM handoffs WHERE role = 'extractor'")
    assert row["status"] == "failed"
    assert row["error"] and row["error"] in result.content[0].text


async def test_a_whole_run_is_served_by_the_anthropic_backend_through_the_real_sdk(
    fake: FakeMessagesAPI,
) -> None:
    leaf = {"kind": "leaf", "title": "bridge", "questions": ["When did the bridge open?"], "sources": [TEXT]}
    fake.reply_tool_use(
        {"root": {"kind": "executor", "title": "bridge", "children": [leaf]}, "rationale": "one leaf"}
    )
    fake.reply_tool_use(
        {
            "facts": [
                {
                    "statement": "It opened in 1932.",
                    "quote": "The bridge opened in 1932.",
                    "question_index": 0,
                }
            ],
            "answers": [{"question": "When did the bridge open?", "answer": "1932", "fact_indexes": [0]}],
            "confidence": {"level": "high", "reasoning": "stated"},
        }
    )
    for _ in range(2):  # the leaf's synthesis, then the root's
        fake.reply_tool_use(
            {
                "report": "The bridge opened in 1932 [F1].",
                "confidence": {"level": "high", "reasoning": "direct"},
            }
        )
    async with Client(create_server(), mode="legacy") as client:
        plan = await client.call_tool("plan_research", {"query": "When did the bridge open?"})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 20}
            ),
        )
        report = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "report"}
        )
    assert run.structured_content["status"] == "done", run.content
    assert run.structured_content["backend"] == "anthropic"
    assert run.structured_content["metrics"]["citations_verified"] == 1
    assert run.structured_content["metrics"]["cost_usd"] > 0
    assert "The bridge opened in 1932 [F1]." in report.structured_content["text"]
    tools = [body["tools"][0]["input_schema"].get("title") for body in fake.bodies]
    assert tools == ["PlannerOutput", "ExtractorOutput", "SynthesisOutput", "SynthesisOutput"]

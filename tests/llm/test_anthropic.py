"""The Anthropic backend: the real SDK against a loopback fake of the Messages API."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from research_mcp.core.config import Settings
from research_mcp.core.contracts import ExtractorOutput
from research_mcp.core.errors import ModelError, NotConfigured
from research_mcp.core.retry import INTERACTIVE, NO_RETRY
from research_mcp.llm.anthropic import AnthropicModel
from research_mcp.llm.base import InvalidAnswer, ModelRequest, Usage
from research_mcp.llm.pricing import cost_usd, pricing_note

from .fake_anthropic import FakeMessagesAPI, message_usage

KEY = "test-key"
MODELS = {"extractor": "claude-haiku-4-5", "synthesizer": "claude-sonnet-4-6"}
SYSTEM = "You are the extractor. Report facts with verbatim quotes."
PROMPT = "<source>Solid-state cells reached 500 Wh/kg in 2025.</source>\nQuestion 0: What energy density?"

VALID = {
    "facts": [
        {
            "statement": "Solid-state cells reached 500 Wh/kg.",
            "quote": "Solid-state cells reached 500 Wh/kg in 2025.",
            "question_index": 0,
            "confidence": 0.9,
        }
    ],
    "answers": [{"question": "What energy density?", "answer": "500 Wh/kg", "fact_indexes": [0]}],
    "confidence": {"level": "high", "reasoning": "Stated directly by the source."},
}
INVALID = {
    "facts": [{"statement": "x", "quote": "Solid-state cells reached 500 Wh/kg in 2025."}],
    "confidence": {"level": "certain", "reasoning": "Stated directly."},
}


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        yield fake


def model_for(role: str) -> str:
    return MODELS.get(role, "claude-sonnet-4-6")


def connect(api: FakeMessagesAPI, **options: Any) -> AnthropicModel:
    return AnthropicModel(api_key=KEY, base_url=api.url, model_for=model_for, **options)


def extraction(role: str = "extractor", max_tokens: int = 2048) -> ModelRequest[ExtractorOutput]:
    return ModelRequest(
        role=role, system=SYSTEM, prompt=PROMPT, output_type=ExtractorOutput, max_tokens=max_tokens
    )


# --- answers ----------------------------------------------------------------------------------


async def test_the_submitted_tool_input_comes_back_as_the_role_output_model(api: FakeMessagesAPI) -> None:
    api.reply_tool_use(VALID, usage=message_usage(input_tokens=1000, output_tokens=200))

    async with connect(api) as backend:
        generation = await backend.generate(extraction())

    assert generation.output == ExtractorOutput.model_validate(VALID)
    assert generation.usage == Usage(
        model="claude-haiku-4-5",
        tokens_in=1000,
        tokens_out=200,
        cost_usd=pytest.approx(0.002),  # type: ignore[arg-type]
        calls=1,
    )


async def test_the_request_forces_the_submit_tool_with_the_output_schema_and_caches_the_system_prompt(
    api: FakeMessagesAPI,
) -> None:
    api.reply_tool_use(VALID)

    async with connect(api) as backend:
        await backend.generate(extraction())

    [request] = api.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["authorization"] == f"Bearer {KEY}"  # how SDK 2.x sends an API key
    assert "anthropic-version" in request.headers
    body = request.json
    assert body["model"] == "claude-haiku-4-5"
    assert body["max_tokens"] == 2048
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": PROMPT}]
    [tool] = body["tools"]
    assert tool["name"] == "submit"
    assert tool["input_schema"] == ExtractorOutput.model_json_schema()
    assert "extractor returns" in tool["description"]
    assert body["tool_choice"] == {"type": "tool", "name": "submit", "disable_parallel_tool_use": True}


async def test_each_role_is_served_by_its_own_model(api: FakeMessagesAPI) -> None:
    api.reply_tool_use(VALID)
    api.reply_tool_use(VALID)

    async with connect(api) as backend:
        await backend.generate(extraction(role="extractor"))
        generation = await backend.generate(extraction(role="planner"))

    assert [body["model"] for body in api.bodies] == ["claude-haiku-4-5", "claude-sonnet-4-6"]
    assert generation.usage.model == "claude-sonnet-4-6"


async def test_a_request_above_the_output_ceiling_is_clipped(api: FakeMessagesAPI) -> None:
    api.reply_tool_use(VALID)

    async with connect(api, max_output_tokens=1000) as backend:
        await backend.generate(extraction(max_tokens=4096))

    assert api.bodies[0]["max_tokens"] == 1000


# --- repair -----------------------------------------------------------------------------------


async def test_an_invalid_tool_input_is_asked_again_with_the_validation_errors_as_a_tool_result(
    api: FakeMessagesAPI,
) -> None:
    api.reply_tool_use(INVALID)
    api.reply_tool_use(VALID)

    async with connect(api) as backend:
        with pytest.raises(InvalidAnswer) as caught:
            await backend.generate(extraction())
        generation = await backend.generate(extraction().repaired(caught.value))

    assert caught.value.raw == INVALID
    assert generation.output == ExtractorOutput.model_validate(VALID)
    first, second = api.bodies
    assert second["messages"][:2] == [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_fake_1_0", "name": "submit", "input": INVALID}],
        },
    ]
    [result] = second["messages"][2]["content"]
    assert second["messages"][2]["role"] == "user"
    assert (result["type"], result["tool_use_id"], result["is_error"]) == (
        "tool_result",
        "toolu_fake_1_0",
        True,
    )
    assert "facts.0.statement" in result["content"]
    assert "confidence.level" in result["content"]
    # The cached prefix (tools, system) is the same on every attempt.
    assert (second["tools"], second["system"]) == (first["tools"], first["system"])


async def test_an_answer_without_the_submit_tool_is_asked_again_to_call_it(api: FakeMessagesAPI) -> None:
    api.reply_text("The source says 500 Wh/kg.")
    api.reply_tool_use(VALID)
    api.reply_tool_use(VALID)

    async with connect(api) as backend:
        with pytest.raises(InvalidAnswer) as caught:
            await backend.generate(extraction())
        repaired = extraction().repaired(caught.value)
        await backend.generate(repaired)
        await backend.generate(repaired.repaired(caught.value))

    assert caught.value.usage.calls == 1  # the prose answer was paid for
    assert api.bodies[1]["messages"][1:] == [
        {"role": "assistant", "content": "The source says 500 Wh/kg."},
        {
            "role": "user",
            "content": "You answered without calling the `submit` tool. Answer only by calling `submit` "
            "with input that matches its schema.",
        },
    ]
    assert caught.value.raw is None
    assert len(api.bodies[2]["messages"]) == 5  # prompt + two (answer, errors) pairs


# --- stop reasons -----------------------------------------------------------------------------


async def test_an_answer_cut_at_max_tokens_is_a_model_error_naming_the_limit(api: FakeMessagesAPI) -> None:
    api.reply_tool_use({"facts": [{"statement": "Solid-state cel"}]}, stop_reason="max_tokens")

    async with connect(api) as backend:
        with pytest.raises(ModelError) as caught:
            await backend.generate(extraction(max_tokens=2048))

    message = str(caught.value)
    assert "cut off at the 2048-token output limit" in message
    assert "Raise max_tokens" in message
    assert len(api.requests) == 1  # not repaired: asking again would be cut again


async def test_a_refusal_is_a_model_error_quoting_the_model(api: FakeMessagesAPI) -> None:
    api.reply_text(
        "I can't help with that.",
        stop_reason="refusal",
        stop_details={"type": "refusal", "category": "bio", "explanation": None},
    )

    async with connect(api) as backend:
        with pytest.raises(ModelError) as caught:
            await backend.generate(extraction())

    message = str(caught.value)
    assert "refused" in message
    assert "I can't help with that." in message
    assert "category: bio" in message
    assert len(api.requests) == 1


# --- HTTP failures ----------------------------------------------------------------------------

FAST_RETRY = {"retry-after-ms": "1"}


async def test_an_overloaded_api_is_retried_and_then_answers(api: FakeMessagesAPI) -> None:
    api.reply_error(529, "overloaded_error", "Overloaded", headers=FAST_RETRY)
    api.reply_tool_use(VALID)

    async with connect(api) as backend:
        generation = await backend.generate(extraction())

    assert generation.output == ExtractorOutput.model_validate(VALID)
    assert len(api.requests) == 2
    assert generation.usage.calls == 1  # the retried 529 is not a second model answer


@pytest.mark.parametrize(
    ("status", "error_type", "api_message", "requests_made", "says"),
    [
        (401, "authentication_error", "invalid x-api-key", 1, ["rejected the API key", "ANTHROPIC_API_KEY"]),
        (
            403,
            "permission_error",
            "no access to this model",
            1,
            ["not allowed", "RESEARCH_MCP_ANTHROPIC_MODEL"],
        ),
        (404, "not_found_error", "model: claude-haiku-4-5", 1, ["did not find", "RESEARCH_MCP_ROLE_MODELS"]),
        (400, "invalid_request_error", "prompt is too long", 1, ["prompt is too long", "fewer or shorter"]),
        (429, "rate_limit_error", "Rate limited", 3, ["rate limit", "RESEARCH_MCP_CONCURRENCY"]),
        (529, "overloaded_error", "Overloaded", 3, ["overloaded", "Try again"]),
        (500, "api_error", "Internal error", 3, ["Internal error", "Try again shortly"]),
    ],
    ids=[
        "bad-key",
        "forbidden",
        "unknown-model",
        "bad-request",
        "rate-limited",
        "overloaded",
        "server-error",
    ],
)
async def test_api_errors_become_model_errors_that_say_what_to_do(
    api: FakeMessagesAPI, status: int, error_type: str, api_message: str, requests_made: int, says: list[str]
) -> None:
    for _ in range(3):
        api.reply_error(status, error_type, api_message, headers=FAST_RETRY)

    # A tool call's policy cut to two retries: the message is under test here, the budget in test_retry.py.
    async with connect(api, retry=replace(INTERACTIVE, max_retries=2)) as backend:
        with pytest.raises(ModelError) as caught:
            await backend.generate(extraction())

    message = str(caught.value)
    for words in says:
        assert words in message
    assert f"{status}: {api_message}; request id req_fake" in message
    assert len(api.requests) == requests_made


async def test_an_api_that_never_answers_is_a_model_error_about_the_timeout(api: FakeMessagesAPI) -> None:
    api.stall()

    async with connect(api, timeout=0.2, retry=NO_RETRY) as backend:
        with pytest.raises(ModelError, match=r"did not answer within 0\.2 s"):
            await backend.generate(extraction())


async def test_an_unreachable_base_url_is_a_model_error_naming_anthropic_base_url() -> None:
    with socket.socket() as probe:  # a loopback port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    backend = AnthropicModel(
        api_key=KEY, base_url=f"http://127.0.0.1:{port}", model_for=model_for, retry=NO_RETRY
    )
    async with backend:
        with pytest.raises(ModelError) as caught:
            await backend.generate(extraction())

    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "ANTHROPIC_BASE_URL" in str(caught.value)


# --- configuration ----------------------------------------------------------------------------


def test_without_an_api_key_the_backend_says_how_to_configure_one() -> None:
    with pytest.raises(NotConfigured) as caught:
        AnthropicModel.from_settings(Settings())

    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert "RESEARCH_MCP_MODEL=extractive" in str(caught.value)


async def test_from_settings_uses_the_configured_key_base_url_and_role_models(
    api: FakeMessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("RESEARCH_MCP_ANTHROPIC_MODEL", "claude-opus-4-6")
    monkeypatch.setenv("RESEARCH_MCP_ROLE_MODELS", "extractor=claude-haiku-4-5")
    api.reply_tool_use(VALID)
    api.reply_tool_use(VALID)

    async with AnthropicModel.from_settings(Settings()) as backend:
        assert api.requests == []  # building the backend sends nothing
        await backend.generate(extraction(role="extractor"))
        await backend.generate(extraction(role="synthesizer"))

    assert [body["model"] for body in api.bodies] == ["claude-haiku-4-5", "claude-opus-4-6"]
    assert {request.headers["authorization"] for request in api.requests} == {f"Bearer {KEY}"}


# --- pricing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "dollars"),
    [
        ("claude-haiku-4-5", 1 + 5),
        ("claude-sonnet-4-6", 3 + 15),
        ("claude-sonnet-4-5-20250929", 3 + 15),
        ("claude-opus-4-6", 5 + 25),
        ("claude-opus-4-1", 15 + 75),
        ("claude-opus-4-20250514", 15 + 75),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", 1 + 5),
    ],
)
def test_a_million_tokens_in_and_out_cost_the_list_price(model: str, dollars: float) -> None:
    assert cost_usd(model, 1_000_000, 1_000_000) == pytest.approx(dollars)
    assert pricing_note(model) is None


def test_cache_reads_cost_a_tenth_of_input_and_cache_writes_a_quarter_more() -> None:
    assert cost_usd("claude-sonnet-4-6", 0, 0, cache_read=1_000_000) == pytest.approx(0.30)
    assert cost_usd("claude-sonnet-4-6", 0, 0, cache_write=1_000_000) == pytest.approx(3.75)


async def test_an_unknown_model_is_priced_as_sonnet_with_a_warning_logged_once(
    api: FakeMessagesAPI, caplog: pytest.LogCaptureFixture
) -> None:
    api.reply_tool_use(VALID, usage=message_usage(1_000_000, 0))
    api.reply_tool_use(VALID, usage=message_usage(1_000_000, 0))

    backend = AnthropicModel(api_key=KEY, base_url=api.url, model_for=lambda role: "claude-future-9")
    async with backend:
        generation = await backend.generate(extraction())
        await backend.generate(extraction())

    assert generation.usage.cost_usd == pytest.approx(3.0)
    note = pricing_note("claude-future-9")
    assert note is not None and "'claude-future-9'" in note and "Sonnet" in note
    assert [record.getMessage() for record in caplog.records if record.levelname == "WARNING"] == [note]

from __future__ import annotations

import email.utils
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from research_mcp.core.config import Settings
from research_mcp.core.errors import InvalidInput, NotConfigured, SourceError
from research_mcp.core.retry import RetryPolicy
from research_mcp.sources.search import SearchHit, WebSearch

from .fake_tavily import FakeTavily

# Marked here as well as by conftest: anyio's plugin re-creates async tests that are marked only
# after collection, and the re-created items lose their @pytest.mark.parametrize cases.
pytestmark = pytest.mark.anyio

KEY = "tvly-test-key"


@pytest.fixture
def tavily() -> Iterator[FakeTavily]:
    with FakeTavily() as fake:
        yield fake


def result(url: str, score: float, **extra: Any) -> dict[str, Any]:
    return {"url": url, "title": f"Title of {url}", "content": f"Snippet of {url}", "score": score, **extra}


async def test_search_returns_tavilys_results_as_hits_best_score_first(tavily: FakeTavily) -> None:
    tavily.reply(
        200,
        {
            "query": "solid-state batteries",
            "results": [
                result("https://a.example/low", 0.41),
                result("https://b.example/high", 0.93, published_date="2025-03-01"),
            ],
        },
    )

    async with WebSearch(KEY, tavily.url) as web:
        hits = await web.search("solid-state batteries")

    assert hits == [
        SearchHit(
            url="https://b.example/high",
            title="Title of https://b.example/high",
            snippet="Snippet of https://b.example/high",
            score=0.93,
            published_date="2025-03-01",
        ),
        SearchHit(
            url="https://a.example/low",
            title="Title of https://a.example/low",
            snippet="Snippet of https://a.example/low",
            score=0.41,
        ),
    ]


async def test_search_sends_the_query_and_max_results_with_the_key_as_a_bearer_token(
    tavily: FakeTavily,
) -> None:
    tavily.reply(200, {"results": []})

    async with WebSearch(KEY, tavily.url) as web:
        assert await web.search("  perovskite stability  ", max_results=3) == []

    [request] = tavily.requests
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {"query": "perovskite stability", "max_results": 3}


async def test_search_asks_for_raw_content_only_when_requested_and_returns_it(tavily: FakeTavily) -> None:
    tavily.reply(200, {"results": [result("https://a.example", 0.5, raw_content="The whole page.")]})

    async with WebSearch(KEY, tavily.url) as web:
        [hit] = await web.search("q", include_raw_content=True)

    assert hit.raw_content == "The whole page."
    assert tavily.requests[0].json["include_raw_content"] == "text"


async def test_search_keeps_one_hit_per_url_the_best_scored(tavily: FakeTavily) -> None:
    tavily.reply(
        200,
        {
            "results": [
                result("https://a.example", 0.2),
                result("https://b.example", 0.5),
                result("https://a.example", 0.8),
            ]
        },
    )

    async with WebSearch(KEY, tavily.url) as web:
        hits = await web.search("q")

    assert [(hit.url, hit.score) for hit in hits] == [("https://a.example", 0.8), ("https://b.example", 0.5)]


async def test_a_rejected_key_says_to_check_tavily_api_key_without_revealing_it(tavily: FakeTavily) -> None:
    tavily.reply(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})

    async with WebSearch(KEY, tavily.url) as web:
        with pytest.raises(SourceError, match="Tavily rejected the API key: check TAVILY_API_KEY") as caught:
            await web.search("q")

    assert KEY not in str(caught.value)
    assert len(tavily.requests) == 1


async def test_a_rate_limit_with_retry_after_zero_is_retried_once_and_then_succeeds(
    tavily: FakeTavily,
) -> None:
    tavily.reply(429, {"detail": {"error": "Too many requests"}}, headers={"Retry-After": "0"})
    tavily.reply(200, {"results": [result("https://a.example", 0.7)]})

    async with WebSearch(KEY, tavily.url) as web:
        hits = await web.search("q")

    assert [hit.url for hit in hits] == ["https://a.example"]
    assert len(tavily.requests) == 2


async def test_a_persistent_rate_limit_fails_clearly_after_max_retries(tavily: FakeTavily) -> None:
    for _ in range(3):
        tavily.reply(429, {"detail": {"error": "Too many requests"}}, headers={"Retry-After": "0"})
    tavily.reply(200, {"results": []})  # must not be reached: the bound is 1 try + 2 retries

    async with WebSearch(KEY, tavily.url, retry=RetryPolicy("test", max_retries=2, max_wait=10)) as web:
        with pytest.raises(SourceError, match=r"rate-limiting this key \(HTTP 429\).*after 2 retries"):
            await web.search("q")

    assert len(tavily.requests) == 3


@pytest.mark.parametrize("status", [502, 503, 504])
async def test_a_passing_gateway_failure_is_retried_and_then_succeeds(
    tavily: FakeTavily, status: int
) -> None:
    tavily.reply(status, {"detail": {"error": "upstream unavailable"}}, headers={"Retry-After": "0"})
    tavily.reply(200, {"results": [result("https://a.example", 0.7)]})

    async with WebSearch(KEY, tavily.url) as web:
        hits = await web.search("q")

    assert [hit.url for hit in hits] == ["https://a.example"]
    assert len(tavily.requests) == 2


async def test_a_lasting_gateway_failure_is_tavilys_side_after_max_retries(tavily: FakeTavily) -> None:
    for _ in range(3):
        tavily.reply(503, {"detail": {"error": "unavailable"}}, headers={"Retry-After": "0"})
    tavily.reply(200, {"results": []})  # must not be reached: the bound is 1 try + 2 retries

    async with WebSearch(KEY, tavily.url, retry=RetryPolicy("test", max_retries=2, max_wait=10)) as web:
        with pytest.raises(SourceError, match=r"Tavily failed on its side \(HTTP 503\)"):
            await web.search("q")

    assert len(tavily.requests) == 3


def in_two_minutes() -> str:
    return email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)


@pytest.mark.parametrize("spelling", ["seconds", "http-date"])
async def test_a_retry_after_longer_than_max_retry_wait_fails_at_once_without_retrying(
    tavily: FakeTavily, spelling: str
) -> None:
    # The date is made when the test runs, not when it is collected: a long suite must not age it.
    retry_after = "120" if spelling == "seconds" else in_two_minutes()
    tavily.reply(429, headers={"Retry-After": retry_after})

    async with WebSearch(KEY, tavily.url, retry=RetryPolicy("test", max_retries=2, max_wait=10)) as web:
        with pytest.raises(
            SourceError,
            match=r"asked to wait 1[12]\d s, more than this call has left of its 10 s for retries",
        ):
            await web.search("q")

    assert len(tavily.requests) == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (432, r"plan limit is reached \(HTTP 432\).*Tavily said: .This request exceeds your plan"),
        (433, r"pay-as-you-go limit is reached \(HTTP 433\)"),
        (403, r"Tavily refused access \(HTTP 403\)"),
        (500, r"Tavily failed on its side \(HTTP 500\)"),
    ],
    ids=["plan-limit", "pay-as-you-go-limit", "forbidden", "server-error"],
)
async def test_limits_refusals_and_server_errors_each_get_their_own_message_and_no_retry(
    tavily: FakeTavily, status: int, message: str
) -> None:
    tavily.reply(status, {"detail": {"error": "This request exceeds your plan's set usage limit."}})

    async with WebSearch(KEY, tavily.url) as web:
        with pytest.raises(SourceError, match=message):
            await web.search("q")

    assert len(tavily.requests) == 1


async def test_a_stalled_server_times_out_with_a_clear_message(tavily: FakeTavily) -> None:
    tavily.stall()

    with anyio.fail_after(60):
        async with WebSearch(KEY, tavily.url, timeout=0.5) as web:
            with pytest.raises(SourceError, match=r"Tavily did not answer within 0.5 s"):
                await web.search("q")


async def test_an_unreachable_endpoint_is_reported_with_its_address() -> None:
    with socket.socket() as probe:  # a loopback port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"

    async with WebSearch(KEY, endpoint) as web:
        with pytest.raises(SourceError, match=rf"Could not reach Tavily at {endpoint} \(ConnectError"):
            await web.search("q")


async def test_without_a_key_search_and_extract_raise_not_configured_and_send_nothing(
    tavily: FakeTavily,
) -> None:
    async with WebSearch(None, tavily.url) as web:
        assert not web.configured
        with pytest.raises(NotConfigured, match=r"set TAVILY_API_KEY.*local corpus and given URLs"):
            await web.search("q")
        with pytest.raises(NotConfigured):
            await web.extract(["https://a.example"])

    assert tavily.requests == []


async def test_from_settings_uses_tavily_api_key_and_tavily_api_base_url(
    tavily: FakeTavily, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    monkeypatch.setenv("TAVILY_API_BASE_URL", tavily.url)
    tavily.reply(200, {"results": []})

    async with WebSearch.from_settings(Settings()) as web:
        assert web.configured
        await web.search("q")

    assert tavily.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_extract_returns_the_text_of_each_url_tavily_could_read(tavily: FakeTavily) -> None:
    tavily.reply(
        200,
        {
            "results": [{"url": "https://a.example", "raw_content": "Page A text."}],
            "failed_results": [{"url": "https://b.example", "error": "timeout"}],
        },
    )

    async with WebSearch(KEY, tavily.url) as web:
        texts = await web.extract(["https://a.example", "https://b.example", "https://a.example"])

    assert texts == {"https://a.example": "Page A text."}
    [request] = tavily.requests
    assert request.path == "/extract"
    # tavily-python sends the time Tavily may take on its side: ours.
    assert request.json == {
        "urls": ["https://a.example", "https://b.example"],
        "format": "text",
        "timeout": 20.0,
    }


async def test_crawl_returns_each_page_read_with_its_text_in_tavilys_order(tavily: FakeTavily) -> None:
    tavily.reply(
        200,
        {
            "base_url": "https://docs.example",
            "results": [
                {"url": "https://docs.example/b", "raw_content": "Page B."},
                {"url": "https://docs.example/empty", "raw_content": "  "},
                {"url": "https://docs.example/a", "raw_content": "Page A."},
            ],
        },
    )

    async with WebSearch(KEY, tavily.url) as web:
        texts = await web.crawl("https://docs.example", instructions="setup guides", limit=5)

    assert list(texts.items()) == [
        ("https://docs.example/b", "Page B."),
        ("https://docs.example/a", "Page A."),
    ]
    [request] = tavily.requests
    assert request.path == "/crawl"
    # One level of links, plain text; Tavily takes a crawl's own timeout between 10 and 150 s.
    assert request.json == {
        "url": "https://docs.example",
        "max_depth": 1,
        "limit": 5,
        "instructions": "setup guides",
        "extract_depth": "basic",
        "format": "text",
        "timeout": 20.0,
    }


async def test_a_crawl_or_map_of_something_not_a_web_address_is_refused_before_any_request(
    tavily: FakeTavily,
) -> None:
    async with WebSearch(KEY, tavily.url) as web:
        with pytest.raises(InvalidInput, match="http"):
            await web.crawl("docs.example")
        with pytest.raises(InvalidInput, match="between 1 and 50"):
            await web.map("https://docs.example", limit=51)

    assert tavily.requests == []


@pytest.mark.parametrize("max_results", [0, 21])
async def test_max_results_outside_tavilys_range_is_refused_before_any_request(
    tavily: FakeTavily, max_results: int
) -> None:
    async with WebSearch(KEY, tavily.url) as web:
        with pytest.raises(InvalidInput, match="between 1 and 20"):
            await web.search("q", max_results=max_results)

    assert tavily.requests == []

"""Web search through Tavily: `WebSearch.search` gives ranked hits, `WebSearch.extract` page text,
`WebSearch.crawl` a site's pages with their text and `WebSearch.map` their addresses (a scout's
site-level discovery).

Without a key the capability is off (`configured` is False) and every call raises `NotConfigured`
before any request is made; research then goes on with the local corpus and the URLs it was given.

The requests go through tavily-python's ``AsyncTavilyClient``, given our own ``httpx.AsyncClient``
(its ``client=``), which closes the client's gaps around it rather than replacing it:

- its transport is ``retry.RetryingTransport``: rate limits and passing gateway failures are retried
  there, honouring ``Retry-After``, before tavily-python sees an answer;
- a response event hook carries every answer that is not HTTP 200 out of tavily-python whole
  (``_Refused``): tavily-python would keep only its error text, folding 403, 432 and 433 into one
  ``ForbiddenError`` and dropping ``Retry-After``, so the user could not be told which limit to
  raise. Its timeout is ours (``timeout``), and a connection failure is reported as one.

tavily-python is imported when the first search is made (it imports requests and tiktoken).

Failures, all `SourceError` with what to do next:

    401                 the key was rejected: check TAVILY_API_KEY
    403                 the key may not use this endpoint
    432 / 433           the plan's credits / the pay-as-you-go limit are used up
    429                 retried by `retry.RetryingTransport`, honouring Retry-After (seconds or
                        an HTTP date; without it, a doubling backoff), within the retry policy
                        of the context (a tool call: retries within 30 s; a background run:
                        within 10 minutes); a wait longer than what is left fails at once
    502 / 503 / 504     Tavily's gateway or capacity, usually passing: retried like 429, within
                        the same bounds, then reported as Tavily's side
    other statuses      reported with their code (500 as Tavily's side, not retried: an internal
                        error on a query tends to repeat)
    timeout             no answer within `timeout` seconds (per connect, read or write)
    connection          Tavily's address could not be reached
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self, cast

import httpx

from research_mcp.core.errors import InvalidInput, NotConfigured, SourceError
from research_mcp.core.redaction import Redactor
from research_mcp.core.retry import RetryingTransport, RetryPolicy, retry_outcome

if TYPE_CHECKING:
    from tavily import AsyncTavilyClient

    from research_mcp.core.config import Settings

__all__ = ["DEFAULT_BASE_URL", "SearchHit", "WebSearch"]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.tavily.com"
MAX_RESULTS = 20  # the most results Tavily returns for one search
EXTRACT_BATCH = 20  # the most URLs Tavily extracts in one request
MAP_LIMIT = 10  # the pages of a site a scout lists by default
MAX_MAP = 50  # the most pages a site map or crawl is asked for
CRAWL_TIMEOUT = (10.0, 150.0)  # the bounds Tavily puts on a crawl's own timeout, in seconds
TRANSIENT = frozenset({502, 503, 504})  # a gateway or capacity failure: worth one more try

NOT_CONFIGURED = (
    "Web search is not configured: set TAVILY_API_KEY (and TAVILY_API_BASE_URL to use another "
    "endpoint) to enable it; research continues with the local corpus and given URLs."
)
ADVICE_RATE = "wait a minute before searching again, or lower RESEARCH_MCP_CONCURRENCY"


@dataclass(frozen=True)
class SearchHit:
    """One search result; `snippet` is Tavily's extract of the page most relevant to the query."""

    url: str
    title: str
    snippet: str
    score: float
    published_date: str | None = None
    raw_content: str | None = None


class WebSearch:
    """Tavily search, extract, crawl and map behind one long-lived HTTP client; use `async with` or
    `aclose()`."""

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 20.0,
        redact: Redactor | None = None,
    ) -> None:
        """`retry` fixes the retry policy; None takes the calling context's (`retry.patience`)."""
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self._api_key = api_key.strip() if api_key else None
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._retry = retry
        self._timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._tavily: AsyncTavilyClient | None = None
        # Tavily's answers and errors may echo a key: everything it sends back is redacted first.
        self._redact = redact if redact is not None else Redactor([self._api_key])

    @classmethod
    def from_settings(cls, settings: Settings) -> WebSearch:
        key = settings.tavily_api_key.get_secret_value() if settings.tavily_api_key else None
        return cls(
            key,
            settings.tavily_api_base_url,
            timeout=settings.source_timeout,
            redact=Redactor.from_settings(settings),
        )

    @property
    def configured(self) -> bool:
        return bool(self._api_key)

    async def search(
        self, query: str, *, max_results: int = 5, include_raw_content: bool = False
    ) -> list[SearchHit]:
        """Hits for `query`, best score first, one per URL, at most `max_results` (1 to 20)."""
        self._require_key()
        if not query.strip():
            raise InvalidInput("A web search needs a non-empty query.")
        if not 1 <= max_results <= MAX_RESULTS:
            raise InvalidInput(f"max_results must be between 1 and {MAX_RESULTS}, not {max_results!r}.")
        raw: Any = "text" if include_raw_content else None
        client = self._client_for_tavily()
        answer = self._redact.value(
            await self._call(
                client.search(
                    query.strip(), max_results=max_results, include_raw_content=raw, timeout=self._timeout
                )
            )
        )
        return _ranked_hits(_listed(answer, "results"))[:max_results]

    async def extract(self, urls: list[str]) -> dict[str, str]:
        """The text of each URL that Tavily could read; URLs it could not read are left out."""
        self._require_key()
        unique = list(dict.fromkeys(url.strip() for url in urls if url.strip()))
        texts: dict[str, str] = {}
        for start in range(0, len(unique), EXTRACT_BATCH):
            batch = unique[start : start + EXTRACT_BATCH]
            extracted = self._client_for_tavily().extract(batch, format="text", timeout=self._timeout)
            answer = self._redact.value(await self._call(extracted))
            for item in _listed(answer, "results"):
                url, text = item.get("url"), item.get("raw_content")
                if isinstance(url, str) and isinstance(text, str) and text.strip():
                    texts[url] = text
            for item in _listed(answer, "failed_results"):
                logger.info("Tavily could not extract %r: %s", item.get("url"), item.get("error"))
        return texts

    async def map(self, url: str, *, instructions: str = "", limit: int = MAP_LIMIT) -> list[str]:
        """The addresses of a site's pages, as Tavily's map finds them from `url`, the pages most
        relevant to `instructions` first when given; at most `limit` (1 to 50)."""
        self._require_key()
        if not url.strip().lower().startswith(("http://", "https://")):
            raise InvalidInput(f"a site map needs an http(s) address, not {url!r}.")
        if not 1 <= limit <= MAX_MAP:
            raise InvalidInput(f"limit must be between 1 and {MAX_MAP}, not {limit!r}.")
        request = self._client_for_tavily().map(
            url.strip(),
            max_depth=1,
            limit=limit,
            instructions=instructions.strip() or None,
            timeout=self._timeout,
        )
        answer = self._redact.value(await self._call(request))
        pages = answer.get("results") or []
        if not isinstance(pages, list):
            raise SourceError("Tavily's map answer has 'results' that is not a list; try again later.")
        found = [page.strip() for page in pages if isinstance(page, str) and page.strip()]
        return list(dict.fromkeys(found))[:limit]

    async def crawl(self, url: str, *, instructions: str = "", limit: int = MAP_LIMIT) -> dict[str, str]:
        """A site's pages and their text, as Tavily's crawl reads them from `url` (one level of
        links), those relevant to `instructions` when given, in Tavily's order; at most `limit` (1 to
        50). Pages it could not read are left out."""
        self._require_key()
        if not url.strip().lower().startswith(("http://", "https://")):
            raise InvalidInput(f"a site crawl needs an http(s) address, not {url!r}.")
        if not 1 <= limit <= MAX_MAP:
            raise InvalidInput(f"limit must be between 1 and {MAX_MAP}, not {limit!r}.")
        low, high = CRAWL_TIMEOUT
        request = self._client_for_tavily().crawl(
            url.strip(),
            max_depth=1,
            limit=limit,
            instructions=instructions.strip() or None,
            extract_depth="basic",
            format="text",
            timeout=min(max(self._timeout, low), high),
        )
        answer = self._redact.value(await self._call(request))
        texts: dict[str, str] = {}
        for item in _listed(answer, "results"):
            page, text = item.get("url"), item.get("raw_content")
            if isinstance(page, str) and page.strip() and isinstance(text, str) and text.strip():
                texts.setdefault(page.strip(), text)
        return dict(list(texts.items())[:limit])

    async def aclose(self) -> None:
        self._tavily = None
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _require_key(self) -> None:
        if not self._api_key:
            raise NotConfigured(NOT_CONFIGURED)

    def _client_for_tavily(self) -> AsyncTavilyClient:
        """tavily-python's client over ours: retries in the transport, every failure carried out whole."""
        if self._tavily is None:
            from tavily import AsyncTavilyClient

            transport = RetryingTransport(
                httpx.AsyncHTTPTransport(), should_retry=_should_retry, policy=self._retry
            )
            self._client = httpx.AsyncClient(
                transport=cast(httpx.AsyncBaseTransport, transport),  # duck-typed: see RetryingTransport
                base_url=self._base_url,
                headers={"Authorization": f"Bearer {self._api_key}", "X-Client-Source": "research-mcp"},
                timeout=self._timeout,
                event_hooks={"response": [_refuse_failures]},
            )
            self._tavily = AsyncTavilyClient(
                api_key=self._api_key, api_base_url=self._base_url, client=self._client
            )
        return self._tavily

    async def _call(self, request: Awaitable[Any]) -> dict[str, Any]:
        """tavily-python's answer to one request, or a SourceError saying what to do, redacted
        (Tavily's own words are in it)."""
        from tavily.errors import TimeoutError as TavilyTimeout

        try:
            answer = await request
        except _Refused as refused:
            raise SourceError(self._redact(_refusal(refused.response))) from None
        except (TavilyTimeout, httpx.TimeoutException) as exc:
            raise SourceError(
                f"Tavily did not answer within {self._timeout:g} s ({type(exc).__name__}); try again "
                f"later, or check TAVILY_API_BASE_URL if you set it."
            ) from exc
        except httpx.TransportError as exc:
            raise SourceError(
                self._redact(
                    f"Could not reach Tavily at {self._base_url} ({type(exc).__name__}: {exc}); check the "
                    f"network connection, or TAVILY_API_BASE_URL if you set it."
                )
            ) from exc
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError, from response.json()
            raise SourceError(
                "Tavily answered with something other than JSON; check TAVILY_API_BASE_URL if you set it."
            ) from exc
        if not isinstance(answer, dict):
            raise SourceError("Tavily answered with JSON of an unexpected shape; try again later.")
        return answer


class _Refused(Exception):
    """An answer other than HTTP 200, carried out of tavily-python with its status and headers."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


async def _refuse_failures(response: httpx.Response) -> None:
    """The client's response hook: an answer that is not HTTP 200 (after the transport's retries)
    leaves tavily-python as `_Refused`, before it maps it to an exception holding only its text."""
    if response.status_code != 200:
        await response.aread()
        raise _Refused(response)


def _refusal(response: httpx.Response) -> str:
    """What went wrong, for a failed answer: a rate limit with its retries, or the status's meaning."""
    said = _tavily_said(response)
    if response.status_code != 429:
        return _status_message(response.status_code) + said
    outcome = retry_outcome(response)
    if outcome is not None and outcome.asked is not None:
        return (
            f"Tavily is rate-limiting this key (HTTP 429) and asked to wait {outcome.asked:.0f} s, "
            f"more than this call has left of its {outcome.policy.max_wait:g} s for retries; {ADVICE_RATE}.{said}"
        )
    retries = outcome.retries if outcome is not None else 0
    return (
        f"Tavily is rate-limiting this key (HTTP 429) and still was after {retries} "
        f"retries; {ADVICE_RATE}.{said}"
    )


def _status_message(status: int) -> str:
    if status == 401:
        return "Tavily rejected the API key: check TAVILY_API_KEY."
    if status == 403:
        return (
            "Tavily refused access (HTTP 403): this key may not use this endpoint; check the key "
            "and its plan in the Tavily dashboard."
        )
    if status == 432:
        return (
            "Tavily's plan limit is reached (HTTP 432): this key's credits are used up; upgrade the "
            "plan or wait for the credits to renew. Until then research can use the local corpus "
            "and given URLs."
        )
    if status == 433:
        return (
            "Tavily's pay-as-you-go limit is reached (HTTP 433): raise the limit in the Tavily "
            "dashboard. Until then research can use the local corpus and given URLs."
        )
    if status == 400:
        return "Tavily refused the request as invalid (HTTP 400); rephrase the query."
    if status >= 500:
        return f"Tavily failed on its side (HTTP {status}); try again later."
    return f"Tavily answered HTTP {status}; check TAVILY_API_BASE_URL if you set it."


def _tavily_said(response: httpx.Response) -> str:
    """Tavily's own error text (its body is `{"detail": {"error": ...}}`), as a sentence to append."""
    try:
        body = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict):
        detail = body.get("detail", body.get("error"))
        body = detail.get("error") if isinstance(detail, dict) else detail
    text = " ".join(str(body).split())[:300] if body else ""
    return f" Tavily said: {text!r}." if text else ""


def _should_retry(response: httpx.Response) -> bool:
    """A rate limit or a passing gateway failure (500 is not retried: it tends to repeat)."""
    return response.status_code == 429 or response.status_code in TRANSIENT


def _listed(answer: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = answer.get(key) or []
    if not isinstance(items, list):
        raise SourceError(f"Tavily's answer has a {key!r} that is not a list; try again later.")
    return [item for item in items if isinstance(item, dict)]


def _ranked_hits(results: Iterable[dict[str, Any]]) -> list[SearchHit]:
    best: dict[str, SearchHit] = {}
    for item in results:
        url = item.get("url")
        if not isinstance(url, str) or not url.strip():
            continue
        hit = SearchHit(
            url=url.strip(),
            title=_text(item.get("title")) or url.strip(),
            snippet=_text(item.get("content")) or "",
            score=_score(item.get("score")),
            published_date=_text(item.get("published_date")),
            raw_content=_text(item.get("raw_content")),
        )
        if hit.url not in best or hit.score > best[hit.url].score:
            best[hit.url] = hit
    return sorted(best.values(), key=lambda hit: hit.score, reverse=True)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _score(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)

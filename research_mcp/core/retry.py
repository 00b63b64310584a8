"""Riding out overloaded upstreams: a retry policy per context, applied by one httpx transport.

A tool call must answer within the host's minute, so it retries within a time budget well inside
it and then says "try again"; a background run has no one waiting on it, so it rides out an
overload of minutes. The context picks the policy (`patience`): the run engine wraps each run in
`patience(BACKGROUND)`, everything else gets `INTERACTIVE`.

    policy        time budget   retries at most   backoff without retry-after
    INTERACTIVE   30 s          10                0.5 s, 1 s, 2 s ... 8 s (x0.75-1 jitter)
    BACKGROUND    600 s         16                2 s, 4 s ... 120 s (x0.75-1 jitter)

The budget is wall time from the first attempt: no retry starts when the time gone (attempts and
waits) plus the next wait would pass it, so a burst of quick refusals (529, 429, 500 with
`Retry-After: 0`) is ridden out and a lasting overload ends within the budget.

`RetryingTransport` wraps an httpx (or httpx2) transport: it sends, and while `should_retry` says
the answer is passing (429, 529, a gateway error) or the connection failed with one of
`retry_errors`, it waits and sends again. A `retry-after-ms` or `Retry-After` header (seconds or
an HTTP date) is honoured; when it asks for more than the budget has left, the transport gives up
at once instead of waiting in vain. The last answer carries a `RetryOutcome` in
`response.extensions["research_mcp.retry"]` so the caller can say what happened, and every retry is
logged and appended to the list `recording_retries()` opened, if any (`perform` stores them as
model calls with status `retried`). A policy's `clock` and `sleep` are the time it reads and waits
on (tests give a virtual clock, so minutes of backoff take no time).
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

__all__ = [
    "BACKGROUND",
    "INTERACTIVE",
    "NO_RETRY",
    "OUTCOME",
    "RetryAttempt",
    "RetryOutcome",
    "RetryPolicy",
    "RetryingTransport",
    "current_policy",
    "patience",
    "recording_retries",
    "retry_after_seconds",
    "retry_outcome",
]

logger = logging.getLogger(__name__)

OUTCOME = "research_mcp.retry"  # the response extension holding the RetryOutcome


@dataclass(frozen=True)
class RetryPolicy:
    """How long one request may keep retrying: no retry starts past `max_wait` seconds from the
    first attempt (attempts and waits counted), nor past `max_retries` retries; without a
    retry-after, waits of `first_backoff` doubling up to `max_backoff`, with jitter."""

    name: str
    max_retries: int
    max_wait: float
    first_backoff: float = 0.5
    max_backoff: float = 8.0
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, compare=False, repr=False)

    def backoff(self, retries: int) -> float:
        """The wait before retry number `retries + 1` when the upstream did not say, with jitter."""
        return min(self.first_backoff * 2**retries, self.max_backoff) * random.uniform(0.75, 1.0)


INTERACTIVE = RetryPolicy("interactive", max_retries=10, max_wait=30.0, first_backoff=0.5, max_backoff=8.0)
BACKGROUND = RetryPolicy("background", max_retries=16, max_wait=600.0, first_backoff=2.0, max_backoff=120.0)
NO_RETRY = RetryPolicy("none", max_retries=0, max_wait=0.0)

_policy: ContextVar[RetryPolicy] = ContextVar("research_mcp_retry_policy", default=INTERACTIVE)
_attempts: ContextVar[list[RetryAttempt] | None] = ContextVar("research_mcp_retry_attempts", default=None)


def current_policy() -> RetryPolicy:
    return _policy.get()


@contextmanager
def patience(policy: RetryPolicy) -> Iterator[RetryPolicy]:
    """Requests made inside (tasks started inside included) retry under `policy`."""
    token = _policy.set(policy)
    try:
        yield policy
    finally:
        _policy.reset(token)


@dataclass(frozen=True)
class RetryAttempt:
    """One answer (or failed connection) that was retried after `waited` seconds."""

    host: str
    status: int | None  # None: the connection failed (`error` says how)
    error: str | None
    waited: float
    asked: bool  # the wait was the upstream's retry-after, not our backoff
    policy: str

    def describe(self) -> str:
        what = f"HTTP {self.status}" if self.status is not None else (self.error or "connection failed")
        why = "as its retry-after asked" if self.asked else "backoff"
        return f"{what} from {self.host}; retried after {self.waited:.1f} s ({why}, {self.policy} policy)"


@contextmanager
def recording_retries() -> Iterator[list[RetryAttempt]]:
    """Collect every retry made inside (in this task) into the yielded list."""
    attempts: list[RetryAttempt] = []
    token = _attempts.set(attempts)
    try:
        yield attempts
    finally:
        _attempts.reset(token)


@dataclass(frozen=True)
class RetryOutcome:
    """How the request ended: after `retries` retries and `waited` seconds; `asked` is the wait an
    upstream asked for that the policy could not give (the transport then gave up at once)."""

    policy: RetryPolicy
    retries: int
    waited: float
    asked: float | None = None


def retry_outcome(response: Any) -> RetryOutcome | None:
    """The RetryOutcome a RetryingTransport attached to `response` (httpx or httpx2), if any."""
    outcome = getattr(response, "extensions", {}).get(OUTCOME)
    return outcome if isinstance(outcome, RetryOutcome) else None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` (delta-seconds or an HTTP date);
    None if absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            seconds = float(millis) / 1000
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    value = headers.get("retry-after")
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - time.time()
    return max(seconds, 0.0) if math.isfinite(seconds) else None


class _Response(Protocol):
    status_code: int
    headers: Any
    extensions: Any

    async def aclose(self) -> None: ...


class _Transport(Protocol):
    async def handle_async_request(self, request: Any) -> Any: ...

    async def aclose(self) -> None: ...


class RetryingTransport:
    """An httpx / httpx2 async transport that retries passing failures of `inner` under a policy.

    `should_retry(response)` names the answers worth another try; `retry_errors` the connection
    failures. `policy` fixes the policy; None takes the context's (`patience`) at each request.
    Duck-typed rather than derived from either library's base class, so one class serves the
    Anthropic SDK (httpx2) and Tavily (httpx) alike.
    """

    def __init__(
        self,
        inner: _Transport,
        *,
        should_retry: Callable[[Any], bool],
        retry_errors: tuple[type[BaseException], ...] = (),
        policy: RetryPolicy | None = None,
    ) -> None:
        self.inner = inner
        self.should_retry = should_retry
        self.retry_errors = retry_errors
        self.policy = policy

    async def __aenter__(self) -> RetryingTransport:
        await self.inner.__aenter__()  # type: ignore[attr-defined]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.inner.__aexit__(*exc_info)  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def handle_async_request(self, request: Any) -> Any:
        policy = self.policy or current_policy()
        host = str(request.url.host)
        retries, waited, started = 0, 0.0, policy.clock()
        while True:
            try:
                response: _Response = await self.inner.handle_async_request(request)
            except self.retry_errors as error:
                wait = policy.backoff(retries)
                if retries >= policy.max_retries or policy.clock() - started + wait > policy.max_wait:
                    raise
                what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
                await self._wait(policy, RetryAttempt(host, None, what, wait, False, policy.name))
            else:
                if not self.should_retry(response):
                    return self._finish(response, policy, retries, waited)
                asked = retry_after_seconds(response.headers)
                wait = asked if asked is not None else policy.backoff(retries)
                if retries >= policy.max_retries:
                    return self._finish(response, policy, retries, waited)
                if policy.clock() - started + wait > policy.max_wait:  # the upstream's wait, or ours
                    return self._finish(response, policy, retries, waited, asked=asked)
                await response.aclose()
                await self._wait(
                    policy,
                    RetryAttempt(host, response.status_code, None, wait, asked is not None, policy.name),
                )
            retries, waited = retries + 1, waited + wait

    @staticmethod
    async def _wait(policy: RetryPolicy, attempt: RetryAttempt) -> None:
        logger.warning("%s", attempt.describe())
        recorded = _attempts.get()
        if recorded is not None:
            recorded.append(attempt)
        await policy.sleep(attempt.waited)

    @staticmethod
    def _finish(
        response: _Response, policy: RetryPolicy, retries: int, waited: float, *, asked: float | None = None
    ) -> _Response:
        response.extensions[OUTCOME] = RetryOutcome(policy, retries, waited, asked)
        return response

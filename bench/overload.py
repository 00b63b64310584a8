"""Overload: what a tool call and a background run do when the Messages API answers 529.

The real SDK through the retrying transport against the loopback fake of the Messages API. For
each policy (a tool call's INTERACTIVE, a run's BACKGROUND) and each burst of consecutive 529s
(`retry-after: 0.05` s, then an answer), prints whether the call got its answer, how many requests
it made and the wall time; then the burst of the round-3 report (529, 429, 500 with
`Retry-After: 0`); then how long each policy rides out a 529 without a retry-after that never ends
(backoff only, timed on a virtual clock, so minutes of waiting take none), and what it does with
one that asks to wait longer than its budget.

Run alone: .venv/bin/python -m bench.overload
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import anyio
import anyio.lowlevel

from research_mcp.core.contracts import ExtractorOutput
from research_mcp.core.errors import ModelError
from research_mcp.core.retry import BACKGROUND, INTERACTIVE, RetryPolicy, patience
from research_mcp.llm.anthropic import AnthropicModel
from research_mcp.llm.base import ModelRequest
from tests.llm.fake_anthropic import FakeMessagesAPI

ANSWER = {"facts": [], "answers": [], "confidence": {"level": "low", "reasoning": "none"}}
REQUEST = ModelRequest(role="extractor", system="s", prompt="p", output_type=ExtractorOutput)


async def one_call(policy: RetryPolicy, overloads: int, headers: dict[str, str], answer: bool) -> str:
    with FakeMessagesAPI() as api:
        for _ in range(overloads):
            api.reply_error(529, "overloaded_error", "Overloaded", headers=headers)
        if answer:
            api.reply_tool_use(ANSWER)
        started = time.perf_counter()
        async with AnthropicModel(
            api_key="bench-key", base_url=api.url, model_for=lambda role: "claude-haiku-4-5"
        ) as model:
            with patience(policy):
                try:
                    await model.generate(REQUEST)
                    outcome = "answered"
                except ModelError as error:
                    outcome = "gave up: " + str(error)[:150]
        elapsed = time.perf_counter() - started
        return f"{outcome}; {len(api.requests)} requests, {elapsed:.2f} s"


class VirtualClock:
    """The policy's clock and sleep: waiting advances it, and takes no time."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await anyio.lowlevel.checkpoint()


async def lasting(policy: RetryPolicy) -> str:
    """A 529 without a retry-after that never ends, on a virtual clock."""
    virtual = VirtualClock()
    virtual_policy = replace(policy, clock=virtual.clock, sleep=virtual.sleep)
    outcome = await one_call(virtual_policy, 1 + policy.max_retries, {}, False)
    return f"{outcome.rsplit(',', 1)[0]}, {virtual.now:.1f} s of backoff (virtual clock)"


async def burst() -> str:
    """The round-3 report's burst: 529, 429, 500, each with Retry-After: 0, then an answer."""
    with FakeMessagesAPI() as api:
        now = {"retry-after": "0"}
        api.reply_error(529, "overloaded_error", "Overloaded", headers=now)
        api.reply_error(429, "rate_limit_error", "Slow down", headers=now)
        api.reply_error(500, "api_error", "injected", headers=now)
        api.reply_tool_use(ANSWER)
        async with AnthropicModel(
            api_key="bench-key", base_url=api.url, model_for=lambda role: "claude-haiku-4-5"
        ) as model:
            try:
                await model.generate(REQUEST)
                return f"answered; {len(api.requests)} requests"
            except ModelError as error:
                return "gave up: " + str(error)[:150]


async def main() -> None:
    logging.getLogger("research_mcp").setLevel(logging.ERROR)  # each retry is logged; the figures suffice
    quick = {"retry-after": "0.05"}
    for policy in (INTERACTIVE, BACKGROUND):
        print(f"{policy.name}: retries within {policy.max_wait:g} s, {policy.max_retries} at most")
        for overloads in (1, 2, 3, 5, 8, 10, 11):
            print(f"  {overloads} x 529 then an answer: {await one_call(policy, overloads, quick, True)}")
        print(f"  529 for ever, no retry-after: {await lasting(policy)}")
    print(f"interactive, 529 + 429 + 500 with Retry-After: 0: {await burst()}")
    print(
        f"interactive, 529 asking retry-after 60 s: {await one_call(INTERACTIVE, 1, {'retry-after': '60'}, False)}"
    )
    print(
        f"background, 529 asking retry-after 900 s: {await one_call(BACKGROUND, 1, {'retry-after': '900'}, False)}"
    )


if __name__ == "__main__":
    anyio.run(main)

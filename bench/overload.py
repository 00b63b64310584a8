"""Overload: what a tool call and a background run do when the Messages API answers 529.

The real SDK through the retrying transport against the loopback fake of the Messages API. For
each policy (a tool call's INTERACTIVE, a run's BACKGROUND) and each burst of consecutive 529s
(`retry-after: 0.05` s, then an answer), prints whether the call got its answer, how many requests
it made and the wall time; then how long each policy takes to give up on a 529 without a
retry-after that never ends (backoff only), and on one that asks to wait longer than it allows.

Run alone: .venv/bin/python -m bench.overload
"""

from __future__ import annotations

import logging
import time

import anyio

from research_mcp.contracts import ExtractorOutput
from research_mcp.errors import ModelError
from research_mcp.llm.anthropic import AnthropicModel
from research_mcp.llm.base import ModelRequest
from research_mcp.retry import BACKGROUND, INTERACTIVE, RetryPolicy, patience
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


async def main() -> None:
    logging.getLogger("research_mcp").setLevel(logging.ERROR)  # each retry is logged; the figures suffice
    quick = {"retry-after": "0.05"}
    for policy in (INTERACTIVE, BACKGROUND):
        print(f"{policy.name}: {policy.max_retries} retries, {policy.max_wait:g} s of waiting in all")
        for overloads in (1, 2, 3, 5, 8, 9):
            print(f"  {overloads} x 529 then an answer: {await one_call(policy, overloads, quick, True)}")
    print(f"interactive, 529 for ever, no retry-after: {await one_call(INTERACTIVE, 3, {}, False)}")
    print(
        f"interactive, 529 asking retry-after 60 s: {await one_call(INTERACTIVE, 1, {'retry-after': '60'}, False)}"
    )
    print(
        f"background, 529 asking retry-after 900 s: {await one_call(BACKGROUND, 1, {'retry-after': '900'}, False)}"
    )


if __name__ == "__main__":
    anyio.run(main)

"""A failing model service never hangs a role, and never leaves its handoff running or half-written.

Each fault is served by the loopback fake of the Messages API to the real SDK (AnthropicModel),
under an extractor that writes a handoff to a real store. Under the interactive retry policy (a
tool call) the retrying transport retries 408/409/429/5xx and dropped connections twice, so a fault
that lasts is seen exactly three times; one the API marks `x-should-retry: false`, one that asks to
wait longer than the policy allows, and answers that no retry can fix, exactly once.

    fault                                   requests  outcome
    429 retry-after, then an answer         3         done
    429 retry-after, every time             3         failed: rate limit, lower RESEARCH_MCP_CONCURRENCY
    429 retry-after: 3600 (a long wait)     1         failed at once: it asked to wait 3600 s
    429 x-should-retry: false (spend limit) 1         failed: a limit waiting will not lift, Console
    529 overloaded, then an answer          2         done
    529 overloaded, every time              3         failed: overloaded, try again in a few minutes
    500, every time                         3         failed: Anthropic's API failed, try again shortly
    connection reset, then an answer        2         done
    connection reset, every time            3         failed: the connection failed, ANTHROPIC_BASE_URL
    no answer (stall), every time           3         failed: did not answer within the timeout
    an answer dripped a byte at a time      1         failed at the call deadline
    200 with an HTML body                   1         failed: not a Messages API response
    200 with `{}`                           1         failed: not a Messages API response
    tool input that fails validation, twice 3         done after two repairs
    tool input that never validates         3         failed: did not validate after 2 repairs (*)
    stop_reason max_tokens mid tool call    1         failed: cut off, raise max_tokens or narrow (*)
    stop_reason refusal                     1         failed: refused, quoting the model (*)
    401                                     1         failed: rejected the API key, ANTHROPIC_API_KEY

Every failed handoff has status failed, the error as raised, no output and no facts; (*) answers
that were paid for count in its tokens and cost, with a failed model call recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
import pytest

from research_mcp.core.config import Settings
from research_mcp.core.contracts import Source
from research_mcp.core.errors import ModelError
from research_mcp.core.retry import BACKGROUND, INTERACTIVE, NO_RETRY
from research_mcp.llm.anthropic import AnthropicModel
from research_mcp.roles.base import RoleDeps
from research_mcp.roles.extractor import extract
from research_mcp.sources.library import SourceLibrary
from research_mcp.storage.store import Store

from .fake_anthropic import FakeMessagesAPI

TEXT = "The bridge opened in 1932. It carries eight lanes of traffic and a railway line across the harbour."
VALID = {
    "facts": [
        {
            "statement": "The bridge opened in 1932.",
            "quote": "The bridge opened in 1932.",
            "question_index": 0,
        }
    ],
    "answers": [{"question": "When did it open?", "answer": "1932", "fact_indexes": [0]}],
    "confidence": {"level": "high", "reasoning": "stated directly"},
}
INVALID = {"facts": [{"quote": "The bridge opened in 1932."}], "confidence": {"level": "certain"}}
FAST = {"retry-after-ms": "1"}  # the SDK waits what the API asks; 1 ms keeps retries quick
TIMEOUT = (
    0.3  # each HTTP request's timeout where the fault is a stall (elsewhere: ample, for loaded machines)
)
DEADLINE = 1.0  # each call's deadline, retries included, where the fault is a long wait or a drip
HANG_GUARD = 15.0  # far above any bound under test: reaching it means a hang


def ok(api: FakeMessagesAPI) -> None:
    api.reply_tool_use(VALID)


def error(status: int, kind: str, message: str, **headers: str) -> Callable[[FakeMessagesAPI], None]:
    return lambda api: api.reply_error(status, kind, message, headers={**FAST, **headers})


@dataclass(frozen=True)
class Fault:
    script: list[Callable[[FakeMessagesAPI], None]]
    requests: int
    says: tuple[str, ...] = ()  # empty: the call succeeds
    paid: int = 0  # answers of a failed call that were paid for (they count in its tokens and cost)
    retried: int = 0  # requests the transport retried, each recorded as a `retried` model call


def rate_limited(**headers: str) -> Callable[[FakeMessagesAPI], None]:
    return lambda api: api.reply_error(429, "rate_limit_error", "Rate limited", headers=headers)


FAULTS = {
    "429-then-ok": Fault([rate_limited(**{"retry-after": "0.01"})] * 2 + [ok], 3, retried=2),
    "429-persistent": Fault(
        [rate_limited(**{"retry-after": "0.01"})] * 3,
        3,
        ("rate limit", "RESEARCH_MCP_CONCURRENCY"),
        retried=2,
    ),
    "429-retry-after-an-hour": Fault(
        [rate_limited(**{"retry-after": "3600"})], 1, ("asked to wait 3600 s", "interactive", "rate limit")
    ),
    "429-spend-limit": Fault(
        [rate_limited(**{"x-should-retry": "false"})],
        1,
        ("waiting will not lift", "said not to retry", "Anthropic Console", "429: Rate limited"),
    ),
    "529-then-ok": Fault([error(529, "overloaded_error", "Overloaded"), ok], 2, retried=1),
    "529-persistent": Fault(
        [error(529, "overloaded_error", "Overloaded")] * 3,
        3,
        ("overloaded", "Try again in a few minutes"),
        retried=2,
    ),
    "500-persistent": Fault(
        [error(500, "api_error", "Internal error")] * 3, 3, ("Internal error", "Try again shortly"), retried=2
    ),
    "reset-then-ok": Fault([FakeMessagesAPI.reset, ok], 2, retried=1),
    "reset-persistent": Fault(
        [FakeMessagesAPI.reset] * 3, 3, ("connection to the Anthropic API", "ANTHROPIC_BASE_URL"), retried=2
    ),
    "stall-persistent": Fault(
        [FakeMessagesAPI.stall] * 3, 3, (f"did not answer within {TIMEOUT:g} s",), retried=2
    ),
    "drip": Fault([FakeMessagesAPI.drip], 1, (f"did not finish answering within {DEADLINE:g} s",)),
    "200-html": Fault(
        [lambda api: api.reply_raw(200, b"<html><h1>502 Bad Gateway</h1></html>", content_type="text/html")],
        1,
        ("not a Messages API response", "502 Bad Gateway", "ANTHROPIC_BASE_URL"),
    ),
    "200-empty-json": Fault([lambda api: api.reply(200, {})], 1, ("not a Messages API response",)),
    "invalid-twice-then-ok": Fault([lambda api: api.reply_tool_use(INVALID)] * 2 + [ok], 3),
    "invalid-persistent": Fault(
        [lambda api: api.reply_tool_use(INVALID)] * 3, 3, ("did not validate after 2 repairs",), paid=3
    ),
    "max-tokens": Fault(
        [lambda api: api.reply_tool_use({"facts": [{"statement": "The bri"}]}, stop_reason="max_tokens")],
        1,
        ("cut off at the", "Raise max_tokens"),
        paid=1,
    ),
    "refusal": Fault(
        [lambda api: api.reply_text("I can't help with that.", stop_reason="refusal")],
        1,
        ("refused", "I can't help with that."),
        paid=1,
    ),
    "401": Fault(
        [error(401, "authentication_error", "invalid x-api-key")],
        1,
        ("rejected the API key", "ANTHROPIC_API_KEY"),
    ),
}
# A tool call's policy cut to two retries: what each fault becomes is under test here; how long a
# policy rides out an overload is tests/test_retry.py's.
TWO_RETRIES = replace(INTERACTIVE, max_retries=2)
# Calls whose fault is a long wait or a drip get a short deadline; the others the default one.
SHORT_DEADLINE = {"drip"}


@pytest.fixture
def api() -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as fake:
        yield fake


@pytest.fixture
def store(research_home: Path) -> Store:
    return Store(Settings().database_path)


def deps_for(store: Store, model: AnthropicModel) -> RoleDeps:
    return RoleDeps(
        store=store,
        model=model,
        sources=SourceLibrary(store),
        settings=Settings(),
        limiter=anyio.CapacityLimiter(4),
    )


def source(store: Store) -> Source:
    return store.add_source(ref="text:bridge", kind="text", title="bridge", text=TEXT, content_hash="bridge")


@pytest.mark.parametrize("name", list(FAULTS))
async def test_each_model_fault_ends_in_an_answer_or_a_failed_handoff_that_says_what_to_do(
    api: FakeMessagesAPI, store: Store, name: str
) -> None:
    fault = FAULTS[name]
    for step in fault.script:
        step(api)
    model = AnthropicModel(
        api_key="test-key",
        base_url=api.url,
        model_for=lambda role: "claude-haiku-4-5",
        timeout=TIMEOUT if name == "stall-persistent" else 60.0,
        call_deadline=DEADLINE if name in SHORT_DEADLINE else None,
        retry=TWO_RETRIES,
    )
    async with model:
        with anyio.fail_after(HANG_GUARD):
            if fault.says:
                with pytest.raises(ModelError) as caught:
                    await extract(deps_for(store, model), source(store), questions=["When did it open?"])
            else:
                result = await extract(deps_for(store, model), source(store), questions=["When did it open?"])

    assert len(api.requests) == fault.requests
    assert api.pending == 0  # every scripted answer was asked for: no fewer retries than scripted
    [handoff] = store.db.query(
        "SELECT id, status, output, error, tokens_in, tokens_out, cost_usd FROM handoffs"
    )
    rows = list(store.db.query("SELECT status, calls, tokens_in, error FROM model_calls"))
    retried = [row for row in rows if row["status"] == "retried"]
    calls = [row for row in rows if row["status"] != "retried"]
    # Every retry is kept with the handoff, costing nothing, saying what was retried and why.
    assert len(retried) == fault.retried
    assert all(row["calls"] == 0 and row["tokens_in"] == 0 for row in retried)
    assert all("from 127.0.0.1; retried after" in row["error"] for row in retried)
    if not fault.says:
        assert handoff["status"] == "done"
        assert handoff["id"] == result.handoff_id
        assert [f.verified for f in store.facts_for_handoffs([result.handoff_id])] == [True]
        return
    message = str(caught.value)
    for words in fault.says:
        assert words in message
    assert handoff["status"] == "failed"
    assert handoff["error"] == message
    assert handoff["output"] is None  # never half an output
    # Answers paid for are counted, though the call failed; a call nothing answered cost nothing.
    assert (handoff["tokens_in"], handoff["tokens_out"]) == (100 * fault.paid, 50 * fault.paid)
    assert (handoff["cost_usd"] > 0) == bool(fault.paid)
    # Each paid answer is a model call of its own: "invalid" when a repair could follow, else "failed".
    assert [call["calls"] for call in calls] == [1] * fault.paid
    assert all(call["tokens_in"] == 100 for call in calls)
    assert {call["status"] for call in calls} <= {"invalid" if name == "invalid-persistent" else "failed"}
    assert store.facts_for_handoffs([handoff["id"]]) == []


def test_the_default_call_deadline_is_finite_and_covers_every_retry_of_the_policy() -> None:
    model = AnthropicModel(api_key="k", model_for=lambda role: "claude-haiku-4-5")
    assert model.timeout == 300.0
    assert model.policy() == INTERACTIVE  # outside a run: a tool call's short patience
    assert model.deadline(INTERACTIVE) == 30.0 + 300.0 + 5.0  # the retry budget, then one attempt
    assert model.deadline(BACKGROUND) == 600.0 + 300.0 + 5.0
    short = AnthropicModel(api_key="k", model_for=lambda role: "m", timeout=2.0, retry=NO_RETRY)
    assert short.deadline(short.policy()) == 7.0  # the request's own timeout fires first
    assert short.client.timeout == 2.0 and short.client.max_retries == 0  # the SDK never retries


def test_a_timeout_or_deadline_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError):
        AnthropicModel(api_key="k", model_for=lambda role: "m", timeout=0)
    with pytest.raises(ValueError):
        AnthropicModel(api_key="k", model_for=lambda role: "m", call_deadline=-1)

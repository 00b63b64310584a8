"""Faults inside whole runs, through the MCP tools: a failing part never sinks the run, and is named.

A leaf whose model calls fail for good (the real SDK against the fake Messages API), web searches
that fail (a loopback fake of Tavily) and hostile pages (a loopback web server): the run finishes
with the parts that worked, and its report and gaps name each part that failed, and why.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import TextContent

from research_mcp.core.config import Settings
from research_mcp.core.errors import ModelError
from research_mcp.core.retry import BACKGROUND
from research_mcp.core.role_inputs import ExtractorPayload, SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.fake_http import ScriptedResponse
from tests.llm.fake_anthropic import FakeMessagesAPI, error_response, tool_use_response
from tests.server.waiting import until_finished
from tests.sources import hostile
from tests.sources.fake_tavily import FakeTavily
from tests.sources.loopback import LoopbackServer

SOLAR = (
    "Solar panels convert sunlight into electricity using photovoltaic cells. "
    "Typical panel efficiency is between 18 and 22 percent in 2024."
)
WIND = (
    "Wind turbines convert the kinetic energy of wind into electricity. "
    "Offshore wind farms have capacity factors above 40 percent."
)
HYDRO = (
    "Hydroelectric dams turn the energy of falling water into electricity. "
    "Pumped storage holds most of the world's grid storage capacity."
)
TEXTS = (SOLAR, WIND, HYDRO)
GUARD = 40.0  # far above what any run here takes: reaching it means a hang


def leaf(title: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "leaf", "title": title, "questions": [f"What is known about {title}?"], **extra}


def plan_of(*children: dict[str, Any]) -> dict[str, Any]:
    return {"root": {"kind": "executor", "title": "energy", "children": list(children)}}


async def run_to_the_end(client: Client, plan: dict[str, Any]) -> dict[str, Any]:
    planned = await client.call_tool("plan_research", {"query": "energy sources", "suggested_plan": plan})
    assert not planned.is_error, planned.content
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
        ),
    )
    assert not run.is_error, run.content
    return dict(run.structured_content)


async def view(client: Client, run_id: str, name: str) -> str:
    result = await client.call_tool("report_results", {"id": run_id, "view": name, "max_tokens": 20_000})
    assert not result.is_error, result.content
    return str(result.structured_content["text"])


def store() -> Store:
    return Store(Settings().database_path)


def assert_nothing_left_running(run_id: str) -> None:
    rows = store().db.query("SELECT role, status, output, error FROM handoffs WHERE run_id = ?", [run_id])
    for row in rows:
        assert row["status"] in ("done", "failed"), row
        if row["status"] == "failed":
            assert row["error"] and row["output"] is None, row


# --- one leaf's model calls fail for good --------------------------------------------------------


def anthropic_team(plan: dict[str, Any], failing: str) -> Any:
    """The fake model's answers by request content: every call about `failing` is overloaded."""

    def answer(body: dict[str, Any]) -> ScriptedResponse:
        schema = body["tools"][0]["input_schema"].get("title")
        prompt = body["messages"][0]["content"]
        if schema == "PlannerOutput":
            return tool_use_response(plan)
        overloaded = error_response(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
        if f"Node: {failing}\n" in prompt:
            return overloaded
        if schema == "ExtractorOutput":
            text = next(text for text in TEXTS if text in prompt)
            if failing in text.lower():
                return overloaded
            first = text.split(". ")[0] + "."
            return tool_use_response(
                {
                    "facts": [{"statement": first, "quote": first, "question_index": 0}],
                    "confidence": {"level": "high", "reasoning": "stated"},
                }
            )
        cited = " ".join(dict.fromkeys(re.findall(r"\[F\d+\]", prompt)))
        return tool_use_response(
            {
                "report": f"Findings {cited}.",
                "confidence": {"level": "medium", "reasoning": "two of three parts"},
            }
        )

    return answer


async def test_a_leaf_whose_model_calls_fail_for_good_is_named_and_the_run_finishes_with_the_others(
    anthropic_api: FakeMessagesAPI,
) -> None:
    plan = plan_of(
        leaf("solar", sources=[SOLAR]), leaf("wind", sources=[WIND]), leaf("hydro", sources=[HYDRO])
    )
    anthropic_api.route(anthropic_team(plan, failing="wind"))

    with anyio.fail_after(GUARD):
        async with Client(create_server()) as client:
            run = await run_to_the_end(client, plan)
            report = await view(client, run["id"], "report")
            gaps = await view(client, run["id"], "gaps")
            tree = await view(client, run["id"], "tree")

    assert run["status"] == "partial", run  # finished, with the failed parts named (and retryable)
    assert "2 failed parts or sources, named in the gaps" in run["summary"][1]
    # The wind leaf: its extraction and its synthesis, each tried 1 + 8 times (a run's retry policy).
    wind_calls = [
        prompt
        for prompt in (body["messages"][0]["content"] for body in anthropic_api.bodies[1:])  # after the plan
        if WIND in prompt or "Node: wind\n" in prompt
    ]
    assert len(wind_calls) == 2 * (1 + BACKGROUND.max_retries)
    # The report is built from the parts that worked, and says what is missing and why.
    assert run["metrics"]["citations_verified"] == 2
    assert "## Not covered (failed)" in report
    assert "Not researched: leaf 'wind' failed" in report
    assert "overloaded" in report
    assert "Not researched: leaf 'wind' failed" in gaps
    assert "Source not read" in gaps  # the wind source's extraction failed first, and is named too
    assert re.search(r"- \S+ leaf: wind \[failed\]", tree)
    assert re.search(r"- \S+ leaf: solar \[done h_\w+\]", tree)
    assert_nothing_left_running(run["id"])


# --- web search fails ----------------------------------------------------------------------------

TAVILY_FAULTS = {
    "429-beyond-retries": (  # a run's search retries under the background policy: 8 times
        [("reply", (429, {"detail": {"error": "slow down"}}), {"Retry-After": "0"})]
        * (1 + BACKGROUND.max_retries),
        1 + BACKGROUND.max_retries,
        "rate-limiting",
    ),
    "401": (
        [("reply", (401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}), {})],
        1,
        "rejected the API key",
    ),
    "500": ([("reply", (500, {"detail": {"error": "boom"}}), {})], 1, "failed on its side (HTTP 500)"),
    "timeout": ([("stall", (0, b""), {})], 1, "did not answer within 2 s"),
    "malformed-json": ([("raw", (200, b'{"results": [ {"url": '), {})], 1, "something other than JSON"),
}


@pytest.fixture
def tavily(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTavily]:
    with FakeTavily() as fake:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_API_BASE_URL", fake.url)
        yield fake


@pytest.mark.parametrize("fault", list(TAVILY_FAULTS))
async def test_a_failed_web_search_is_named_and_the_run_goes_on_with_the_sources_it_has(
    tavily: FakeTavily, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, requests, says = TAVILY_FAULTS[fault]
    if fault == "timeout":  # a short limit, for the stall alone: a loaded machine slows every answer
        monkeypatch.setenv("RESEARCH_MCP_SOURCE_TIMEOUT", "2")
    for kind, (status, body), headers in script:
        if kind == "stall":
            tavily.stall()
        elif kind == "raw":
            tavily.reply_raw(status, body)
        else:
            tavily.reply(status, body, headers=headers)
    plan = plan_of(leaf("solar", sources=[SOLAR]), leaf("wind", search_queries=["offshore wind capacity"]))

    with anyio.fail_after(GUARD):
        async with Client(create_server(model=ScriptedModel(team_script))) as client:
            run = await run_to_the_end(client, plan)
            report = await view(client, run["id"], "report")
            gaps = await view(client, run["id"], "gaps")

    assert run["status"] == "partial", run  # finished, with the failed parts named (and retryable)
    assert len(tavily.requests) == requests
    assert run["metrics"]["citations_verified"] >= 1  # the solar leaf's facts
    failure = "Web search for 'offshore wind capacity' failed: "
    assert failure in gaps and says in gaps
    assert failure in report
    assert "tvly-test" not in report + gaps
    assert_nothing_left_running(run["id"])


# --- hostile pages -------------------------------------------------------------------------------

GOOD_PAGE = (
    b"<html><head><title>Tidal power</title></head><body><article><h1>Tidal power</h1>"
    b"<p>Tidal barrages generate electricity from the rise and fall of the sea twice a day.</p>"
    b"<p>The La Rance barrage in France has produced power since 1966.</p></article></body></html>"
)


def huge(handler: Any) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(50_000_000))
    handler.end_headers()
    handler.wfile.write(b"<html><body>" + b"a" * 1000)


def drip(handler: Any, server: LoopbackServer) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.end_headers()
    while not server.stopping.wait(0.05):
        handler.wfile.write(b"<p>.")
        handler.wfile.flush()


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:
        monkeypatch.setenv("RESEARCH_MCP_FETCH_ALLOW", f"127.0.0.1:{server.port}")
        # Short enough for the drip to reach, long enough for every other page on a loaded machine.
        monkeypatch.setenv("RESEARCH_MCP_SOURCE_TIMEOUT", "5")
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        bomb = b"".join(compressor.compress(bytes(1_000_000)) for _ in range(20)) + compressor.flush()
        server.serve("/good", GOOD_PAGE)
        server.redirect("/to-private", "http://10.20.30.40/admin")
        server.redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
        server.serve("/bomb", bomb, "text/html", headers=[("Content-Encoding", "gzip")])
        server.respond("/huge", huge)
        server.respond("/drip", lambda handler: drip(handler, server))
        server.serve("/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png")
        server.serve("/empty", b"", "text/html")
        server.serve("/broken.pdf", hostile.unknown_filter_pdf(), "application/pdf")
        server.serve("/stall.pdf", hostile.huge_stream_pdf(10), "application/pdf")
        server.serve(
            "/bad-utf8",
            b"<html><body><p>Wave energy converters \xff\xfe capture the motion of ocean swells near the coast.</p>"
            b"<p>Pilot farms off Portugal ran in 2008.\xc3\x28</p></body></html>",
            "text/html; charset=utf-8",
        )
        yield server


HOSTILE: dict[str, str | tuple[str, ...]] = {
    "/to-private": "10.20.30.40",
    "/to-metadata": "metadata",
    "/bomb": "larger than",
    "/huge": "larger than",
    "/drip": "took longer than 5 s",
    "/logo.png": "image/png",
    "/empty": "",
    "/broken.pdf": "could not be parsed (NotImplementedError: Unsupported filter /BogusDecode)",
    # Ten megabytes of text operators: its parse is stopped by whichever of its bounds, time or
    # memory, it reaches first, which depends on the machine.
    "/stall.pdf": ("to parse and was stopped", "needs more memory than a document may use"),
}


async def test_hostile_pages_are_refused_and_named_while_the_readable_ones_are_researched(
    web: LoopbackServer,
) -> None:
    refs = [web.url(path) for path in ("/good", "/bad-utf8", *HOSTILE)]
    plan = plan_of(leaf("sea power", sources=refs))

    with anyio.fail_after(GUARD):
        async with Client(create_server(model=ScriptedModel(team_script))) as client:
            run = await run_to_the_end(client, plan)
            gaps = await view(client, run["id"], "gaps")
            sources = await view(client, run["id"], "sources")
            report = await view(client, run["id"], "report")

    assert run["status"] == "partial", run  # finished, with the failed parts named (and retryable)
    assert web.url("/good") in sources and web.url("/bad-utf8") in sources
    gap_lines = gaps.splitlines()
    for path, says in HOSTILE.items():
        [line] = [line for line in gap_lines if line.startswith(f"Source not read: {web.url(path)}")]
        assert any(reason in line for reason in ((says,) if isinstance(says, str) else says)), line
        assert web.url(path) not in sources
        assert web.url(path) in report
    assert "10.20.30.40" not in " ".join(path for path, _ in web.requests)
    assert_nothing_left_running(run["id"])


async def test_extract_source_on_a_malformed_pdf_is_an_error_naming_it_and_the_next_call_is_served(
    web: LoopbackServer,
) -> None:
    with anyio.fail_after(GUARD):
        async with Client(create_server(model=ScriptedModel(team_script))) as client:
            broken = await client.call_tool(
                "extract_source", {"source": web.url("/broken.pdf"), "questions": ["What is tidal power?"]}
            )
            good = await client.call_tool(
                "extract_source", {"source": web.url("/good"), "questions": ["What do panels do?"]}
            )
    [content] = broken.content
    assert broken.is_error and isinstance(content, TextContent)
    assert web.url("/broken.pdf") in content.text
    assert "could not be parsed (NotImplementedError: Unsupported filter /BogusDecode)" in content.text
    assert not good.is_error


async def test_a_discovery_leaf_whose_searches_fail_is_named_and_its_sibling_still_reports(
    tavily: FakeTavily,
) -> None:
    # Nothing scripted: every search gets Tavily's HTTP 500.
    plan = plan_of({"kind": "discovery", "title": "solar sources"}, leaf("solar", sources=[SOLAR]))

    with anyio.fail_after(GUARD):
        async with Client(create_server(model=ScriptedModel(team_script))) as client:
            run = await run_to_the_end(client, plan)
            gaps = await view(client, run["id"], "gaps")

    assert run["status"] == "partial", run  # finished, with the failed parts named (and retryable)
    assert tavily.requests  # the scout did search
    assert "Web search for " in gaps and "failed on its side (HTTP 500)" in gaps
    assert run["metrics"]["citations_verified"] >= 1
    assert_nothing_left_running(run["id"])


async def test_of_several_plans_run_together_one_that_fails_is_named_in_the_final_report() -> None:
    def failing_wind(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if isinstance(payload, ExtractorPayload) and WIND in payload.source_text:
            raise ModelError("The wind model call failed for this test; try again later.")
        if isinstance(payload, SynthesisPayload) and payload.title == "wind":
            raise ModelError("The wind model call failed for this test; try again later.")
        return team_script(request)

    with anyio.fail_after(GUARD):
        async with Client(create_server(model=ScriptedModel(failing_wind))) as client:
            ids = []
            for title, text in (("solar", SOLAR), ("wind", WIND)):
                plan = await client.call_tool(
                    "plan_research",
                    {"query": f"{title} power", "suggested_plan": plan_of(leaf(title, sources=[text]))},
                )
                ids.append(plan.structured_content["id"])
            run = (
                await client.call_tool("execute_plan", {"plan_ids": ids, "wait_seconds": 30})
            ).structured_content
            report = await view(client, run["id"], "report")
            gaps = await view(client, run["id"], "gaps")

    assert run["status"] == "partial", run  # finished, with the failed parts named (and retryable)
    assert f"Not researched: plan {ids[1]} ('wind power') failed: Every part of 'energy' failed" in gaps
    assert "Not researched: leaf 'wind' failed: The wind model call failed" in report
    assert "Source not read" in report
    assert run["metrics"]["citations_verified"] >= 1
    assert_nothing_left_running(run["id"])

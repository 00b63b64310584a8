"""The protocol done exactly (issue 26), asserted against the running server: in memory, over the
initialize handshake (2025-11-25) and the 2026-07-28 per-request form, over stdio through the
installed console script, and over streamable HTTP (`serve --http`'s app, guards included, served by
uvicorn in this process on a loopback port). The raw task requests stay in memory."""

from __future__ import annotations

import copy
import itertools
import json
import logging
import math
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND
from pydantic_ai.profiles.google import GoogleOpenAPISchemaTransformer

from research_mcp.core.config import Settings
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs import manager
from research_mcp.runs.manager import next_progress, progress_message
from research_mcp.server.app import create_server
from research_mcp.sources.index_progress import IndexProgress
from tests.gate import ScanGate
from tests.server.indexing import wait_until_indexed
from tests.server.over_http import served_over_http
from tests.server.test_runs import three_leaf_plan
from tests.server.test_startup import write_notes
from tests.server.test_stdio import SCRIPT, script, server_params
from tests.server.test_tasks import RawSession
from tests.server.waiting import until_finished

__all__ = ["script"]  # the fixture, imported

CONNECTIONS = ("memory-2025-11-25", "memory-2026-07-28", "stdio", "http")


@asynccontextmanager
async def connected(
    connection: str, server: MCPServer[Any] | None = None, **options: Any
) -> AsyncIterator[Client]:
    """A client of the server over `connection` (the stdio server runs the extractive backend; the
    others `server`, by default one on the scripted team)."""
    if connection == "stdio":
        if not SCRIPT.exists():
            pytest.fail("the research-mcp console script is not installed: run `make test`")
        params = server_params(Settings().home, RESEARCH_MCP_MODEL="extractive")
        async with Client(params, mode="legacy", **options) as client:
            yield client
        return
    server = server or create_server(model=ScriptedModel(team_script))
    if connection == "http":
        async with (
            served_over_http(server) as url,
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", **options) as client,
        ):
            yield client
        return
    mode = "legacy" if connection.endswith("2025-11-25") else "2026-07-28"
    async with Client(server, mode=mode, **options) as client:
        yield client


@pytest.fixture(params=CONNECTIONS)
def connection(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_an_unknown_tool_is_invalid_params(connection: str) -> None:
    async with connected(connection) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("no_such_tool", {})
        known = await client.call_tool("report_results", {"id": "run_000000000000"})
    assert refused.value.error.code == INVALID_PARAMS
    assert "Unknown tool 'no_such_tool'" in refused.value.error.message
    assert "plan_research" in refused.value.error.message
    assert known.is_error  # a known tool's own failure stays a tool result


# --- 2. input schemas carry the limits the server enforces, and describe every parameter ----------

LIMITS = {
    ("plan_research", "query"): {"minLength": 3, "maxLength": 2000},
    ("plan_research", "suggested_plan"): {"maxItems": 60},
    ("execute_plan", "plan_id"): {"pattern": "^plan_[\\w-]{1,59}$"},
    ("execute_plan", "plan_ids"): {"maxItems": 10},
    ("execute_plan", "run_id"): {"pattern": "^run_[\\w-]{1,60}$"},
    ("execute_plan", "wait_seconds"): {"minimum": 0, "maximum": 55},
    ("extract_source", "source"): {"maxLength": 2_000_000},
    ("extract_source", "questions"): {"maxItems": 20},
    ("scout_sources", "topic"): {"minLength": 3, "maxLength": 2000},
    ("scout_sources", "queries"): {"maxItems": 10},
    ("scout_sources", "limit"): {"minimum": 1, "maximum": 20},
    ("report_results", "id"): {"pattern": "^(run|plan|h)_[\\w-]{1,59}$"},
    ("report_results", "cursor"): {"pattern": "^(\\d{1,9}:\\d{1,9})?$"},
    ("report_results", "max_tokens"): {"minimum": 200, "maximum": 20000},
}


def when_given(schema: dict[str, Any]) -> dict[str, Any]:
    """What a value must be when it is given: a nullable schema's other branch."""
    branches = [branch for branch in schema.get("anyOf", []) if branch != {"type": "null"}]
    return branches[0] if len(branches) == 1 else schema


async def listed(connection: str) -> dict[str, dict[str, Any]]:
    async with connected(connection) as client:
        tools = (await client.list_tools()).tools
    return {tool.name: tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools}


async def test_every_parameter_is_described_and_carries_its_limits(connection: str) -> None:
    tools = await listed(connection)
    undescribed = [
        f"{name}.{parameter}"
        for name, tool in tools.items()
        for parameter, schema in tool["inputSchema"]["properties"].items()
        if not schema.get("description")
    ]
    assert undescribed == []
    for (name, parameter), limits in LIMITS.items():
        schema = when_given(tools[name]["inputSchema"]["properties"][parameter])
        assert limits.items() <= schema.items(), (name, parameter, schema)
    node = when_given(tools["plan_research"]["inputSchema"]["properties"]["suggested_plan"])["items"]
    spec = when_given(tools["extract_source"]["inputSchema"]["properties"]["task_spec"])
    assert node["properties"]["title"]["maxLength"] == 200
    assert node["properties"]["questions"]["maxItems"] == 10
    assert node["properties"]["questions"]["items"]["maxLength"] == 500
    assert node["properties"]["sources"]["maxItems"] == 20
    assert spec["properties"]["expected_format"]["maxLength"] == 500
    assert spec["properties"]["acceptance_criteria"] == {
        "items": {"maxLength": 300, "type": "string"},
        "maxItems": 10,
        "type": "array",
    }
    assert tools["extract_source"]["inputSchema"]["properties"]["questions"]["items"]["maxLength"] == 1000
    assert tools["execute_plan"]["inputSchema"]["properties"]["plan_ids"]["items"]["pattern"] == (
        "^plan_[\\w-]{1,59}$"
    )


# Arguments each refused by the published schema: the server refuses each too, naming the argument.
PAST_THE_LIMITS = [
    ("plan_research", {"query": "x" * 2001}, "query"),
    ("plan_research", {"query": "ab"}, "query"),
    ("execute_plan", {"plan_id": "run_1a2b3c"}, "plan_id"),
    ("execute_plan", {"run_id": "run_" + "a" * 61}, "run_id"),
    ("execute_plan", {"plan_ids": ["plan_1"] * 11}, "plan_ids"),
    ("execute_plan", {"run_id": "run_1", "wait_seconds": 55.5}, "wait_seconds"),
    ("execute_plan", {"run_id": "run_1", "wait_seconds": -1}, "wait_seconds"),
    ("extract_source", {"source": "Penguins breed in winter.", "questions": ["why?"] * 21}, "questions"),
    ("extract_source", {"source": "Penguins breed in winter.", "questions": ["x" * 1001]}, "questions"),
    ("scout_sources", {"topic": "penguins", "limit": 0}, "limit"),
    ("scout_sources", {"topic": "penguins", "limit": 21}, "limit"),
    ("scout_sources", {"topic": "penguins", "queries": ["q"] * 11}, "queries"),
    ("scout_sources", {"topic": "penguins", "queries": ["q" * 301]}, "queries"),
    ("report_results", {"id": "S12"}, "id"),
    ("report_results", {"id": "run_1", "cursor": "next"}, "cursor"),
    ("report_results", {"id": "run_1", "max_tokens": 199}, "max_tokens"),
    ("report_results", {"id": "run_1", "max_tokens": 20001}, "max_tokens"),
    (
        "plan_research",
        {"query": "penguins", "suggested_plan": [{"kind": "executor", "title": "t" * 201}]},
        "title",
    ),
    (
        "plan_research",
        {
            "query": "penguins",
            "suggested_plan": [{"kind": "executor", "title": "t", "questions": ["Why?"] * 11}],
        },
        "questions",
    ),
    (
        "extract_source",
        {
            "source": "Penguins breed in winter.",
            "questions": ["Why?"],
            "task_spec": {"expected_format": "f" * 501},
        },
        "expected_format",
    ),
    (
        "extract_source",
        {"source": "Penguins.", "questions": ["Why?"], "task_spec": {"acceptance_criteria": ["c" * 301]}},
        "acceptance_criteria",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "argument"), PAST_THE_LIMITS)
async def test_what_the_schema_refuses_the_server_refuses(
    tool: str, arguments: dict[str, Any], argument: str
) -> None:
    schema = (await listed("memory-2025-11-25"))[tool]["inputSchema"]
    assert list(Draft202012Validator(schema).iter_errors(arguments)), "the schema accepts it"
    async with connected("memory-2025-11-25") as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert argument in result.content[0].text  # type: ignore[union-attr]


async def test_what_the_schema_accepts_at_its_limits_the_server_accepts() -> None:
    """Values exactly at each published bound: the schema accepts them, so the server must."""
    at_the_limits = {
        "scout_sources": {"topic": "pen", "queries": ["q" * 300] * 10, "limit": 20},
        "extract_source": {"source": "Penguins breed in winter.", "questions": ["x" * 1000] + ["Why?"] * 19},
    }
    tools = await listed("memory-2025-11-25")
    async with connected("memory-2025-11-25") as client:
        for tool, arguments in at_the_limits.items():
            assert not list(Draft202012Validator(tools[tool]["inputSchema"]).iter_errors(arguments))
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
        plan = await client.call_tool("plan_research", {"query": "q" * 2000})
        assert not plan.is_error, plan.content
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan",
                {"plan_id": plan.structured_content["id"], "wait_seconds": 55},  # type: ignore[index]
            ),
        )
        assert not run.is_error, run.content
        page = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "max_tokens": 20000}
        )  # type: ignore[index]
        assert not page.is_error, page.content


# --- 9. portable schemas: one type per schema node, null spelled `anyOf` -------------------------------

# The fields of Gemini's `Schema`, the OpenAPI 3.0 subset its function declarations take.
GEMINI_SCHEMA = {
    "anyOf", "default", "description", "enum", "example", "format", "items", "maxItems", "maxLength",
    "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "nullable", "pattern",
    "properties", "propertyOrdering", "required", "title", "type",
}  # fmt: skip


def type_lists(schema: Any, path: str = "$") -> list[str]:
    """The places where a schema's `type` is a list (`["string", "null"]`)."""
    if isinstance(schema, list):
        return [place for index, item in enumerate(schema) for place in type_lists(item, f"{path}[{index}]")]
    if not isinstance(schema, dict):
        return []
    found = [path] if isinstance(schema.get("type"), list) else []
    return found + [
        place
        for key, value in schema.items()
        if key not in ("enum", "default", "required")
        for place in type_lists(value, f"{path}.{key}")
    ]


def gemini_keywords(schema: Any) -> set[str]:
    """Every keyword the schema uses, below `properties` names."""
    if isinstance(schema, list):
        return {key for item in schema for key in gemini_keywords(item)}
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key == "properties":
            found |= {key for sub in value.values() for key in gemini_keywords(sub)}
        elif key not in ("enum", "default", "required"):
            found |= gemini_keywords(value)
    return found


async def test_no_schema_spells_a_type_as_a_list_and_geminis_subset_keeps_every_nullable(
    connection: str,
) -> None:
    tools = await listed(connection)
    schemas = {
        f"{name}.{part}": tool[part]
        for name, tool in tools.items()
        for part in ("inputSchema", "outputSchema")
    }
    assert [place for name, schema in schemas.items() for place in type_lists(schema, name)] == []
    gemini = {
        name: GoogleOpenAPISchemaTransformer(copy.deepcopy(tool["inputSchema"])).walk()
        for name, tool in tools.items()
    }
    assert {name: gemini_keywords(schema) - GEMINI_SCHEMA for name, schema in gemini.items()} == {
        name: set() for name in tools
    }
    assert gemini["execute_plan"]["properties"]["run_id"] == {
        "description": "The run to wait on.",
        "nullable": True,
        "pattern": "^run_[\\w-]{1,60}$",
        "type": "string",
    }
    assert gemini["plan_research"]["properties"]["budget"]["properties"]["max_tokens"] == {
        "description": "Tokens.",
        "nullable": True,
        "type": "integer",
    }


# --- 3. typed output schemas, and every result checked against its tool's ----------------------------

APPS = {"extensions": [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]}
PENGUINS = "Emperor penguins breed in the Antarctic winter. Adelie penguins breed in the summer."
PLAN = [
    {"parent": None, "kind": "executor", "title": "penguins"},
    {
        "parent": 0,
        "kind": "leaf",
        "title": "breeding",
        "questions": ["When do penguins breed?"],
        "sources": [PENGUINS],
    },
]


def untyped(schema: Any, path: str = "$") -> list[str]:
    """The places in a schema that say `object` or `array` without saying what is in it."""
    if isinstance(schema, list):
        return [place for index, item in enumerate(schema) for place in untyped(item, f"{path}[{index}]")]
    if not isinstance(schema, dict):
        return []
    found = []
    if (
        schema.get("type") == "object"
        and "properties" not in schema
        and not isinstance(schema.get("additionalProperties"), dict)
    ):
        found.append(path)
    if schema.get("type") == "array" and "items" not in schema:
        found.append(path)
    return found + [place for key, value in schema.items() for place in untyped(value, f"{path}.{key}")]


async def test_every_result_of_a_whole_flow_matches_its_tools_typed_output_schema(connection: str) -> None:
    results: list[tuple[str, dict[str, Any]]] = []
    async with connected(connection, **APPS) as client:
        schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
            assert result.structured_content is not None
            results.append((tool, result.structured_content))
            return result.structured_content

        plan = await call("plan_research", {"query": "When do penguins breed?", "suggested_plan": PLAN})
        run = await call("execute_plan", {"plan_id": plan["id"], "wait_seconds": 30})
        assert run["status"] == "done", run
        for view in ("summary", "report", "sources", "facts", "confidence", "gaps", "followups", "tree"):
            await call("report_results", {"id": run["id"], "view": view, "max_tokens": 200})
        await call("run_view", {"run_id": run["id"]})
        extraction = await call(
            "extract_source", {"source": PENGUINS, "questions": ["When do penguins breed?"]}
        )
        await call("report_results", {"id": extraction["id"], "view": "handoff"})
        await call("scout_sources", {"topic": "penguin breeding"})
    assert sorted(schemas) == [
        "execute_plan",
        "extract_source",
        "plan_research",
        "report_results",
        "run_view",
        "scout_sources",
    ]
    assert {name: untyped(schema) for name, schema in schemas.items()} == {name: [] for name in schemas}
    for tool, structured in results:
        Draft202012Validator.check_schema(schemas[tool])
        errors = [error.message for error in Draft202012Validator(schemas[tool]).iter_errors(structured)]
        assert errors == [], (tool, errors)
    assert len(results) == 14


# --- 4. titles, and MCP logging for the protocol versions that have it ---------------------------------

SECRET = "sk-ant-conformance-0123456789abcdef"


async def test_every_tool_has_a_title(connection: str) -> None:
    tools = await listed(connection)
    assert {name: bool(tool.get("title")) for name, tool in tools.items()} == {name: True for name in tools}


@pytest.mark.parametrize("connection", ["memory-2025-11-25", "http"])
async def test_a_client_that_sets_a_level_gets_the_servers_log_lines_redacted_and_no_lower(
    connection: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What the server logs reaches a 2025-11-25 client at or above the level it set: a source not
    read and the run that ended partial for it, with the secret in the refused URL redacted."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)  # a secret the server redacts wherever it logs
    caplog.set_level(logging.INFO, logger="research_mcp")
    refused = f"http://10.0.0.1/report?key={SECRET}"
    plan = [
        {"parent": None, "kind": "executor", "title": "penguins"},
        {
            "parent": 0,
            "kind": "leaf",
            "title": "breeding",
            "questions": ["When?"],
            "sources": [PENGUINS, refused],
        },
    ]
    messages: list[Any] = []

    async def on_log(params: Any) -> None:
        messages.append(params)

    async with connected(connection, logging_callback=on_log) as client:
        assert client.server_capabilities.logging is not None
        with pytest.warns(MCPDeprecationWarning):  # the SDK's client reminds that 2026-07-28 dropped it
            await client.set_logging_level("warning")
        planned = await client.call_tool(
            "plan_research", {"query": "When do penguins breed?", "suggested_plan": plan}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )  # type: ignore[index]
        assert run.structured_content["status"] == "partial"  # type: ignore[index]
        logging.getLogger("research_mcp.conformance").info("below the level set")
        logging.getLogger("research_mcp.conformance").error("above the level set")
        await client.list_prompts()  # one more round trip: the notifications sent before it have arrived
    lines = [str(message.data) for message in messages]
    assert any("source not read: http://10.0.0.1/report" in line for line in lines), lines
    assert any("ended partial" in line for line in lines), lines
    assert "above the level set" in lines and "below the level set" not in lines
    assert {message.level for message in messages} == {"warning", "error"}
    assert all(SECRET not in line and SECRET[:12] not in line for line in lines)


async def test_without_a_level_set_no_log_line_is_sent_and_2026_clients_have_no_set_level() -> None:
    messages: list[Any] = []

    async def on_log(params: Any) -> None:
        messages.append(params)

    async with Client(
        create_server(model=ScriptedModel(team_script)), mode="legacy", logging_callback=on_log
    ) as client:
        await client.call_tool("execute_plan", {"run_id": "run_000000000000"})
    assert messages == []
    async with Client(create_server(model=ScriptedModel(team_script)), mode="2026-07-28") as client:
        assert client.server_capabilities.logging is None
        with pytest.raises(MCPError) as refused, pytest.warns(MCPDeprecationWarning):
            await client.set_logging_level("info")
    assert refused.value.error.code == METHOD_NOT_FOUND


# --- 5. tasks: only execute_plan runs as one; list cursors are checked ---------------------------------


async def test_a_task_augmented_call_of_a_tool_without_task_support_is_method_not_found() -> None:
    server = create_server(model=ScriptedModel(team_script))
    async with InMemoryTransport(server) as (read, write):
        session = RawSession(read, write)
        await session.open()
        refused = await session.request(
            "tools/call",
            {"name": "scout_sources", "arguments": {"topic": "penguins"}, "task": {"ttl": 60_000}},
        )
        plain = await session.call("scout_sources", {"topic": "penguins"})
    assert refused["error"]["code"] == METHOD_NOT_FOUND
    assert "does not run as a task" in refused["error"]["message"]
    assert not plain["isError"]


@pytest.mark.parametrize(
    "listing", ["list_tools", "list_resources", "list_resource_templates", "list_prompts"]
)
async def test_a_cursor_this_server_never_gave_is_invalid_params(connection: str, listing: str) -> None:
    async with connected(connection) as client:
        first = await getattr(client, listing)()
        with pytest.raises(MCPError) as refused:
            await getattr(client, listing)(cursor="page-2")
    assert first.next_cursor is None
    assert refused.value.error.code == INVALID_PARAMS
    assert "Invalid cursor 'page-2'" in refused.value.error.message


# --- 6. progress: strictly increasing, never past its total, its message agreeing ---------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=40))
def test_progress_values_increase_stay_within_the_total_and_the_message_says_them(
    observations: list[tuple[int, int]],
) -> None:
    """Whatever the run's counts do between two reports (a node reopened lowers `done`, a phase
    iteration changes `total`), what is sent increases, is never above its total, and its message
    names the whole part of the value."""
    last: float | None = None
    for done, total in observations:
        value = next_progress(last, done, total)
        if value is None:
            continue
        assert last is None or value > last
        assert 0 <= value <= total
        message = progress_message(value, total)
        assert message.startswith(f"{math.floor(value)}/{total} nodes done")
        assert ("under way" in message) == (value != int(value))
        last = value


@pytest.mark.parametrize("connection", ["memory-2025-11-25", "http"])
async def test_a_runs_progress_notifications_increase_within_their_total_and_agree_with_their_message(
    connection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager, "PROGRESS_EVERY_S", 0.05)  # heartbeats between nodes
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    server = create_server(model=ScriptedModel(team_script, latency=0.2))
    async with connected(connection, server) as client:
        planned = await client.call_tool(
            "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
        )
        run = await client.call_tool(
            "execute_plan",
            {"plan_id": planned.structured_content["id"], "wait_seconds": 30},  # type: ignore[index]
            progress_callback=on_progress,
        )
    assert run.structured_content["status"] == "done"  # type: ignore[index]
    values = [value for value, _, _ in seen]
    assert values and all(later > earlier for earlier, later in itertools.pairwise(values)), values
    assert all(total is not None and value <= total for value, total, _ in seen)
    assert all(message and message.startswith(f"{math.floor(value)}/") for value, _, message in seen)


# --- 7. a new process over a corpus indexed before: its searches are not partial ---------------------


async def test_a_run_started_while_a_new_server_rescans_a_complete_corpus_is_not_partial(
    script: Path, tmp_path: Path
) -> None:
    """A one-shot client (Inspector CLI, a host that starts a server per session) runs research in
    the server's first seconds, while its start-up pass re-checks a corpus indexed by an earlier one.

    The new server's pass is held before its scan (tests/gate.py ScanGate) until its first search
    waits for that scan, so the search surely comes during the scan, on any machine."""
    notes = write_notes(tmp_path / "notes", 60)
    params = server_params(Settings().home, RESEARCH_MCP_CORPUS=str(notes), RESEARCH_MCP_MODEL="extractive")
    async with Client(params, mode="legacy") as client:
        assert (await wait_until_indexed(client))["line"] == "corpus: 60 documents indexed"
    gate = ScanGate(tmp_path / "scan-gate")
    gated = server_params(
        Settings().home, RESEARCH_MCP_CORPUS=str(notes), RESEARCH_MCP_MODEL="extractive", **gate.env()
    )
    async with Client(gated, mode="legacy") as client:  # a new process; no waiting this time
        await gate.wait_for("held")  # its start-up pass is about to scan the folders
        scouts: list[Any] = []

        async def scout() -> None:
            scouts.append(await client.call_tool("scout_sources", {"topic": "kelp forests survey"}))

        async with anyio.create_task_group() as group:
            group.start_soon(scout)
            with anyio.fail_after(120):  # stops a hang
                while not gate.says("waiting") and not scouts:  # the search waits for the scan (or,
                    await anyio.sleep(0.02)  # were that broken, answered during it: asserted below)
            gate.open()
        planned = await client.call_tool(
            "plan_research", {"query": "What did the kelp forests survey record?"}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan",
                {"plan_id": planned.structured_content["id"], "wait_seconds": 50},  # type: ignore[index]
            ),
        )
        gaps = await client.call_tool("report_results", {"id": run.structured_content["id"], "view": "gaps"})  # type: ignore[index]
    [scouted] = scouts
    assert "corpus" not in scouted.structured_content["metrics"], scouted.content  # type: ignore[index]
    assert run.structured_content["status"] == "done", run.content  # type: ignore[index]
    assert "indexed so far" not in gaps.structured_content["text"]  # type: ignore[index]


async def test_a_search_during_the_scan_waits_to_know_and_a_corpus_read_whole_is_complete() -> None:
    progress = IndexProgress(known=5)
    progress.scanning()
    async with anyio.create_task_group() as group:
        answers: list[bool] = []

        async def search() -> None:
            answers.append(await anyio.to_thread.run_sync(progress.wait_scanned, 30))

        group.start_soon(search)
        await anyio.sleep(0)
        progress.reading(total=5, up_to_date=5)  # the scan found nothing to read
    assert answers == [True]
    assert progress.status().complete and progress.status().line() == "corpus: 5 documents indexed"

    changed = IndexProgress(known=5)
    changed.scanning()
    changed.reading(total=6, up_to_date=4)  # one new document, one changed
    assert not changed.status().complete  # said: the new one is not searchable yet
    changed.document_done()
    changed.document_done()
    assert changed.status().complete  # all read; storing the last vectors hides nothing


@asynccontextmanager
async def raw_session(connection: str, server: MCPServer[Any]) -> AsyncIterator[RawSession]:
    """A JSON-RPC session by hand, in memory or over streamable HTTP (where tasks are the session's)."""
    if connection == "http":
        async with served_over_http(server) as url, streamable_http_client(url) as (read, write):
            yield RawSession(read, write)
        return
    async with InMemoryTransport(server) as (read, write):
        yield RawSession(read, write)


@pytest.mark.parametrize("connection", ["memory-2025-11-25", "http"])
async def test_a_tasks_requested_ttl_is_honoured_within_the_retention_and_an_expired_task_is_gone(
    connection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_TASK_RETENTION_DAYS", "1")
    day = 86_400_000
    server = create_server(model=ScriptedModel(team_script))
    async with raw_session(connection, server) as session:
        await session.open()

        async def started(task: dict[str, Any]) -> dict[str, Any]:
            """A task of a run of its own plan."""
            plan = await session.call(
                "plan_research", {"query": "three topics", "suggested_plan": three_leaf_plan()}
            )
            arguments = {"plan_id": plan["structuredContent"]["id"], "wait_seconds": 0}
            return dict((await session.call("execute_plan", arguments, task=task))["task"])

        asked = await started({"ttl": 60_000})
        capped = await started({"ttl": 5 * day})
        unasked = await started({})
        brief = await started({"ttl": 1})
        polled = await session.result("tasks/get", {"taskId": asked["taskId"]})
        with anyio.fail_after(60):  # 1 ms is past by the time the next request is read
            expired = await session.request("tasks/get", {"taskId": brief["taskId"]})
        listed = {task["taskId"] for task in (await session.result("tasks/list"))["tasks"]}
        still_a_run = await session.call("execute_plan", {"run_id": brief["taskId"], "wait_seconds": 0})
    assert (asked["ttl"], capped["ttl"], unasked["ttl"], polled["ttl"]) == (60_000, day, day, 60_000)
    assert expired["error"]["code"] == INVALID_PARAMS and "expired" in expired["error"]["message"]
    assert brief["taskId"] not in listed and asked["taskId"] in listed
    assert not still_a_run["isError"] and still_a_run["structuredContent"]["id"] == brief["taskId"]


# --- the TypeScript SDK's client validates every structuredContent against the typed outputSchemas ----

TS_CLIENT = Path(__file__).parent / "ts_client"


@pytest.fixture
def ts_client() -> Path:
    """tests/server/ts_client with its one dependency (the TypeScript SDK, pinned), as `make ts-client`
    installs it from the npm registry (best effort, before the tests: no test reaches the network);
    skipped where Node.js or the installed SDK is missing."""
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed")
    if not (TS_CLIENT / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.skip("the TypeScript SDK is not installed: run `make ts-client` (needs npm and its registry)")
    return TS_CLIENT


def test_the_typescript_sdk_validates_every_result_of_a_whole_flow_against_its_output_schema(
    ts_client: Path, script: Path, research_home: Path
) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "RESEARCH_MCP_HOME": str(research_home),
        "RESEARCH_MCP_MODEL": "extractive",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        ["node", "check.mjs", str(script)],
        cwd=ts_client,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["typed"] and report["status"] == "done"
    assert len(report["calls"]) == 13  # each result passed the SDK's outputSchema check, or callTool threw

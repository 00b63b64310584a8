"""API keys reach only their own API: never the store, never the logs, never a tool result."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.server.app import create_server
from tests.handshake import INITIALIZE
from tests.llm.fake_anthropic import FakeMessagesAPI
from tests.secrets_harness import ECHO, SECRETS, SOURCES, echo_secrets, occurrences
from tests.sources.fake_tavily import FakeTavily

SECRET = "sk-ant-api03-SECRET-must-never-be-stored-0123456789"
TEXT = "The bridge opened in 1932. It carries eight lanes of traffic and a railway line."


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    with FakeMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        yield api


def _stored_bytes(home: Path) -> bytes:
    return b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())


async def test_the_anthropic_key_goes_only_to_the_api_and_is_never_stored_or_logged(
    fake: FakeMessagesAPI, research_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake.reply_tool_use(
        {
            "facts": [
                {
                    "statement": "It opened in 1932.",
                    "quote": "The bridge opened in 1932.",
                    "question_index": 0,
                }
            ],
            "answers": [],
            "confidence": {"level": "high", "reasoning": "stated"},
        }
    )
    # A failure too: error paths are where a key most often leaks into a message.
    fake.reply_error(401, "authentication_error", f"invalid x-api-key {SECRET[:12]}…")
    caplog.set_level(logging.DEBUG)
    async with Client(create_server()) as client:
        ok = await client.call_tool("extract_source", {"source": TEXT, "questions": ["When did it open?"]})
        failed = await client.call_tool("extract_source", {"source": TEXT, "questions": ["How many lanes?"]})
    assert not ok.is_error and failed.is_error
    # The SDK sends the key in a header of each request (which header depends on its version).
    assert all(SECRET in " ".join(request.headers.values()) for request in fake.requests)
    assert len(fake.requests) == 2
    assert SECRET not in str(ok) + str(failed)
    assert SECRET not in caplog.text
    assert SECRET.encode() not in _stored_bytes(research_home)
    assert Settings().database_path.is_file()  # the store that was searched is the one written


async def test_secrets_echoed_by_upstreams_are_found_nowhere(
    research_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    echo = await echo_secrets(research_home, lambda: caplog.text)

    assert echo.found == dict.fromkeys(echo.found, 0)
    assert echo.run_status in ("done", "partial")
    assert echo.tavily_requests == 2  # the run's search and the scout's, both answered 401 with the echo
    assert echo.redactions > 0  # the echoes did arrive, and were redacted
    assert "Web search for 'wind' failed" in echo.prompts  # the failure reached the synthesizer, redacted


async def test_the_stderr_of_a_stdio_server_never_shows_an_echoed_secret(tmp_path: Path) -> None:
    """The installed `research-mcp -v serve`: upstream errors that echo the keys are logged redacted."""
    with FakeMessagesAPI() as api, FakeTavily() as tavily:
        api.reply_error(400, "invalid_request_error", f"bad request for {ECHO}")
        tavily.reply(401, {"detail": {"error": f"Unauthorized: invalid API key {ECHO}"}})
        env = {
            "PATH": os.environ["PATH"],
            "HF_HUB_OFFLINE": "1",
            "RESEARCH_MCP_HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": api.url,
            "TAVILY_API_BASE_URL": tavily.url,
            **SECRETS,
        }
        script = Path(sys.executable).with_name("research-mcp")
        calls = [
            ("extract_source", {"source": SOURCES[0], "questions": ["When?"]}),
            ("scout_sources", {"topic": "bridges"}),
        ]
        with anyio.fail_after(90):
            async with await anyio.open_process([str(script), "-v", "serve"], env=env) as process:
                assert process.stdin is not None and process.stdout is not None and process.stderr is not None
                lines = TextReceiveStream(process.stdout)
                answers: list[str] = []
                buffered = ""

                async def send(message: dict[str, object]) -> None:
                    assert process.stdin is not None
                    await process.stdin.send((json.dumps(message) + "\n").encode())

                async def answer() -> str:
                    nonlocal buffered
                    while "\n" not in buffered:
                        buffered += await lines.receive()
                    line, buffered = buffered.split("\n", 1)
                    return line

                await send(INITIALIZE)
                answers.append(await answer())
                await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                for number, (name, arguments) in enumerate(calls, start=2):
                    await send(
                        {
                            "jsonrpc": "2.0",
                            "id": number,
                            "method": "tools/call",
                            "params": {"name": name, "arguments": arguments},
                        }
                    )
                    answers.append(await answer())
                await process.stdin.aclose()
                stderr = b""
                async for chunk in process.stderr:
                    stderr += chunk
        assert len(tavily.requests) == 1 and api.requests  # both echoes were received (the scout asks too)

    logged = stderr.decode()
    assert "[redacted]" in logged  # the echoes were logged, redacted
    assert occurrences(logged) == 0
    assert sum(occurrences(text) for text in answers) == 0

"""API keys reach only their own API: never the store, never the logs, never a tool result."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from research_mcp.config import Settings
from research_mcp.server.app import create_server
from tests.llm.fake_anthropic import FakeMessagesAPI

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

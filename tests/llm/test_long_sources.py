"""A long source is read whole by the no-key extractor (a manual's answer is rarely in its first pages),
while a model is still shown only its first MAX_SOURCE_CHARS."""

from __future__ import annotations

from typing import Any

from mcp import Client

from research_mcp.core.role_inputs import ExtractorPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.extractor import MAX_SOURCE_CHARS
from research_mcp.server.app import create_server

ANSWER = "The port mapper daemon listens on TCP port 4369 by default."


def _manual() -> str:
    """A manual of some 100,000 characters whose answer is in its last section."""
    sections = [
        f"## Region {n}\n\nRegion {n} has {n + 2} rivers, {n + 5} hills and a mild climate all year; "
        f"its towns trade grain, wool and timber along roads built in the year {1700 + n}.\n"
        for n in range(700)
    ]
    text = "# Atlas\n\n" + "\n".join(sections) + "\n## Networking\n\n" + ANSWER + "\n"
    assert text.index(ANSWER) > MAX_SOURCE_CHARS
    return text


async def test_the_no_key_extractor_finds_an_answer_past_the_first_max_source_chars() -> None:
    async with Client(create_server(model=ExtractiveModel())) as client:
        result = await client.call_tool(
            "extract_source",
            {"source": _manual(), "questions": ["Which TCP port does the port mapper daemon listen on?"]},
        )
        assert not result.is_error, result.content
        facts = await client.call_tool(
            "report_results", {"id": result.structured_content["id"], "view": "facts"}
        )
    text = facts.structured_content["text"]
    assert "4369" in text and "[verified]" in text, text


async def test_a_model_is_shown_only_the_first_max_source_chars_of_a_long_source() -> None:
    prompts: list[str] = []

    def script(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, ExtractorPayload):
            prompts.append(request.prompt)
        return team_script(request)

    async with Client(create_server(model=ScriptedModel(script))) as client:
        result = await client.call_tool(
            "extract_source", {"source": _manual(), "questions": ["Which port does the daemon use?"]}
        )
        assert not result.is_error, result.content
    [prompt] = prompts
    assert "4369" not in prompt and "truncated: only the beginning of the source is shown" in prompt
    assert len(prompt) < MAX_SOURCE_CHARS + 5000

"""A disagreement between sources is said wherever a person reads the result: the run's handle, its
confidence and gaps, and the summary view, not in the report alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    "kelp survey 2019.md": "# Kelp survey\n\nGiant kelp grows up to 61 centimetres per day in summer "
    "off the California coast.\n",
    "kelp field notes.md": "# Field notes\n\nGiant kelp grows up to 30 centimetres per day in summer "
    "off the California coast.\n",
}


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def test_a_disagreement_reaches_the_handle_and_the_summary(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        plan = await client.call_tool("plan_research", {"query": "How fast does giant kelp grow per day?"})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        handle = run.structured_content
        summary = await client.call_tool("report_results", {"id": handle["id"], "view": "summary"})
    assert handle["status"] == "done"
    said = " ".join(handle["summary"])
    assert "disagree" in said and "61" in said and "30" in said, said
    assert "confidence low" in said or "confidence medium" in said
    assert "disagree" in summary.structured_content["text"]

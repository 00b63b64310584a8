"""A run's handle leads with what was found: a part whose source could not be read does not make
the headline "no verified fact answers this" when another part found facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    "kelp forests.md": "# Kelp forests\n\nGiant kelp can grow up to 60 centimetres in a single day. "
    "Kelp forests grow in cold, nutrient-rich coastal waters. Sea otters protect kelp by eating urchins.\n",
}
PLAN = {
    "root": {
        "kind": "executor",
        "title": "Kelp",
        "children": [
            {
                "kind": "leaf",
                "title": "Kelp growth records",
                "questions": ["What is the record daily growth of bull kelp?"],
                "sources": ["http://127.0.0.1:9/kelp-records.html"],  # nothing listens there
            },
            {"kind": "leaf", "title": "Kelp growth", "questions": ["How fast does giant kelp grow?"]},
        ],
    }
}


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def test_the_handle_leads_with_a_finding_when_one_part_found_nothing(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        plan = await client.call_tool("plan_research", {"query": "Kelp growth", "suggested_plan": PLAN})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
    handle = run.structured_content
    assert handle["status"] in ("done", "partial"), handle
    assert "60 centimetres in a single day" in handle["summary"][0], handle["summary"]

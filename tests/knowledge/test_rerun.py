"""A question asked again, with nothing changed in its sources, is answered from what is stored:
the same plan, the same extractions and syntheses, and the report says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    "bees.md": (
        "# Honey bees\n\nHoney bees communicate the direction of food sources with a waggle dance. "
        "A colony can hold up to 60,000 worker bees in summer.\n"
    ),
    "queens.md": (
        "# Queens\n\nWorker honey bees live about six weeks during the busy summer season. "
        "Queens can live for several years and lay up to 2,000 eggs a day.\n"
    ),
    "volcanoes.md": (
        "# Volcanoes\n\nMount Vesuvius erupted in 79 AD and buried the Roman towns of Pompeii. "
        "Shield volcanoes such as Mauna Loa are built by fluid basalt lava flows.\n"
    ),
}
QUERY = "How do honey bee colonies live and communicate?"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def ask(client: Client) -> dict[str, Any]:
    planned = await client.call_tool("plan_research", {"query": QUERY})
    assert not planned.is_error, planned.content
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
        ),
    )
    assert not run.is_error, run.content
    assert run.structured_content["status"] == "done", run.structured_content
    return dict(run.structured_content)


async def test_the_same_question_asked_again_is_answered_from_what_is_stored(corpus: Path) -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        await wait_until_indexed(client)
        first = await ask(client)
        first_calls = [call.role for call in model.calls]
        second = await ask(client)
        second_calls = [call.role for call in model.calls[len(first_calls) :]]
        planned_again = await client.call_tool("plan_research", {"query": QUERY})
        summary = await client.call_tool("report_results", {"id": second["id"], "view": "summary"})

    assert len(first_calls) >= 3, first_calls  # planner, extractions, synthesis
    assert second_calls == [], second_calls  # not even the planner: the plan is the one given before
    assert second["metrics"]["facts"] == first["metrics"]["facts"] > 0
    assert second["metrics"]["reused"] == len(first_calls) - 1  # every extraction and synthesis
    assert "reused" not in first["metrics"]
    assert "answers reused, not asked again" in summary.structured_content["text"]
    assert "reused" in " ".join(planned_again.structured_content["summary"])

"""The summary view a host reads shows every part of the answer and every disagreement between
sources, however long the report is; its confidence comes first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

_KELP = " ".join(
    f"Kelp forest note {n}: giant kelp grows in cold water and shades the reef floor." for n in range(8)
)
NOTES = {
    "kelp survey.md": "# Kelp survey\n\nGiant kelp grows up to 61 centimetres per day in summer off the "
    f"California coast. {_KELP}\n",
    "kelp field notes.md": "# Field notes\n\nGiant kelp grows up to 30 centimetres per day in summer off "
    "the California coast.\n",
    "otters.md": "# Sea otters\n\nSea otters eat sea urchins, crabs and clams. Sea otters use stones to "
    "open shells. Sea otters rest in kelp canopies.\n",
    "reefs.md": "# Coral reefs\n\nCoral reefs grow in warm, shallow, clear tropical water. Coral reefs "
    "cover less than one percent of the ocean floor.\n",
}
QUERY = "How fast does giant kelp grow per day, what do sea otters eat, and where do coral reefs grow?"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def test_the_summary_shows_every_part_and_the_disagreement_after_the_confidence(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        plan = await client.call_tool("plan_research", {"query": QUERY})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == "done"
        run_id = run.structured_content["id"]
        summary = (
            await client.call_tool("report_results", {"id": run_id, "view": "summary"})
        ).structured_content
        report = (
            await client.call_tool("report_results", {"id": run_id, "view": "report"})
        ).structured_content
        sources = (
            await client.call_tool("report_results", {"id": run_id, "view": "sources"})
        ).structured_content
    headings = re.findall(r"^## (.+)$", report["text"], flags=re.MULTILINE)
    parts = [heading for heading in headings if "Contradictions" not in heading]
    assert len(parts) >= 3, report["text"]
    lines = summary["text"].splitlines()
    for heading in parts:
        assert f"## {heading}" in lines, (heading, summary["text"])
    assert lines[0].startswith("confidence: ")
    disagreement = next(i for i, line in enumerate(lines) if line.startswith("Sources disagree on"))
    assert "61 centimetres" in lines[disagreement] and "30 centimetres" in lines[disagreement]
    assert disagreement < lines.index(f"## {parts[0]}")  # said before the answer's parts
    # One count and one order: the sources the views list, most relevant first.
    listed = sources["text"].splitlines()
    assert f"{len(listed)} sources cited of " in summary["text"]
    relevance = [float(line.split("relevance=", 1)[1].split(" ", 1)[0]) for line in listed]
    assert relevance == sorted(relevance, reverse=True)

"""Follow-ups come from the run itself (no dead ends): never another run's question, never a
question the run was asked and left open restated as a follow-up (roles/followups.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    "alpha licence.md": "# The Alpha licence\n\nThe Alpha licence lets you combine the covered work into "
    "larger works. Each contributor grants a patent licence for its contributions.\n",
    "gamma notes.md": "# Gamma notes\n\nThe Alpha licence says nothing clear about the source code of "
    "larger works; ask the Alpha licence stewards about the source code.\n",
    "beta licence.md": "# The Beta licence\n\nThe Beta licence requires the source code of larger works "
    'to be released under the Beta licence, as their "Corresponding Source". The Beta licence grants '
    "patent licences too.\n",
}
EARLIER = "What does the Alpha licence say about the source code of larger works?"
LATER = "What does the Beta licence say about the source code of larger works?"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def _followups(client: Client, query: str) -> list[str]:
    plan = await client.call_tool("plan_research", {"query": query})
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
        ),
    )
    assert run.structured_content["status"] == "done", run.content
    page = await client.call_tool("report_results", {"id": run.structured_content["id"], "view": "followups"})
    return str(page.structured_content["text"]).splitlines()


async def test_a_run_suggests_no_follow_up_from_another_run_nor_its_own_questions_again(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        earlier = await _followups(client, EARLIER)
        later = await _followups(client, LATER)
    assert earlier != ["no follow-ups suggested"] and later != ["no follow-ups suggested"]  # no dead end
    assert any('"Corresponding Source"' in line for line in later), later  # a term its source defines
    for line in later:
        assert "Alpha licence say" not in line, later  # the earlier run's question
        assert line.rstrip("?") != LATER.rstrip("?"), later

"""A comparison's sections through the tools: each item's section cites its own item's sources only,
whatever earlier runs found on other items (given as prior findings) and whatever the sweep for
both items read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    "Alpha-2 licence.txt": "The Alpha-2 licence. Each contributor grants you a perpetual patent licence "
    "to make and sell the work. A patent licence under Alpha-2 ends if you sue a contributor for patent "
    "infringement.\n",
    "Beta-3 licence.txt": "The Beta-3 licence. Every author grants a worldwide patent licence covering "
    "the essential patent claims of the covered work. Beta-3 forbids patent licences that discriminate "
    "against recipients.\n",
    "Gamma-1 licence.txt": "The Gamma-1 licence. A contributor grants a revocable patent licence upon "
    "written notice for its own contributions. Patent grants end when the contributor withdraws them.\n",
}
QUERY = "Compare the Alpha-2 and the Beta-3 licence on patent grants"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


def _sections(report: str) -> dict[str, str]:
    """The report's sections by heading."""
    parts = re.split(r"^## (.+)$", report, flags=re.MULTILINE)
    return {heading: body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def _cited_sources(section: str, facts: str) -> set[str]:
    """The titles of the sources the facts cited in a section come from (facts view: `F1 ... S2 ...`)."""
    source_of = dict(re.findall(r"^(F\d+) \[[^\]]*\] (S\d+)", facts, flags=re.MULTILINE))
    return {source_of[fact] for fact in re.findall(r"F\d+", section) if fact in source_of}


async def test_each_compared_item_is_answered_from_its_own_sources_run_after_run(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        # An earlier run on a third licence: its facts are known when the comparison runs, twice.
        for query in ("What does the Gamma-1 licence grant about patents?", QUERY, QUERY):
            plan = await client.call_tool("plan_research", {"query": query})
            run = await until_finished(
                client,
                await client.call_tool(
                    "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
                ),
            )
            assert run.structured_content["status"] == "done"
            if query != QUERY:
                continue
            views = {
                view: (
                    await client.call_tool(
                        "report_results", {"id": run.structured_content["id"], "view": view}
                    )
                ).structured_content["text"]
                for view in ("report", "facts", "sources")
            }
            titles = dict(re.findall(r"^(S\d+) (.+?) <", views["sources"], flags=re.MULTILINE))
            sections = _sections(views["report"])
            cited = {
                heading: {titles.get(s, s) for s in _cited_sources(body, views["facts"])}
                for heading, body in sections.items()
                if "Alpha-2" in heading or "Beta-3" in heading
            }
            assert len(cited) == 2, sections.keys()
            for heading, sources in cited.items():
                item = "Alpha-2" if "Alpha-2" in heading else "Beta-3"
                assert sources and all(item in title for title in sources), (
                    heading,
                    sources,
                    views["sources"],
                )

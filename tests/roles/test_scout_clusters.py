"""The scout's sweep clusters what it finds and keeps to its own time box: a near-duplicate is
folded into the first found and listed as excluded with its reason, one site's pages beyond two go
after the other sites', and a sweep whose box closes ranks what it found and names the searches it
did not make. Through scout_sources, with a loopback fake Tavily."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import ScoutInput
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.sweep import cluster
from research_mcp.server.app import create_server
from research_mcp.sources.library import Candidate
from research_mcp.storage.outputs import StoredCuration
from research_mcp.storage.store import Store
from tests.sources.fake_tavily import FakeTavily

RESULTS = [
    {
        "url": "https://a.example/one",
        "title": "Kelp forests",
        "content": "Kelp forests grow fast.",
        "score": 0.9,
    },
    {
        "url": "https://a.example/two",
        "title": "Kelp growth rates",
        "content": "Kelp grows 60 cm.",
        "score": 0.8,
    },
    {
        "url": "https://a.example/three",
        "title": "Kelp and otters",
        "content": "Otters eat urchins.",
        "score": 0.7,
    },
    {
        "url": "https://b.example/kelp",
        "title": "Kelp forests - B Encyclopedia",
        "content": "Kelp.",
        "score": 0.6,
    },
    {"url": "https://c.example/kelp", "title": "Giant kelp biology", "content": "Giant kelp.", "score": 0.5},
]


@pytest.fixture
def tavily(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTavily]:
    with FakeTavily() as fake:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_API_BASE_URL", fake.url)
        yield fake


def curation(handle: dict[str, Any]) -> StoredCuration:
    output = Store(Settings().database_path).get_handoff(handle["id"]).output_as(StoredCuration)
    assert output is not None
    return output


async def test_near_duplicates_fold_and_one_site_cannot_fill_the_list_the_ranker_reads(
    tavily: FakeTavily,
) -> None:
    tavily.route("/search", lambda body: {"results": RESULTS})
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        scouted = await client.call_tool("scout_sources", {"topic": "kelp forests"})
    assert not scouted.is_error, scouted.content
    (call,) = model.calls_for("scout")
    assert isinstance(call.payload, ScoutInput)
    # The encyclopedia's "Kelp forests" is the first page's twin; a.example's third page goes last.
    assert [c.ref for c in call.payload.candidates] == [
        "https://a.example/one",
        "https://a.example/two",
        "https://c.example/kelp",
        "https://a.example/three",
    ]
    (folded,) = [
        item for item in curation(scouted.structured_content).excluded if "near-duplicate" in item.rationale
    ]
    assert folded.ref == "https://b.example/kelp"
    assert folded.rationale == "near-duplicate of 'Kelp forests' <https://a.example/one>"


async def test_a_sweep_whose_box_closes_ranks_what_it_found_and_names_what_it_did_not_search(
    tavily: FakeTavily, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_SWEEP_SECONDS", "1")
    tavily.reply(200, {"results": RESULTS[:1]})
    tavily.stall()  # the second angle's search never answers
    async with Client(create_server(), mode="legacy") as client:  # no key: the extractive backend
        scouted = await client.call_tool(
            "scout_sources", {"topic": "kelp forests", "queries": ["how fast does giant kelp grow"]}
        )
    assert not scouted.is_error, scouted.content
    output = curation(scouted.structured_content)
    assert [source.ref for source in output.sources] == ["https://a.example/one"]
    failure, scans = [item for item in output.failures if "box" in item]
    assert scans == "The sweep's time box closed after 0 of 1 quick scans."
    assert failure.startswith("The sweep's 1 s box closed before 1 of its 2 searches and crawls: ")
    assert "how fast does giant kelp grow" in failure


def test_cluster_keeps_corpus_documents_in_order_and_folds_titles_that_differ_by_a_site_suffix() -> None:
    found = [
        Candidate("corpus:1", "Tides", "", 0.5, "corpus"),
        Candidate("https://x.example/a", "Tides | X", "", 0.5, "web"),
        Candidate("corpus:2", "Waves", "", 0.5, "corpus"),
    ]
    kept, folded = cluster(found)
    assert [c.ref for c in kept] == ["corpus:1", "corpus:2"]
    assert [(f.candidate.ref, f.into.ref) for f in folded] == [("https://x.example/a", "corpus:1")]

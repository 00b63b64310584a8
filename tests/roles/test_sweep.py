"""The scout sweeps: it searches several angles (the topic, each sibling leaf's questions, the key
terms), maps a site the topic names, quick-scans candidates (their opening), tags each kept source
with the questions it covers, and each sibling leaf gets the sources that cover its own questions.
A discovery leaf's result is its discovery synthesis: the curated list its parent reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.answering.terms import terms
from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import (
    ExtractorInput,
    ScoutCandidate,
    ScoutInput,
    SynthesisInput,
    SynthesisPayload,
)
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.sweep import angles, covered, key_terms, sites_named
from research_mcp.server.app import create_server
from research_mcp.sources.opening_paragraph import opening, page_title
from research_mcp.storage.outputs import StoredCuration, StoredSynthesis
from research_mcp.storage.store import Store
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished
from tests.sources.fake_tavily import FakeTavily, web_through
from tests.sources.loopback import LoopbackServer

TOPIC = "tidal and wave power at sea"
TIDES = "How much power do tidal stations make?"
WAVES = "Why do storms wreck wave converters?"
# Two pages on each question; the tidal ones rank first for every search, so without coverage both
# leaves would be handed the tidal pages first.
PAGES = {
    "/tides-a.html": ("Tidal stations", "Tidal stations make power from the rise and fall of the sea."),
    "/tides-b.html": ("Sihwa Lake station", "The Sihwa Lake tidal station makes 254 megawatts of power."),
    "/waves-a.html": ("Wave converters", "Storms wreck many wave converters at sea within a year."),
    "/waves-b.html": ("Early wave devices", "Early wave converters were wrecked by winter storms."),
}


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeTavily, LoopbackServer]]:
    with FakeTavily() as tavily, LoopbackServer() as pages:
        for path, (title, text) in PAGES.items():
            html = f"<html><head><title>{title}</title></head><body><article><p>{text}</p></article></body></html>"
            pages.serve(path, html.encode())
        web_through(monkeypatch, tavily, pages)
        yield tavily, pages


def _results(pages: LoopbackServer, query: str) -> dict[str, Any]:
    """The pages sharing a term with the query, those sharing more first (the tidal pages on a tie)."""
    asked = set(terms(query))
    shared = {path: len(asked & set(terms(f"{title} {text}"))) for path, (title, text) in PAGES.items()}
    ranked = sorted((path for path in PAGES if shared[path]), key=lambda path: -shared[path])
    return {
        "results": [
            {
                "url": pages.url(path),
                "title": PAGES[path][0],
                "content": PAGES[path][1],
                "score": 0.9 - 0.1 * rank,
            }
            for rank, path in enumerate(ranked)
        ]
    }


async def _run(plan: dict[str, Any], model: ScriptedModel) -> str:
    async with Client(create_server(model=model)) as client:
        planned = await client.call_tool("plan_research", {"query": "marine energy", "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == "done", run.content
        return str(run.structured_content["id"])


def _leaf(question: str) -> dict[str, Any]:
    return {"kind": "leaf", "title": question, "questions": [question], "budget": {"max_sources": 1}}


async def test_each_sibling_leaf_reads_the_curated_source_that_covers_its_own_question(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    tavily, pages = web
    tavily.route("/search", lambda body: _results(pages, body["query"]))
    plan = {
        "root": {
            "kind": "executor",
            "title": "marine energy",
            "children": [
                {"kind": "discovery", "title": TOPIC},
                _leaf(TIDES),
                _leaf(WAVES),
            ],
        }
    }
    model = ScriptedModel(team_script)
    await _run(plan, model)

    searched = [body["query"] for body in tavily.bodies("/search")]
    assert searched[:3] == [TOPIC, TIDES, WAVES]  # the topic, then each leaf's question
    read = {call.payload.questions[0]: call.payload.source_ref for call in model.calls_for("extractor")}
    assert read[TIDES].rstrip("/").endswith("/tides-a.html")
    assert read[WAVES].rstrip("/").endswith("/waves-a.html")


async def test_the_discovery_synthesis_is_a_curated_list_with_coverage_that_the_parent_reads(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    tavily, pages = web
    tavily.route("/search", lambda body: _results(pages, body["query"]))
    unanswered = "What do offshore wind farms cost to insure?"
    plan = {
        "root": {
            "kind": "executor",
            "title": "marine energy",
            "children": [
                {"kind": "discovery", "title": TOPIC, "budget": {"max_sources": 3}},
                _leaf(TIDES),
                _leaf(unanswered),
            ],
        }
    }
    model = ScriptedModel(team_script)
    run_id = await _run(plan, model)

    store = Store(Settings().database_path)
    (scout,) = store.handoffs_for_run(run_id, role="scout")
    curation = scout.output
    assert isinstance(curation, StoredCuration)
    assert len(curation.sources) == 3  # the discovery leaf's budget
    assert curation.questions == [TIDES, unanswered]
    assert curation.uncovered == [2]
    assert curation.sources[0].covers == [1] and curation.sources[0].lead  # tagged and quick-scanned
    discovery = [
        h
        for h in store.handoffs_for_run(run_id, role="synthesizer")
        if (asked := h.input_as(SynthesisInput)) is not None and asked.discovery
    ]
    assert len(discovery) == 1
    assert discovery[0].input_as(SynthesisInput).input_handoffs == [scout.id]  # type: ignore[union-attr]
    listed = discovery[0].output
    assert isinstance(listed, StoredSynthesis)
    assert "1. Tidal stations" in listed.report and "covers Q1" in listed.report
    assert f"No source found for Q2: {unanswered}" in listed.gaps
    assert listed.confidence.level == "low"
    # The parent's synthesizer is given the curated list as a child report.
    parent = model.calls_for("synthesizer")[-1].payload
    assert isinstance(parent, SynthesisPayload)
    assert any("Coverage:" in child.report for child in parent.child_reports)
    # The manager finds it from the run's tree, and reads it and its sources.
    async with Client(create_server(model=model)) as client:
        tree = await client.call_tool("report_results", {"id": run_id, "view": "tree"})
        (line,) = [x for x in tree.structured_content["text"].splitlines() if "discovery:" in x]
        assert f"[done {discovery[0].id}]" in line
        listed_page = await client.call_tool("report_results", {"id": discovery[0].id, "view": "report"})
        assert f"- Q2 {unanswered}: no source found" in listed_page.structured_content["text"]
        sources = await client.call_tool("report_results", {"id": discovery[0].id, "view": "sources"})
        assert "covers=Q1" in sources.structured_content["text"]


async def test_a_site_the_topic_names_is_crawled_and_its_pages_quick_scanned(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    tavily, _ = web
    crawled = [f"https://docs.tides.example/guides/{name}.html" for name in ("tide-tables", "datums")]
    tavily.route("/search", lambda body: {"results": []})
    tavily.route(
        "/crawl",
        lambda body: {
            "base_url": body["url"],
            "results": [
                {"url": url, "raw_content": f"Guide\n\nThis guide to {url.rsplit('/', 1)[1]} explains tides."}
                for url in crawled
            ],
        },
    )
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        scouted = await client.call_tool("scout_sources", {"topic": "tide tables on docs.tides.example"})
        assert not scouted.is_error, scouted.content

    (crawl,) = tavily.bodies("/crawl")
    assert (crawl["url"], crawl["instructions"], crawl["limit"]) == (
        "https://docs.tides.example",
        "tide tables on docs.tides.example",
        10,
    )
    assert tavily.bodies("/map") == tavily.bodies("/extract") == []  # one request read the pages
    scout = Store(Settings().database_path).get_handoff(scouted.structured_content["id"])
    assert isinstance(scout.output, StoredCuration)
    assert {(s.title, s.lead) for s in scout.output.sources} == {
        ("docs.tides.example: tide tables", "This guide to tide-tables.html explains tides."),
        ("docs.tides.example: datums", "This guide to datums.html explains tides."),
    }


async def test_a_site_that_cannot_be_crawled_is_mapped_and_its_first_pages_extracted(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    tavily, _ = web
    mapped = [f"https://docs.tides.example/guides/{name}.html" for name in ("tide-tables", "datums", "about")]
    tavily.route("/search", lambda body: {"results": []})
    tavily.reply(403, {"detail": {"error": "crawl is not part of this plan"}})  # the crawl
    tavily.route("/map", lambda body: {"base_url": body["url"], "results": mapped})
    tavily.route(
        "/extract",
        lambda body: {
            "results": [
                {
                    "url": url,
                    "raw_content": f"Guide\n\nThis guide to {url.rsplit('/', 1)[1]} explains tide tables.",
                }
                for url in body["urls"]
            ]
        },
    )
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        scouted = await client.call_tool("scout_sources", {"topic": "tide tables on docs.tides.example"})
        assert not scouted.is_error, scouted.content

    assert len(tavily.bodies("/crawl")) == 1
    (site_map,) = tavily.bodies("/map")
    assert site_map["url"] == "https://docs.tides.example"
    assert site_map["instructions"] == "tide tables on docs.tides.example"
    assert site_map["limit"] == 10
    assert tavily.bodies("/extract")[0]["urls"] == mapped  # the quick scan of the first pages
    scout = Store(Settings().database_path).get_handoff(scouted.structured_content["id"])
    assert isinstance(scout.output, StoredCuration)
    assert scout.output.failures == []  # the map stood in for the crawl
    first = scout.output.sources[0]
    assert first.title == "docs.tides.example: tide tables"
    assert first.lead == "This guide to tide-tables.html explains tide tables."


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "heat-pumps.md").write_text(
        "# Heat pumps\n\nDraft 2\n\nA heat pump moves heat from the outside air into a house, running a "
        "compressor on electricity. It delivers three units of heat for each unit of electricity.\n\n"
        "## Costs\n\nInstalling one costs more than a gas boiler.\n",
        encoding="utf-8",
    )
    (folder / "boilers.md").write_text("# Gas boilers\n\nA gas boiler burns gas to heat water.\n", "utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    return folder


async def test_a_corpus_candidate_is_quick_scanned_by_its_opening_paragraph(notes: Path) -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        assert (await wait_until_indexed(client))["phase"] == "ready"
        scouted = await client.call_tool("scout_sources", {"topic": "heat pump electricity"})
        assert not scouted.is_error, scouted.content
    scout = Store(Settings().database_path).get_handoff(scouted.structured_content["id"])
    assert isinstance(scout.output, StoredCuration)
    heat = next(s for s in scout.output.sources if s.title.lower().startswith("heat"))
    assert heat.lead.startswith("A heat pump moves heat from the outside air")
    asked = scout.input_as(ScoutInput)
    assert asked is not None
    assert [c.lead for c in asked.candidates if c.ref == heat.ref] == [heat.lead]  # ranked on it too


def test_angles_are_the_topic_queries_questions_and_key_terms_without_repeats() -> None:
    found = angles(
        "How does dpkg handle conffiles?",
        ["dpkg conffiles"],
        ["How does dpkg handle conffiles?", "What happens to a modified conffile on upgrade?"],
    )
    assert found == [
        "How does dpkg handle conffiles?",
        "dpkg conffiles",
        "What happens to a modified conffile on upgrade?",
        "dpkg handle conffiles",
    ]
    assert key_terms("What is the history of the Sihwa Lake station?") == "history Sihwa Lake station"
    assert len(angles("topic one", [f"angle number {n}" for n in range(10)], [])) == 6


def test_sites_are_addresses_and_domains_not_file_names_or_versions() -> None:
    assert sites_named(["guides at docs.python.org/3/howto and https://example.com/a?b=1."]) == [
        "https://docs.python.org/3/howto",
        "https://example.com/a?b=1",
    ]
    assert sites_named(["read report.pdf and config.yaml with Python 3.11 and Node.js"]) == []


def test_a_source_covers_a_question_it_shares_two_terms_with_or_one_when_it_led_its_search() -> None:
    candidate = ScoutCandidate(
        index=0, ref="corpus:1", title="Tidal stations", lead="They make power at sea."
    )
    assert covered(candidate, [TIDES, WAVES], led=[]) == [1]
    assert covered(candidate, [TIDES, WAVES, "Where do waves reach the sea?"], led=[WAVES]) == [1]
    assert covered(
        candidate, [TIDES, "Where do waves reach the sea?"], led=["Where do waves reach the sea?"]
    ) == [1, 2]


def test_an_opening_skips_headings_and_short_lines_and_a_page_title_comes_from_its_address() -> None:
    assert opening("# Title\n\nBy A. Writer\n\n" + "Long prose sentence here. " * 20).startswith("Long prose")
    assert len(opening("word " * 200)) <= 301
    assert page_title("https://www.example.org/docs/getting-started.html") == "example.org: getting started"
    assert page_title("https://example.org/") == "example.org"


async def test_a_site_that_can_be_neither_crawled_nor_mapped_is_named_and_the_scout_still_ranks_the_searches(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    tavily, pages = web
    tavily.route("/search", lambda body: _results(pages, body["query"]))
    tavily.reply(432, {"detail": {"error": "plan limit"}})  # the crawl, the first request not routed
    tavily.reply(432, {"detail": {"error": "plan limit"}})  # the map
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        scouted = await client.call_tool("scout_sources", {"topic": "tidal power on docs.tides.example"})
        assert not scouted.is_error, scouted.content
    scout = Store(Settings().database_path).get_handoff(scouted.structured_content["id"])
    assert isinstance(scout.output, StoredCuration)
    assert [
        f
        for f in scout.output.failures
        if f.startswith("Site crawl and map of https://docs.tides.example failed")
    ]
    assert "HTTP 432" in scout.output.failures[-1]
    assert scout.output.sources[0].title == "Tidal stations"


async def test_a_source_touching_two_leaves_questions_goes_to_the_leaf_it_is_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    notes = {
        "mpl.md": "# Mozilla Public License\n\nIf you distribute a modified covered file, you must make "
        "the source code of that file available under the Mozilla Public License.\n",
        "apache.md": "# Apache License\n\nYou must give recipients of the work a copy of this License, "
        "and modified files must carry notices saying that you changed them.\n",
        "triggers.md": "# dpkg triggers\n\nA dpkg trigger defers work until the end of a run: when many "
        "packages modified the same file, the cache is rebuilt once, after the last of them.\n",
        "bsd.md": "# BSD licence\n\nRedistributions in binary form must reproduce the copyright notice.\n",
        "mit.md": "# MIT licence\n\nThe copyright notice shall be included in all copies of the software.\n",
        "gpl.md": "# GNU General Public License\n\nYou may convey a modified version of the program under "
        "this License, and must license the entire work to anyone who gets a copy.\n",
        "protected.md": "# dpkg protected packages\n\nA package marked Protected is one dpkg will not "
        "remove without an explicit force option.\n",
        "rootless.md": "# dpkg rootless builds\n\nA package built without root sets its files' owners "
        "through dpkg-deb instead.\n",
    }
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    mpl = "What does the Mozilla Public License require when a covered file is modified?"
    triggers = "How do dpkg triggers defer work until the end of a run?"
    plan = {
        "root": {
            "title": "Licences and dpkg",
            "kind": "executor",
            "children": [
                {"title": "find sources", "kind": "discovery", "questions": ["Which notes bear on these?"]},
                {"title": "MPL", "kind": "leaf", "questions": [mpl]},
                {"title": "triggers", "kind": "leaf", "questions": [triggers]},
            ],
        }
    }
    async with Client(create_server()) as client:
        assert (await wait_until_indexed(client))["phase"] == "ready"
        planned = await client.call_tool(
            "plan_research", {"query": "MPL and triggers", "suggested_plan": plan}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == "done", run.content

    store = Store(Settings().database_path)
    read: dict[str, set[str]] = {mpl: set(), triggers: set()}
    for handoff in store.handoffs_for_run(run.structured_content["id"], role="extractor"):
        asked = handoff.input_as(ExtractorInput)
        assert asked is not None and handoff.node_id is not None
        if handoff.node_id.endswith("/scan"):  # the scout's quick scans
            continue
        document = store.corpus_document(int(asked.source_ref.split(":", 1)[1]))
        assert document is not None
        read[asked.questions[0]].add(Path(document.path).name)
    assert "triggers.md" in read[triggers]
    assert "mpl.md" in read[mpl]

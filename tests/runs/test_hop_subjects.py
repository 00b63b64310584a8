"""The second hop and the subjects of the sources already read: a name that titles one of them is
asked of it; a compared item's leaf that has read the item's own source does not search further."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_mcp.core.config import Settings
from research_mcp.core.contracts import Fact
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.runs.leads import bridge_entities
from research_mcp.storage.events import Searched, SecondHop
from research_mcp.storage.store import Store
from tests.runs.test_reading_further import run_plan
from tests.runs.test_second_hop import extractor_script, research


def write_notes(folder: Path, notes: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    folder.mkdir()
    for name, text in notes.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))


def fact(ident: int, source_id: int, statement: str) -> Fact:
    return Fact(
        id=ident,
        statement=statement,
        quote="x",
        source_id=source_id,
        location=None,
        confidence=0.8,
        verified=True,
    )


def test_a_name_that_titles_another_source_read_is_a_bridge_and_a_sources_own_title_is_not() -> None:
    facts = [
        fact(1, 1, "Sachin Warrier worked as a software engineer at Tata Consultancy Services."),
        fact(2, 2, "Tata Consultancy Services has its head office in Mumbai."),
    ]
    titles = {1: "Sachin Warrier", 2: "Tata Consultancy Services"}

    leads = bridge_entities(facts, ["Where is the company Sachin Warrier worked for based?"], titles=titles)

    named = [(lead.text, lead.source_id) for lead in leads]
    assert ("Tata Consultancy Services", 1) in named  # named by the singer's page: asked of its own
    assert "Mumbai" in [text for text, _ in named]
    assert ("Tata Consultancy Services", 2) not in named  # its own page does not lead to itself


SINGER = "Where is the company that Sachin Warrier worked for as a software engineer headquartered?"


async def test_a_source_read_first_that_a_bridge_names_is_asked_again_what_the_bridge_leaves_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(
        tmp_path / "notes",
        {
            "Sachin Warrier": "Sachin Warrier worked as a software engineer at Tata Consultancy Services.",
            # Read first (the corpus has three notes) with the leaf's question, of which it shares no word.
            "Tata Consultancy Services": "Tata Consultancy Services has its head office in Mumbai.",
            "Kanave Kalayathe": "Kanave Kalayathe is an album by a playback singer.",
        },
        monkeypatch,
    )

    run_id = await research(SINGER)

    store = Store(Settings().database_path)
    asked = [h.input_as(ExtractorInput) for h in store.handoffs_for_run(run_id, role="extractor")]
    company = [a for a in asked if a is not None and a.source_title == "Tata Consultancy Services"]
    assert [a.questions[0].split(":")[0] for a in company] == [
        SINGER.split(":")[0],
        "Tata Consultancy Services",
    ]
    assert "Sachin Warrier" in company[1].context  # told the fact that named it
    facts = store.facts_for_handoffs([h.id for h in store.handoffs_for_run(run_id, role="extractor")])
    assert any("head office in Mumbai" in f.statement and f.verified for f in facts)


async def test_a_compared_items_leaf_that_read_the_items_own_source_searches_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(
        tmp_path / "notes",
        {
            "Local H": "Local H is a rock band from Zion, Illinois in the United States.",
            "For Against": "For Against is a band from Lincoln, Nebraska in the United States.",
            "Zion, Illinois": "Zion is a city in Lake County, Illinois, United States.",
            "Lincoln, Nebraska": "Lincoln is the capital of Nebraska, United States.",
            "Lake County": "Lake County lies north of Chicago, Illinois, on Lake Michigan.",
            "Nebraska": "Nebraska is a state of the Great Plains, United States.",
        },
        monkeypatch,
    )

    question = "Are Local H and For Against both from the United States?"
    items = [
        {"kind": "leaf", "title": item, "questions": [question], "search_queries": [item]}
        for item in ("Local H", "For Against")
    ]
    run_id = await run_plan(
        {"kind": "executor", "title": question, "children": items}, extractor_script, index=True
    )

    store = Store(Settings().database_path)
    hops = store.events_for_run(run_id, SecondHop)
    assert len(hops) == 2 and all(hop.chosen == [] for hop in hops)
    assert all("no search" in hop.message for hop in hops)
    searches = [e for e in store.events_for_run(run_id, Searched) if e.node_id]
    assert searches == []  # the hop's searches are recorded with their leaf; none was made


COAST = "Which coastal area lies north of the medieval fortress in the village of Dirleton?"


async def test_what_the_first_sources_left_open_is_searched_for_and_the_page_that_says_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(
        tmp_path / "notes",
        {
            # Read first: each says where the fortress is, none names a coast.
            "dirleton-castle": "Dirleton Castle is a medieval fortress in the village of Dirleton, north of the green.",
            "dirleton-village": "Dirleton is a village with a medieval fortress and a church, north of Haddington.",
            "fortress-list": "A medieval fortress in the village of Dirleton lies north of the road to Tantallon.",
            # Found by the question's search below them, and named by none of their facts.
            "yellowcraig": "Yellowcraig is a coastal area of dunes and beach.",
            "haddington": "Haddington is a town south of Dirleton.",
        },
        monkeypatch,
    )

    # The leaf searches for the fortress; its question asks for the coast.
    leaf = {
        "kind": "leaf",
        "title": COAST,
        "questions": [COAST],
        "search_queries": ["medieval fortress Dirleton"],
    }
    run_id = await run_plan(
        {"kind": "executor", "title": COAST, "children": [leaf]}, extractor_script, index=True
    )

    store = Store(Settings().database_path)
    [hop] = store.events_for_run(run_id, SecondHop)
    assert [f.text for f in hop.followed if f.kind == "open"] == ["coastal area"]
    assert store.latest_source(hop.chosen[0].ref).title == "yellowcraig"  # type: ignore[union-attr]
    facts = store.facts_for_handoffs([h.id for h in store.handoffs_for_run(run_id, role="extractor")])
    assert any(
        f.statement == "Yellowcraig is a coastal area of dunes and beach." and f.verified for f in facts
    )


async def test_a_source_read_first_whose_subject_a_longer_bridge_names_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(
        tmp_path / "notes",
        {
            "The Family Man": "The Family Man is a film written by David Diamond and David Weissman.",
            "David Weissman": "David Weissman is a screenwriter. His credits include Evolution.",
            "Deadfall": "Deadfall is a film starring Nicolas Cage.",
        },
        monkeypatch,
    )

    run_id = await research("What screenwriter with credits for Evolution co-wrote The Family Man?")

    store = Store(Settings().database_path)
    asked = [h.input_as(ExtractorInput) for h in store.handoffs_for_run(run_id, role="extractor")]
    screenwriter = [a for a in asked if a is not None and a.source_title == "David Weissman"]
    # The name the film's page gives joins two people; one of them is a page already read.
    assert len(screenwriter) == 2
    assert screenwriter[1].questions[0].startswith("David Diamond and David Weissman:")

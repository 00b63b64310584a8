"""The second hop: a leaf follows the names its first sources give to the source that answers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.answering.terms import terms
from research_mcp.core.config import Settings
from research_mcp.core.contracts import Answer, ClaimedFact, Confidence, ExtractorOutput, Fact
from research_mcp.core.feasibility import HOP_SOURCES, SOURCES_PER_LEAF
from research_mcp.core.role_inputs import ExtractorInput, ExtractorPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.leads import bridge_entities, named_entities
from research_mcp.server.app import create_server
from research_mcp.storage.events import SecondHop, SourcesChosen
from research_mcp.storage.store import Store
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished

QUESTION = "Where is the director of the film Big Stone Gap based?"
NOTES = {
    # The film's page names its director; only the director's page says where she is based.
    "big-stone-gap-film": "Big Stone Gap is a 2014 romantic comedy film directed by Adriana Trigiani.",
    "trigiani-profile": "Adriana Trigiani is an author who lives in Greenwich Village, New York City.",
    # Pages closer to the question's words than the profile, so a single search reads them first.
    "directors-guild": "The Directors Guild of America is based in Los Angeles and serves the film director.",
    "film-directors": "Many a film director is based in New York and works on a film each year.",
    "stone-gap-town": "Big Stone Gap is a town in Wise County, Virginia, where a film was shot.",
}
ANSWER = "Adriana Trigiani is an author who lives in Greenwich Village, New York City."


def extractor_script(request: ModelRequest[Any]) -> Any:
    """An extractor that quotes each sentence sharing a word with the questions, more confident the
    more words it shares; the other roles as the team script answers them."""
    payload = request.payload
    if not isinstance(payload, ExtractorPayload):
        return team_script(request)
    asked = {term for question in payload.questions for term in terms(question)}
    facts = []
    for sentence in re.split(r"(?<=\.)\s+", payload.source_text.strip()):
        shared = len(set(terms(sentence)) & asked)
        if shared:
            facts.append(
                ClaimedFact(
                    statement=sentence,
                    quote=sentence,
                    question_index=0,
                    confidence=min(0.95, 0.5 + shared / 10),
                )
            )
    return ExtractorOutput(
        facts=facts,
        answers=[
            Answer(question=q, answer=facts[0].statement if facts else "none") for q in payload.questions
        ],
        confidence=Confidence(level="medium", reasoning="scripted"),
    )


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    return folder


async def research(question: str) -> str:
    async with Client(create_server(model=ScriptedModel(extractor_script))) as client:
        assert (await wait_until_indexed(client))["phase"] == "ready"
        plan = await client.call_tool("plan_research", {"query": question})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == "done", run.structured_content
        return str(run.structured_content["id"])


async def test_the_plans_estimate_counts_the_sources_the_second_hop_reads(notes: Path) -> None:
    run_id = await research(QUESTION)
    store = Store(Settings().database_path)
    run = store.get_run(run_id)
    estimate = store.get_plan(run.plan_ids[0]).estimate
    assert estimate is not None
    [hop] = store.events_for_run(run_id, SecondHop)
    assert hop.chosen  # the hop read sources the first pass did not
    extractions = store.handoffs_for_run(run_id, role="extractor")
    # Every extraction the run made, the hop's included, was in the estimate the user agreed to.
    assert estimate.calls_by_role["extractor"] == SOURCES_PER_LEAF + HOP_SOURCES
    assert len(extractions) == SOURCES_PER_LEAF + len(hop.chosen)
    assert len(extractions) <= estimate.calls_by_role["extractor"]


async def test_the_second_hop_reads_the_source_a_bridge_name_leads_to_and_cites_its_fact(notes: Path) -> None:
    run_id = await research(QUESTION)
    store = Store(Settings().database_path)
    first = store.events_for_run(run_id, SourcesChosen)[0]
    extractions = [h.id for h in store.handoffs_for_run(run_id, role="extractor")]
    facts = store.facts_for_handoffs(extractions)
    titles = {store.get_source(f.source_id).title for f in facts}
    # A single search does not reach the profile: its words are not the question's.
    assert "trigiani-profile" not in {store.latest_source(ref).title for ref in first.refs}  # type: ignore[union-attr]
    [hop] = store.events_for_run(run_id, SecondHop)
    assert hop.followed[0].text == "Adriana Trigiani"
    assert "trigiani-profile" in titles
    answer = next(f for f in facts if f.statement == ANSWER)
    assert answer.verified
    # The leaf's synthesis cites it: the answer reaches the report.
    leaf = store.handoffs_for_run(run_id, role="synthesizer")[0]
    assert f"[F{answer.id}]" in str(leaf.output.report)  # type: ignore[union-attr]


def test_names_are_runs_of_capitalised_words_not_sentence_openers_dates_or_punctuation() -> None:
    assert named_entities(
        "Ralph Franklin Hefferline (15 February 1910 in Muncie, Indiana) was a professor at Columbia University."
    ) == ["Ralph Franklin Hefferline", "February", "Muncie", "Indiana", "Columbia University"]
    assert named_entities("However, the Bank of America Tower opened. Founded in 1999, it grew.") == [
        "Bank of America Tower"
    ]


def test_a_bridge_is_a_name_the_question_does_not_use_nearest_to_what_was_asked() -> None:
    fact = Fact(
        id=1,
        statement="Ralph Franklin Hefferline (15 February 1910 in Muncie, Indiana) was a psychology "
        "professor at Columbia University.",
        quote="x",
        source_id=1,
        location=None,
        confidence=0.8,
        verified=True,
    )
    leads = bridge_entities(
        [fact], ["Ralph Hefferline was a psychology professor at a university in what city?"]
    )
    # The person the question names and the month are no bridges; the university he taught at is.
    assert [lead.text for lead in leads][:1] == ["Columbia University"]
    assert "Ralph Franklin Hefferline" not in [lead.text for lead in leads]
    assert "February" not in [lead.text for lead in leads]


PORTRAYAL = "What government position was held by the woman who portrayed Corliss Archer in Kiss and Tell?"
PORTRAYAL_NOTES = {
    # The film's page names the actress; her page gives the position in a sentence that names
    # neither her nor any word of the question: "she" refers back to the sentence before.
    "kiss-and-tell": "Kiss and Tell is a 1945 comedy film starring Shirley Temple as Corliss Archer.",
    "temple-biography": (
        "Shirley Temple Black was an actress and dancer from Santa Monica. As an adult, she was named "
        "ambassador to Ghana and served as Chief of Protocol of the United States."
    ),
    # Closer to the question's words than the biography, so the first search reads them instead.
    "corliss-archer": "Corliss Archer is a teenager portrayed in radio plays and in a film of 1945.",
    "government-posts": "A government position is held by a woman or a man appointed to it.",
    "portrayals": "The woman who portrayed a character in a film is credited as its actress.",
}
POSITION = (
    "As an adult, she was named ambassador to Ghana and served as Chief of Protocol of the United States."
)


async def test_a_bridge_a_source_already_read_is_about_is_asked_of_that_source_not_searched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    notes = {
        "Big Stone Gap (film)": "Big Stone Gap is a 2014 film directed by Adriana Trigiani.",
        # Read first (the corpus has three notes), asked the leaf's question, which it does not answer.
        "Adriana Trigiani (author)": "Adriana Trigiani is an author. She lives in Greenwich Village.",
        "Big Stone Gap (town)": "Big Stone Gap is a town in Wise County, Virginia.",
    }
    for name, text in notes.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    run_id = await research(QUESTION)
    store = Store(Settings().database_path)
    [hop] = store.events_for_run(run_id, SecondHop)
    again = [chosen for chosen in hop.chosen if chosen.again]
    assert [store.latest_source(chosen.ref).title for chosen in again] == ["Adriana Trigiani (author)"]  # type: ignore[union-attr]
    asked = [
        extraction.input_as(ExtractorInput) for extraction in store.handoffs_for_run(run_id, role="extractor")
    ]
    profile = [a.questions for a in asked if a is not None and a.source_title == "Adriana Trigiani (author)"]
    # First the leaf's question; then, again, only what the bridge leaves open about her.
    assert profile[0] == [QUESTION]
    assert len(profile) == 2 and profile[1][0].startswith("Adriana Trigiani:")
    # Asked again, not read again: the run counts three sources.
    assert store.get_run(run_id).status == "done"
    assert len({a.source_id for a in asked if a is not None}) == 3

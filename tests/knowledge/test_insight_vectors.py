"""What earlier sources left open is matched to a later question by meaning as well as by terms:
insights have vectors in the knowledge index (the facts' embedder and engine), given on first use,
so a data folder from before keeps working and its insights are found by meaning from then on."""

from __future__ import annotations

from typing import Any

from mcp import Client

from research_mcp.answering.terms import terms
from research_mcp.core.config import Settings
from research_mcp.core.contracts import ExtractorOutput, FollowUpQuestion
from research_mcp.core.role_inputs import ExtractorInput, ExtractorPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.prior import related
from research_mcp.server.app import create_server
from research_mcp.sources.process_objects import open_knowledge_index
from research_mcp.storage.events import InsightsGiven
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished

BARRAGES = (
    "Tidal barrages hold back the sea behind a dam across an estuary. La Rance in France has run "
    "since 1966 and the Sihwa Lake barrage since 2011."
)
DAMS = "A dam across a river mouth turns the tide into electricity, as at La Rance and Sihwa Lake."
# What the first source leaves open, and the later question: the same ask, no content term shared.
COST = "How much does it cost to build a tidal barrage?"
PRICE = "What is the price of constructing a tide dam?"


def one_leaf(title: str, question: str, source: str, **leaf: Any) -> dict[str, Any]:
    node = {"kind": "leaf", "title": title, "questions": [question], "sources": [source], **leaf}
    return {"root": {"kind": "executor", "title": f"about {title}", "children": [node]}}


def leaves_cost_open(request: ModelRequest[Any]) -> Any:
    """The team's answers, the first source's extractor raising the question of cost."""
    output = team_script(request)
    if isinstance(request.payload, ExtractorPayload) and "estuary" in request.payload.source_text:
        assert isinstance(output, ExtractorOutput)
        output.follow_up_questions = [
            FollowUpQuestion(question=COST, confidence=0.3, rationale="no cost given")
        ]
    return output


async def research(query: str, plan: dict[str, Any]) -> str:
    async with Client(create_server(model=ScriptedModel(leaves_cost_open))) as client:
        planned = await client.call_tool("plan_research", {"query": query, "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
            ),
        )
    assert run.structured_content["status"] == "done", run.structured_content
    return str(run.structured_content["id"])


def insight_vectors() -> int:
    with open_knowledge_index(Settings()) as index:
        return index.count("insights")


async def test_a_question_an_earlier_source_left_open_in_other_words_is_found_by_meaning(
    monkeypatch: Any,
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_INSIGHT_VECTORS", "1")
    intense = {"task_specs": [{"questions": ["What are tidal barrages?"], "discovery_intense": True}]}
    await research("tidal barrages", one_leaf("barrages", "What are tidal barrages?", BARRAGES, **intense))
    # A data folder as it was before insights had vectors: the insight is in SQLite alone.
    assert insight_vectors() == 0
    later = await research(PRICE, one_leaf("price", PRICE, DAMS))

    assert not set(terms(COST)) & set(terms(PRICE)) and not related(COST, PRICE)
    store = Store(Settings().database_path)
    (given,) = store.events_for_run(later, InsightsGiven)
    assert [item.text for item in store.get_insights(given.insight_ids)] == [COST]
    # The later leaf's source was asked it too, and the insight now has its vector.
    asked = [h.input_as(ExtractorInput) for h in store.handoffs_for_run(later, role="extractor")]
    assert any(a is not None and COST in a.questions for a in asked)
    assert insight_vectors() == 1


async def test_by_default_insights_are_matched_by_their_terms_alone() -> None:
    intense = {"task_specs": [{"questions": ["What are tidal barrages?"], "discovery_intense": True}]}
    await research("tidal barrages", one_leaf("barrages", "What are tidal barrages?", BARRAGES, **intense))
    paraphrase = await research(PRICE, one_leaf("price", PRICE, DAMS))

    assert Store(Settings().database_path).events_for_run(paraphrase, InsightsGiven) == []
    assert insight_vectors() == 0


async def test_without_the_index_insights_are_still_matched_by_their_terms(monkeypatch: Any) -> None:
    monkeypatch.setenv("RESEARCH_MCP_INSIGHT_VECTORS", "1")
    intense = {"task_specs": [{"questions": ["What are tidal barrages?"], "discovery_intense": True}]}
    await research("tidal barrages", one_leaf("barrages", "What are tidal barrages?", BARRAGES, **intense))
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:9")  # a Qdrant server that is down
    reworded = "What does building a tidal barrage cost?"
    terms_only = await research(reworded, one_leaf("cost", reworded, DAMS))
    paraphrase = await research(PRICE, one_leaf("price", PRICE, DAMS))

    store = Store(Settings().database_path)
    (given,) = store.events_for_run(terms_only, InsightsGiven)
    assert [item.text for item in store.get_insights(given.insight_ids)] == [COST]
    assert store.events_for_run(paraphrase, InsightsGiven) == []

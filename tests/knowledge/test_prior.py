"""Known facts reach later research: as prior findings of a leaf's synthesizer, with their original
citations, and as the `known_facts` count of a plan; web facts read too long ago are not reused."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import SynthesisPayload
from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.reports import assemble_result
from research_mcp.server.app import create_server
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex
from tests.knowledge.kb import record, source
from tests.server.waiting import until_finished

EIFFEL = (
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris. "
    "Gustave Eiffel's company designed and built the tower."
)
METRO = (
    "The Paris Metro opened its first line in July 1900 during the World's Fair. "
    "Today the network has sixteen lines and more than three hundred stations."
)
BUILT = "When was the Eiffel Tower built?"


def one_leaf(title: str, question: str, text: str) -> dict[str, Any]:
    leaf = {"kind": "leaf", "title": title, "questions": [question], "sources": [text]}
    return {"root": {"kind": "executor", "title": f"about {title}", "children": [leaf]}}


async def test_prior_findings_reach_the_synthesizer_with_their_original_citations() -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        first = await client.call_tool(
            "plan_research",
            {
                "query": "Who built the Eiffel Tower?",
                "suggested_plan": one_leaf("tower", "Who built it?", EIFFEL),
            },
        )
        assert first.structured_content["metrics"]["known_facts"] == 0
        await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": first.structured_content["id"], "wait_seconds": 20}
            ),
        )

        second = await client.call_tool(
            "plan_research", {"query": BUILT, "suggested_plan": one_leaf("Paris in 1900", BUILT, METRO)}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": second.structured_content["id"], "wait_seconds": 20}
            ),
        )

    assert second.structured_content["metrics"]["known_facts"] >= 1
    store = Store(Settings().database_path)
    [eiffel_source] = [s for s in (store.get_source(i) for i in (1, 2)) if s.text == EIFFEL]
    [leaf_synthesis] = [
        call
        for call in model.calls_for("synthesizer")
        if isinstance(call.payload, SynthesisPayload) and call.payload.title == "Paris in 1900"
    ]
    earlier = [fact for fact in leaf_synthesis.payload.facts if fact.source_id == eiffel_source.id]
    assert earlier and all(fact.verified and fact.quote in EIFFEL for fact in earlier)
    assert (
        f"[F{earlier[0].id}] (S{eiffel_source.id}, verified, from earlier research)" in leaf_synthesis.prompt
    )
    result = assemble_result(store, run.structured_content["id"])
    assert f"[F{earlier[0].id}]" in result.findings
    assert eiffel_source.ref in [s.url_or_path for s in result.sources]


@pytest.fixture
def knowledge(tmp_path: Path) -> Iterator[KnowledgeBase]:
    store = Store(tmp_path / "research.db")
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as index:
        yield KnowledgeBase(store, index, web_max_age=timedelta(days=7))
    store.close()


def age(store: Store, source_id: int, days: float) -> None:
    fetched = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    with store.write() as conn:
        conn.execute("UPDATE sources SET fetched_at = ? WHERE id = ?", (fetched, source_id))


def test_web_facts_read_longer_ago_than_the_max_age_are_not_reused_until_read_again(
    knowledge: KnowledgeBase,
) -> None:
    store = knowledge.store
    statement = EIFFEL.split(". ")[0] + "."
    page = source(store, "https://example.org/eiffel", EIFFEL, kind="web")
    fact = record(knowledge, page, statement)
    assert [f.id for f in knowledge.prior_findings([BUILT])] == [fact]

    age(store, page.id, days=8)
    assert knowledge.prior_findings([BUILT]) == []
    assert knowledge.count_known(BUILT) == 0

    source(store, "https://example.org/eiffel", EIFFEL, kind="web")  # read again, same content
    assert [f.id for f in knowledge.prior_findings([BUILT])] == [fact]
    assert knowledge.count_known(BUILT) == 1


def test_facts_from_the_corpus_or_given_text_do_not_expire(knowledge: KnowledgeBase) -> None:
    statement = EIFFEL.split(". ")[0] + "."
    given = source(knowledge.store, "text:eiffel", EIFFEL)
    fact = record(knowledge, given, statement)
    age(knowledge.store, given.id, days=365)

    assert [f.id for f in knowledge.prior_findings([BUILT])] == [fact]


def test_unrelated_facts_are_not_prior_findings(knowledge: KnowledgeBase) -> None:
    metro = source(knowledge.store, "text:metro", METRO)
    record(knowledge, metro, METRO.split(". ")[1])

    assert knowledge.prior_findings([BUILT]) == []


def test_facts_found_for_another_leafs_questions_are_left_to_that_leaf(knowledge: KnowledgeBase) -> None:
    statement = EIFFEL.split(". ")[0] + "."
    fact = record(knowledge, source(knowledge.store, "text:e", EIFFEL), statement, questions=["Q of leaf B"])

    assert knowledge.prior_findings([BUILT], own={BUILT}, others={"Q of leaf B"}) == []
    assert [f.id for f in knowledge.prior_findings([BUILT], own={BUILT, "Q of leaf B"})] == [fact]
    assert [f.id for f in knowledge.prior_findings([BUILT], own={BUILT}, others={"Q of leaf C"})] == [fact]


def test_the_web_max_age_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().web_max_age == timedelta(days=7)
    monkeypatch.setenv("RESEARCH_MCP_WEB_MAX_AGE_DAYS", "1.5")
    assert Settings().web_max_age == timedelta(days=1.5)

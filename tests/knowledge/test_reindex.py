"""The index is derived from SQLite: `research-mcp reindex` rebuilds it with the same search results,
and a second process on the same data folder takes its turn, or loses nothing while the first holds the index."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from mcp import Client

from research_mcp.cli.main import main
from research_mcp.core.config import Settings
from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import IndexedHit, KnowledgeIndex
from tests.knowledge.kb import record, source
from tests.server.waiting import until_finished

FACTS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "Gustave Eiffel's company designed and built the tower.",
    "Honey bees communicate the direction of food with a waggle dance.",
    "Mount Vesuvius buried Pompeii in 79 AD.",
]
QUERY = "Who built the Eiffel Tower, and when?"


def open_index(settings: Settings, idle_release: float | None = 2.0) -> KnowledgeIndex:
    return KnowledgeIndex.open(
        path=settings.vectors_path, embedder=default_embedder(), idle_release=idle_release
    )


def same_hits(actual: list[IndexedHit], expected: list[IndexedHit]) -> bool:
    return [(h.id, h.payload) for h in actual] == [(h.id, h.payload) for h in expected] and np.allclose(
        [h.score for h in actual], [h.score for h in expected], atol=1e-5
    )


def test_reindex_from_sqlite_gives_the_same_search_results(tmp_path: Path) -> None:
    settings = Settings()
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "tower.md").write_text("# The tower\n\nThe tower is repainted every seven years.\n")
    (corpus / "bees.md").write_text("# Bees\n\nA colony can hold sixty thousand workers.\n")
    runner = CliRunner()
    assert runner.invoke(main, ["index", str(corpus)]).exit_code == 0
    store = Store(settings.database_path)
    with open_index(settings) as index:
        knowledge = KnowledgeBase(store, index)
        for number, statement in enumerate(FACTS):
            record(knowledge, source(store, f"text:{number}", f"Notes. {statement}"), statement)
        facts_before = index.search("facts", QUERY, limit=4, min_score=-1.0)
        chunks_before = index.search("chunks", "painting the tower", min_score=-1.0)
        index.reset("facts")  # the index is lost...
        index.reset("chunks")
        assert index.search("facts", QUERY) == []

    result = runner.invoke(main, ["reindex"])  # ...and rebuilt from SQLite

    assert result.exit_code == 0, result.output
    assert "4 facts, 2 corpus chunks" in result.output
    with open_index(settings) as index:
        assert same_hits(index.search("facts", QUERY, limit=4, min_score=-1.0), facts_before)
        assert same_hits(index.search("chunks", "painting the tower", min_score=-1.0), chunks_before)
    store.close()


def test_reindex_says_what_to_do_when_the_index_is_held_by_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_INDEX_WAIT", "0.2")
    with open_index(Settings(), idle_release=None) as holder:
        holder.add("facts", [(1, "held", {})])
        result = CliRunner().invoke(main, ["reindex"])

    assert result.exit_code == 1
    assert "stop the research-mcp server" in result.output


SECOND_PROCESS = textwrap.dedent(
    """
    import hashlib, sys
    from research_mcp.core.config import Settings
    from research_mcp.server.app import open_knowledge_index
    from research_mcp.storage.knowledge_base import KnowledgeBase
    from research_mcp.core.contracts import Fact
    from research_mcp.storage.store import Store

    settings = Settings()
    store = Store(settings.database_path)
    index = open_knowledge_index(settings)
    text = "Notes from the second process. " + sys.argv[1]
    page = store.add_source(
        ref="text:second", kind="text", title="second", text=text,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
    )
    handoff = store.start_handoff(role="extractor", input={"questions": ["q"]}, backend="test")
    start = text.index(sys.argv[1])
    [fact_id] = KnowledgeBase(store, index).record_facts(None, handoff, [Fact(
        source_id=page.id, statement=sys.argv[1], quote=sys.argv[1],
        location=(start, start + len(sys.argv[1])), question="q", confidence=0.9, verified=True,
    )])
    print(fact_id, index.available, flush=True)
    index.close()
    store.close()
    """
)


def test_a_second_process_on_the_same_data_folder_neither_crashes_nor_loses_a_fact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_INDEX_WAIT", "0.5")
    settings = Settings()
    store = Store(settings.database_path)
    statement = FACTS[2]
    with open_index(settings, idle_release=None) as first:  # busy the whole time
        knowledge = KnowledgeBase(store, first)
        record(knowledge, source(store, "text:first", f"First. {FACTS[0]}"), FACTS[0])

        second = subprocess.run(
            [sys.executable, "-c", SECOND_PROCESS, statement], capture_output=True, text=True, timeout=120
        )

        assert second.returncode == 0, second.stderr
        fact_id, available = second.stdout.split()
        assert available == "False"
        assert "in use by another research-mcp process" in second.stderr
        assert "Knowledge index busy" in second.stderr
        assert [fact.statement for fact in store.get_facts([int(fact_id)])] == [statement]  # in SQLite
        assert int(fact_id) not in {hit.id for hit in first.search("facts", statement)}  # not yet indexed

    assert CliRunner().invoke(main, ["reindex"]).exit_code == 0
    with open_index(settings) as index:
        assert index.search("facts", statement, limit=1)[0].id == int(fact_id)  # the index caught up
    store.close()


def test_a_second_process_takes_its_turn_once_the_first_is_idle_and_indexes_at_once() -> None:
    settings = Settings()
    store = Store(settings.database_path)
    statement = FACTS[2]
    with open_index(settings, idle_release=0.1) as first:
        record(KnowledgeBase(store, first), source(store, "text:first", f"First. {FACTS[0]}"), FACTS[0])

        second = subprocess.run(
            [sys.executable, "-c", SECOND_PROCESS, statement], capture_output=True, text=True, timeout=120
        )

        assert second.returncode == 0, second.stderr
        fact_id, available = second.stdout.split()
        assert available == "True"
        assert first.search("facts", statement, limit=1)[0].id == int(fact_id)  # indexed by the second
    store.close()


async def test_a_server_whose_index_is_held_elsewhere_still_researches_and_keeps_its_facts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_INDEX_WAIT", "0.2")
    text = "Notes. " + " ".join(FACTS)
    plan = {
        "root": {
            "kind": "executor",
            "title": "notes",
            "children": [
                {"kind": "leaf", "title": "notes", "questions": ["What do the notes say?"], "sources": [text]}
            ],
        }
    }
    with open_index(Settings(), idle_release=None) as holder:
        holder.add("facts", [(10_000, "held by another process", {})])
        async with Client(create_server(model=ScriptedModel(team_script))) as client:
            planned = await client.call_tool("plan_research", {"query": "the notes", "suggested_plan": plan})
            run = await until_finished(
                client,
                await client.call_tool(
                    "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 20}
                ),
            )
        assert run.structured_content["status"] == "done"
        assert run.structured_content["metrics"]["facts"] == 3
        assert holder.count("facts") == 1  # nothing reached the index...

    assert CliRunner().invoke(main, ["reindex"]).exit_code == 0
    with open_index(Settings()) as index:
        assert index.count("facts") == 3  # ...until the reindex

"""Data that can be cleaned up: pruning a run deletes what only it holds (handoffs, events, facts and
their vectors) and keeps the facts another run cites; the store stays consistent, and doctor says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.config import Settings
from research_mcp.errors import InvalidInput
from research_mcp.llm.embeddings import default_embedder
from research_mcp.reports import view_items
from research_mcp.server.app import create_server
from research_mcp.storage.healing import heal
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex
from tests.knowledge.test_insights import FLOATING, HYWIND, STUDY, one_leaf, research
from tests.server.indexing import notes_folder, wait_until_indexed

CAPACITY = "What capacity factor do offshore wind farms in the North Sea reach?"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, {"north sea wind.md": STUDY})


def counts(store: Store, run_id: str) -> dict[str, int]:
    """The rows of each table that belong to the run."""
    found = {"runs": int(store.db.execute("SELECT COUNT(*) FROM runs WHERE id = ?", [run_id]).fetchone()[0])}
    for table in ("nodes", "events", "handoffs", "facts"):
        found[table] = int(
            store.db.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", [run_id]).fetchone()[0]
        )
    return found


async def three_runs() -> tuple[str, str, str]:
    """A run, the same plan run again (reusing its extraction, so citing its facts), and another."""
    async with Client(create_server()) as client:
        await wait_until_indexed(client)
        first = await research(client, CAPACITY, one_leaf("North Sea", CAPACITY, "corpus:1"))
        again = await research(client, CAPACITY, one_leaf("North Sea", CAPACITY, "corpus:1"))
        other = await research(client, FLOATING, one_leaf("floating wind", FLOATING, HYWIND))
    return first, again, other


async def test_pruning_deletes_what_only_the_run_holds_with_its_vectors_and_keeps_what_others_cite(
    corpus: Path,
) -> None:
    first, again, other = await three_runs()
    settings = Settings()
    store = Store(settings.database_path)
    first_facts = [row["id"] for row in store.db.query("SELECT id FROM facts WHERE run_id = ?", [first])]
    other_facts = [row["id"] for row in store.db.query("SELECT id FROM facts WHERE run_id = ?", [other])]
    report_before = view_items(store, again, "report")
    assert first_facts and other_facts

    with KnowledgeIndex.open(path=settings.vectors_path, embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        assert index.held("facts", other_facts) == set(other_facts)
        kept = knowledge.prune_run(first)
        gone = knowledge.prune_run(other)
        held = index.held("facts", [*first_facts, *other_facts])
        drift = heal(knowledge, dry_run=True)

    # The other run's facts were its own: deleted, with their vectors, handoffs, events and nodes.
    assert sorted(gone.facts) == sorted(other_facts) and gone.kept_facts == 0
    assert not held & set(other_facts)
    assert counts(store, other) == {"runs": 0, "nodes": 0, "events": 0, "handoffs": 0, "facts": 0}
    # The first run's facts are cited by the run that reused its extraction: kept, as is that run's report.
    assert kept.facts == [] and kept.kept_facts == len(first_facts)
    assert counts(store, first) == {"runs": 0, "nodes": 0, "events": 0, "handoffs": 0, "facts": 0}
    assert set(first_facts) <= held
    assert view_items(store, again, "report") == report_before
    assert store.consistency_problems() == []
    assert drift.in_step
    store.close()


def test_a_run_still_being_executed_is_not_pruned(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    run_id = store.create_run(["plan_x"], "extractive", None)
    store.update_run(run_id, status="running")
    with pytest.raises(InvalidInput, match="cancel it first"):
        store.prune_run(run_id)
    assert store.get_run(run_id).status == "running"
    store.close()

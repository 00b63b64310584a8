"""Data that can be cleaned up: pruning a run deletes what only it holds (handoffs, events, facts and
their vectors) and keeps the facts another run cites; the store stays consistent, and doctor says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.errors import InvalidInput
from research_mcp.llm.embeddings import default_embedder
from research_mcp.reports import view_items
from research_mcp.server.app import create_server
from research_mcp.storage import retention
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


#: Every table a run's research writes rows to that a prune of all runs must empty (sources, the
#: reading cache, and what they leave open, stay by design).
RUN_TABLES = (
    "runs",
    "nodes",
    "events",
    "handoffs",
    "facts",
    "fact_citations",
    "model_calls",
    "output_cache",
    "plans",
)


def left_behind(store: Store) -> dict[str, int]:
    return {
        table: int(store.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        for table in RUN_TABLES
        if store.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    }


@pytest.mark.parametrize(
    "order",
    [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1)],
    ids=["oldest first", "newest first", "reuser first", "reused, other, reuser"],
)
async def test_pruning_every_run_in_any_order_leaves_nothing_behind(
    corpus: Path, order: tuple[int, ...]
) -> None:
    runs = await three_runs()
    settings = Settings()
    store = Store(settings.database_path)
    with KnowledgeIndex.open(path=settings.vectors_path, embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        for position in order:
            knowledge.prune_run(runs[position])
            assert store.consistency_problems() == []
        vectors = index.count("facts")

    assert left_behind(store) == {}
    assert vectors == 0
    store.close()


async def test_doctor_counts_facts_kept_for_pruned_runs_that_no_run_cites_and_the_next_prune_deletes_them(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, again, other = await three_runs()
    settings = Settings()
    store = Store(settings.database_path)
    store.prune_run(first)  # its facts are kept: the run that reused its extraction cites them
    kept = int(store.db.execute("SELECT COUNT(*) FROM facts").fetchone()[0]) - int(
        store.db.execute("SELECT COUNT(*) FROM facts WHERE run_id IS NOT NULL").fetchone()[0]
    )
    # What a prune that did not follow kept facts (this release's before issue 46) left: the citing
    # run gone, the facts it kept alive still there.
    with monkeypatch.context() as patched:
        patched.setattr(retention, "_kept_for_no_run", lambda conn: ([], []))
        store.prune_run(again)
    assert kept > 0
    assert store.consistency_problems() == [
        f"{kept} facts and 1 handoffs kept for pruned runs that no run cites any more"
    ]

    store.prune_run(other)  # any later prune deletes them

    assert store.consistency_problems() == [] and left_behind(store) == {}
    store.close()

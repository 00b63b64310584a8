"""The facts index heals itself: facts stored while it was unavailable, points deleted behind its back
and points with no fact behind them are found by comparing ids with the store, and set right."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from research_mcp.cli.main import main
from research_mcp.core.config import Settings
from research_mcp.llm.embeddings import default_embedder
from research_mcp.storage.healing import IndexDrift, heal, keep_healed
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex
from tests.knowledge.kb import record, source

STATEMENTS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "Honey bees communicate the direction of food with a waggle dance.",
    "Mount Vesuvius buried Pompeii in 79 AD.",
    "The Great Wall of China is more than 20,000 kilometres long.",
    "Marie Curie won Nobel Prizes in both physics and chemistry.",
]


def index_ids(index: KnowledgeIndex) -> set[int]:
    ids, after = index.id_page("facts")
    assert after is None
    return set(ids)


def store_ids(store: Store) -> set[int]:
    return set(store.known_fact_ids(after=0, limit=10_000))


def record_all(knowledge: KnowledgeBase, statements: list[str], tag: str = "") -> list[int]:
    return [
        record(knowledge, source(knowledge.store, f"text:{tag}{n}", f"Notes. {text}"), text)
        for n, text in enumerate(statements)
    ]


def test_facts_recorded_while_the_index_was_unavailable_are_indexed_by_heal(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    offline = KnowledgeBase(store, None)  # e.g. another process held the index
    stored = record_all(offline, STATEMENTS[:3])
    assert offline.dirty
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        record_all(knowledge, STATEMENTS[3:], tag="later")
        assert store_ids(store) - index_ids(index) == set(stored)

        drift = heal(knowledge)

        assert drift == IndexDrift(facts=5, missing=3, extra=0, healed=True)
        assert index_ids(index) == store_ids(store)
        assert index.search("facts", "What buried Pompeii?", limit=1)[0].id == stored[2]
        assert heal(knowledge) == IndexDrift(facts=5, missing=0, extra=0, healed=True)
    store.close()


def test_points_deleted_behind_its_back_come_back_and_extra_points_go(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        ids = record_all(knowledge, STATEMENTS)
        index.delete("facts", ids[:2])
        index.add("facts", [(9_999, "a fact no store holds", {}), (10_000, "another", {})])

        report = heal(knowledge, dry_run=True)  # what doctor shows: nothing changes
        assert report == IndexDrift(facts=5, missing=2, extra=2, healed=False)
        assert index_ids(index) == {*ids[2:], 9_999, 10_000}

        assert heal(knowledge) == IndexDrift(facts=5, missing=2, extra=2, healed=True)
        assert index_ids(index) == set(ids) == store_ids(store)
    store.close()


def test_a_merged_fact_left_in_the_index_is_deleted_and_never_indexed_again(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        first = record(knowledge, source(store, "text:a", f"A. {STATEMENTS[0]}"), STATEMENTS[0])
        second = record(knowledge, source(store, "text:b", f"B. {STATEMENTS[0]}"), STATEMENTS[0])
        assert store_ids(store) == {first}  # the second merged into the first
        index.add("facts", [(second, STATEMENTS[0], {})])  # a stale point of the merged fact

        assert heal(knowledge) == IndexDrift(facts=1, missing=0, extra=1, healed=True)
        assert index_ids(index) == {first}
    store.close()


def test_heal_stops_between_batches_when_asked_and_leaves_the_index_dirty(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    record_all(KnowledgeBase(store, None), STATEMENTS)
    stop = threading.Event()
    stop.set()
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        assert not heal(knowledge, stop=stop).healed
        assert index_ids(index) == set()
    store.close()


def test_an_unavailable_index_is_reported_not_compared(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    assert heal(KnowledgeBase(store, None)) == IndexDrift(0, 0, 0, healed=False, available=False)
    store.close()


async def test_the_background_healer_heals_at_start_and_again_after_an_indexing_failure(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "research.db")
    record_all(KnowledgeBase(store, None), STATEMENTS[:2])
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        stop = threading.Event()

        async def until_in_step() -> None:
            while index_ids(index) != store_ids(store):
                await anyio.sleep(0.02)

        async with anyio.create_task_group() as group:
            group.start_soon(lambda: keep_healed(knowledge, stop, interval=0.05))
            with anyio.fail_after(30):
                await until_in_step()  # healed at start
            assert len(index_ids(index)) == 2
            # Facts stored by another process while this one holds the index: the counts differ.
            record_all(KnowledgeBase(store, None), STATEMENTS[2:], tag="other")
            with anyio.fail_after(30):
                await until_in_step()
            assert len(index_ids(index)) == 5
            stop.set()
            group.cancel_scope.cancel()
    store.close()


def test_doctor_reports_the_drift_and_how_to_heal_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-doctor-test")  # something to search: drift is no problem
    settings = Settings()
    store = Store(settings.database_path)
    with KnowledgeIndex.open(path=settings.vectors_path, embedder=default_embedder()) as index:
        knowledge = KnowledgeBase(store, index)
        ids = record_all(knowledge, STATEMENTS)
        index.delete("facts", ids[:3])
    store.close()

    result = CliRunner().invoke(main, ["doctor"])

    assert result.exit_code == 0, result.output
    assert "3 of 5 facts missing from the index, 0 extra points" in result.output
    assert "research-mcp reindex" in result.output
    assert CliRunner().invoke(main, ["reindex"]).exit_code == 0
    after = CliRunner().invoke(main, ["doctor"])
    assert "5 facts, index in step with the store" in after.output


def test_doctor_says_at_once_that_a_running_server_holds_the_index(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings()
    store = Store(settings.database_path)
    with KnowledgeIndex.open(path=settings.vectors_path, embedder=default_embedder()) as index:
        record_all(KnowledgeBase(store, index), STATEMENTS[:2])
        assert index.count("facts") == 2  # this index holds the folder, as a running server does

        result = CliRunner().invoke(main, ["doctor"])

    store.close()
    assert "index drift:  not checked: the index is held by a running server" in result.output, result.output
    assert "consistency:  every reference in the store points at a row" in result.output  # the rest is read
    assert "waiting up to" not in caplog.text  # it did not wait for the folder

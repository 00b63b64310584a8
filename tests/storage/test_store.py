"""The store: named migrations on a fresh database, durable handoffs, one writer at a time."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

from research_mcp.core.contracts import Confidence, Fact
from research_mcp.core.role_inputs import SynthesisInput
from research_mcp.storage.events import NodeStarted
from research_mcp.storage.migrations import MIGRATIONS, apply_migrations
from research_mcp.storage.outputs import StoredExtraction, StoredSynthesis, stored_output
from research_mcp.storage.store import Store


def test_migrations_on_a_fresh_database_create_the_tables_with_their_columns() -> None:
    db = Database(memory=True)
    applied = apply_migrations(db)
    assert applied == [name for name, _ in MIGRATIONS]
    assert db["handoffs"].columns_dict == {
        "id": str,
        "run_id": str,
        "node_id": str,
        "role": str,
        "status": str,
        "input": str,
        "output": str,
        "summary": str,
        "backend": str,
        "model": str,
        "tokens_in": int,
        "tokens_out": int,
        "cost_usd": float,
        "started_at": str,
        "finished_at": str,
        "attempt": int,
        "iteration": int,
        "error": str,
        "kept_after": str,
        "caller": str,
    }
    for table in ("runs", "plans"):  # who made it (research_mcp/core/callers.py)
        assert db[table].columns_dict["caller"] is str, table
    for table in ("runs", "plans", "nodes", "sources", "facts", "events", "model_calls"):
        assert db[table].exists(), table
    assert [row["name"] for row in db["_migrations"].rows] == applied


def test_applying_migrations_again_changes_nothing() -> None:
    db = Database(memory=True)
    apply_migrations(db)
    schema = db.schema
    assert apply_migrations(db) == []
    assert db.schema == schema


def test_the_store_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000


def test_a_handoff_is_committed_before_its_id_is_returned(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    handoff_id = store.start_handoff(role="extractor", input={"q": 1}, backend="scripted")
    answer = StoredExtraction(confidence=Confidence(level="low", reasoning="nothing found"))
    store.finish_handoff(handoff_id, status="done", output=answer, summary=["none"])
    other = sqlite3.connect(tmp_path / "r.db")  # another connection sees it: it is committed
    assert other.execute("SELECT status FROM handoffs WHERE id = ?", (handoff_id,)).fetchone() == ("done",)


def test_a_failed_write_rolls_back_and_loses_nothing_else(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    source = store.add_source(ref="text:a", kind="text", title="a", text="alpha beta", content_hash="h1")
    try:
        with store.write() as conn:
            conn.execute("INSERT INTO events (run_id, kind, message, at) VALUES ('r', 'k', 'm', 't')")
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert store.db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    assert store.get_source(source.id).text == "alpha beta"


def test_two_stores_on_one_file_write_without_locking_errors(tmp_path: Path) -> None:
    first, second = Store(tmp_path / "r.db"), Store(tmp_path / "r.db")
    for index in range(50):
        (first if index % 2 else second).add_event("run", NodeStarted(message=str(index)))
    assert len(first.events_for_run("run")) == 50


def test_a_table_api_write_inside_a_store_write_rolls_back_with_it(tmp_path: Path) -> None:
    """sqlite-utils' own transactions become savepoints of the store's BEGIN IMMEDIATE: one commit, or none."""
    store = Store(tmp_path / "r.db")
    run_id = store.create_run(["plan_1"], "scripted", None)
    try:
        with store.write():
            store.db.table("events").insert({"run_id": run_id, "kind": "k", "message": "m", "at": "t"})
            store.db.table("runs").update(run_id, {"status": "running"})
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert store.events_for_run(run_id) == []
    assert store.get_run(run_id).status == "pending"
    store.update_run(run_id, status="running", attempt=1)  # alone, it commits
    other = sqlite3.connect(tmp_path / "r.db")
    assert other.execute("SELECT status, attempt FROM runs").fetchone() == ("running", 1)


def test_a_handoff_reads_back_as_its_roles_output_with_the_keys_code_added() -> None:
    store = Store(":memory:")
    asked = {"title": "reef", "questions": ["Where?"], "input_handoffs": ["h_1"]}
    handoff_id = store.start_handoff(role="synthesizer", input=asked, backend="scripted", run_id="run_1")
    output = stored_output(
        "synthesizer",
        {
            "report": "In the Coral Sea [F1].",
            "confidence": {"level": "high", "reasoning": "two sources"},
            "fact_ids": [1, 2],
            "cited": [1],
            "citations": {"made": 1, "verified": 1, "dropped": 0},
            "failures": ["Source not read: https://a.example/: 404"],
        },
    )
    store.finish_handoff(handoff_id, status="done", output=output, summary=["reef"])

    handoff = store.get_handoff(handoff_id)
    assert handoff.output == output
    assert handoff.input == SynthesisInput(title="reef", questions=["Where?"], input_handoffs=["h_1"])
    synthesis = handoff.output_as(StoredSynthesis)
    assert synthesis is not None and synthesis.citations.verified == 1
    assert handoff.output_as(StoredExtraction) is None
    assert (handoff.fact_ids, handoff.failures) == ([1, 2], ["Source not read: https://a.example/: 404"])
    # What a retry looks for in SQL (Store.reopen_failed_nodes) is stored under the key code wrote.
    row = store.db.execute("SELECT json_extract(output, '$.failures[0]') FROM handoffs").fetchone()
    assert row == ("Source not read: https://a.example/: 404",)


def test_an_output_key_no_model_declares_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no field \['fact_idz'\]; add it to StoredExtraction"):
        stored_output("extractor", {"confidence": {"level": "low", "reasoning": "r"}, "fact_idz": [1]})


def test_a_source_text_is_kept_compressed_and_reads_back_whole_as_do_older_plain_rows(tmp_path: Path) -> None:
    text = "Die Lizenz erlaubt das Kopieren — unverändert. \ud800 " * 400  # a lone surrogate kept as read
    store = Store(tmp_path / "r.db")
    source = store.add_source(ref="corpus:1", kind="corpus", title="t", text=text, content_hash="h1")
    with store.write() as conn:
        conn.execute(
            "INSERT INTO sources (ref, kind, title, content_hash, text, fetched_at, metadata)"
            " VALUES ('corpus:2', 'corpus', 't', 'h2', 'plain, as 0.2 kept it', '2026-01-01', '{}')"
        )
    stored = store.db.execute("SELECT LENGTH(text) FROM sources WHERE id = ?", [source.id]).fetchone()[0]

    assert store.get_source(source.id).text == text
    assert stored < len(text.encode("utf-8", "surrogatepass")) / 10
    assert store.latest_source("corpus:2").text == "plain, as 0.2 kept it"  # type: ignore[union-attr]
    store.close()


def test_a_fact_is_stored_as_the_extraction_made_it_and_read_back_with_its_id(tmp_path: Path) -> None:
    """One model of a fact (issue 48.4): what `add_facts` takes is what `get_facts` gives back, with
    the id the store gave it; its citation is the quote where it was found."""
    store = Store(tmp_path / "r.db")
    source = store.add_source(
        ref="text:a", kind="text", title="a", text="It rained all day.", content_hash="h"
    )
    found = [
        Fact(
            statement="It rained all day.",
            quote="It rained all day.",
            source_id=source.id,
            location=(0, 18),
            confidence=0.9,
            verified=True,
            question="Did it rain?",
        ),
        Fact(statement="It snowed.", quote="It snowed.", source_id=source.id, confidence=0.4, verified=False),
    ]
    handoff = store.start_handoff(role="extractor", input={"questions": ["Did it rain?"]}, backend="test")

    ids = store.add_facts(None, handoff, found)

    assert store.get_facts(ids) == [
        fact.model_copy(update={"id": id_}) for fact, id_ in zip(found, ids, strict=True)
    ]
    assert [(c.quote, c.start, c.end) for c in store.citations(ids)[ids[0]]] == [
        ("It rained all day.", 0, 18)
    ]
    store.close()

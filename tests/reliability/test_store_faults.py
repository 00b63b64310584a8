"""The store under real SQLite failures: full (max_page_count), locked past the busy timeout, resumed after a crash."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from research_mcp.core.contracts import Confidence, Fact
from research_mcp.core.errors import StoreBusy, StoreFull
from research_mcp.storage.events import Recovered
from research_mcp.storage.models import NewNode
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import INTERRUPTED, Store, process_owner


def synthesis(report: str) -> StoredSynthesis:
    return StoredSynthesis(report=report, confidence=Confidence(level="low", reasoning="a test"))


def fact(source_id: int, n: int) -> Fact:
    return Fact(
        statement=f"statement {n} " + "x" * 2000,
        quote=f"quote {n}",
        source_id=source_id,
        confidence=0.9,
        verified=True,
    )


def test_a_full_database_raises_store_full_naming_the_folder_and_rolls_the_whole_write_back(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "research.db")
    source = store.add_source(ref="text:1", kind="text", title="t", text="some text", content_hash="h1")
    handoff = store.start_handoff(role="extractor", input={}, backend="scripted")
    kept = store.add_facts(None, handoff, [fact(source.id, 0)])
    pages = store.db.conn.execute("PRAGMA page_count").fetchone()[0]
    store.db.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # a real SQLITE_FULL, a few pages on

    with pytest.raises(StoreFull) as raised:
        store.add_facts(None, handoff, [fact(source.id, n) for n in range(1, 40)])
    assert str(tmp_path) in str(raised.value)
    assert "Free some disk space" in str(raised.value)

    # Nothing of the failed batch was kept; earlier rows are intact; the connection is usable again.
    rows = store.db.conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    citations = store.db.conn.execute("SELECT count(*) FROM fact_citations").fetchone()[0]
    assert (rows, citations) == (1, 1)
    assert [f.id for f in store.get_facts(kept)] == kept
    assert store.db.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store.db.conn.execute("PRAGMA max_page_count = 1073741823")
    assert len(store.add_facts(None, handoff, [fact(source.id, n) for n in range(1, 40)])) == 39


def test_a_lock_held_past_the_busy_timeout_is_store_busy_not_a_bare_sqlite_error(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    store.db.conn.execute("PRAGMA busy_timeout = 50")
    other = sqlite3.connect(tmp_path / "research.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreBusy) as raised:
            store.create_run(["plan_x"], "scripted", None)
        assert str(tmp_path) in str(raised.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.create_run(["plan_x"], "scripted", None).startswith("run_")


def test_resuming_closes_interrupted_handoffs_and_completes_a_node_whose_final_handoff_was_committed(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "research.db")
    run_id = store.create_run(["p"], "scripted", None)
    store.ensure_nodes(
        run_id,
        [
            NewNode(node_id=key, plan_id="p", parent_id=None, kind="leaf", title=key)
            for key in ("p/done", "p/committed", "p/midway")
        ],
    )
    for key in ("p/done", "p/committed", "p/midway"):
        store.start_node(run_id, key)
    asked = {"title": "t", "questions": [], "input_handoffs": []}
    finished = store.start_handoff(
        role="synthesizer", input=asked, backend="s", run_id=run_id, node_id="p/done"
    )
    store.finish_handoff(finished, status="done", output=synthesis("a"), summary=["a"])
    store.finish_node(run_id, "p/done", "done", finished)
    # The process died after committing this node's synthesis, before recording the node as done.
    committed = store.start_handoff(
        role="synthesizer", input=asked, backend="s", run_id=run_id, node_id="p/committed"
    )
    store.finish_handoff(committed, status="done", output=synthesis("b"), summary=["b"])
    # ... and while this node's extraction was under way.
    read = {"source_id": 1, "source_ref": "text:x", "source_title": "x", "questions": ["why?"]}
    midway = store.start_handoff(role="extractor", input=read, backend="s", run_id=run_id, node_id="p/midway")

    tidied = store.recover_run(run_id, {key: "synthesizer" for key in ("p/done", "p/committed", "p/midway")})

    nodes = {n.node_id: (n.status, n.handoff_id, n.runs_started) for n in store.nodes_for_run(run_id)}
    assert nodes == {
        "p/done": ("done", finished, 1),
        "p/committed": ("done", committed, 1),
        "p/midway": ("pending", None, 1),
    }
    assert store.get_handoff(midway).status == "failed"
    assert store.get_handoff(midway).error == INTERRUPTED
    assert store.get_handoff(committed).output == synthesis("b")
    assert tidied == Recovered(
        message="resumed after an interruption", nodes_completed=1, handoffs_interrupted=1, nodes_reset=1
    )


def test_a_run_owned_by_a_live_process_is_not_claimed_by_another_but_one_whose_owner_died_is(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "research.db")
    run_id = store.create_run(["p"], "scripted", None)
    host = process_owner().rpartition(":")[0]
    assert store.claim_run(run_id, f"{host}:{os.getppid()}") is None  # the parent: alive
    assert store.claim_run(run_id, process_owner()) == f"{host}:{os.getppid()}"
    store.release_run(run_id, f"{host}:{os.getppid()}")
    assert store.claim_run(run_id, process_owner()) is None
    dead = f"{host}:{2**22 + 12345}"  # above pid_max: no such process
    store.update_run(run_id, owner=dead)
    assert store.claim_run(run_id, process_owner()) is None
    assert store.get_run(run_id).owner == process_owner()

"""Named migrations: applied once each, in order; 003_knowledge keeps every fact's citation."""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database

from research_mcp.core.contracts import Fact
from research_mcp.sources.documents import chunk_spans
from research_mcp.storage.migrations import MIGRATIONS, apply_migrations
from research_mcp.storage.models import Citation, compress_text
from research_mcp.storage.store import Store


def test_migrations_apply_once_in_order() -> None:
    db = Database(memory=True)

    assert apply_migrations(db) == [name for name, _ in MIGRATIONS]
    assert apply_migrations(db) == []


def test_003_knowledge_adds_citations_merges_and_the_output_cache() -> None:
    db = Database(memory=True)
    apply_migrations(db)

    assert db.table("fact_citations").columns_dict == {
        "id": int,
        "fact_id": int,
        "source_id": int,
        "quote": str,
        "start": int,
        "end": int,
        "handoff_id": str,
        "created_at": str,
    }
    assert db.table("output_cache").columns_dict == {
        "key": str,
        "role": str,
        "handoff_id": str,
        "created_at": str,
    }
    assert db.table("facts").columns_dict["canonical_id"] is int


def test_003_knowledge_gives_facts_stored_before_it_their_own_citation(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = Database(path)
    apply_migrations(old, MIGRATIONS[:2])
    old.conn.execute(
        "INSERT INTO sources (id, ref, kind, title, content_hash, text, fetched_at, metadata)"
        " VALUES (1, 'text:a', 'text', 'a', 'h', 'It rained.', '2025-01-01T00:00:00+00:00', '{}')"
    )
    old.conn.execute(
        "INSERT INTO facts (id, run_id, handoff_id, source_id, statement, quote, start, end, question,"
        " confidence, verified, corroborations, created_at)"
        " VALUES (7, 'run_1', 'h_1', 1, 'It rained', 'It rained.', 0, 10, NULL, 0.9, 1, 1, 'then')"
    )
    old.conn.commit()
    old.conn.close()

    store = Store(path)

    assert store.citations([7]) == {7: [Citation(source_id=1, quote="It rained.", start=0, end=10)]}
    store.close()


def test_every_stored_fact_is_cited_by_the_handoff_that_found_it() -> None:
    store = Store(":memory:")
    page = store.add_source(ref="text:a", kind="text", title="a", text="It rained all day.", content_hash="h")
    run_id = store.create_run(["plan_1"], "scripted", None)
    handoff_id = store.start_handoff(role="extractor", input={}, backend="scripted", run_id=run_id)

    [fact_id] = store.add_facts(
        run_id,
        handoff_id,
        [
            Fact(
                source_id=page.id,
                statement="It rained",
                quote="It rained",
                location=(0, 9),
                confidence=1,
                verified=True,
            )
        ],
    )

    assert store.citations([fact_id]) == {
        fact_id: [Citation(source_id=page.id, quote="It rained", start=0, end=9)]
    }
    assert store.count_facts(run_id) == 1


def test_reading_a_source_again_with_the_same_content_refreshes_its_fetch_time() -> None:
    store = Store(":memory:")
    first = store.add_source(ref="https://a.example/", kind="web", title="a", text="same", content_hash="h")

    again = store.add_source(ref="https://a.example/", kind="web", title="a", text="same", content_hash="h")

    assert again.id == first.id
    assert again.fetched_at > first.fetched_at


def test_008_source_insights_keeps_what_extractions_stored_before_it_said_their_sources_leave_open(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    old = Database(path)
    apply_migrations(old, MIGRATIONS[:7])
    old.conn.execute(
        "INSERT INTO sources (id, ref, kind, title, content_hash, text, fetched_at, metadata)"
        " VALUES (3, 'corpus:1', 'corpus', 'Wind', 'h', 'Limitations: no floating turbines.', 'then', '{}')"
    )
    output = (
        '{"source_id": 3, "source_identified_gaps": ["No floating turbines.", "no  floating turbines."],'
        ' "follow_up_questions": [{"question": "How do floating turbines fare?", "confidence": 0.5,'
        ' "rationale": "not answered"}], "linked_candidate_sources": []}'
    )
    for handoff_id in ("h_1", "h_2"):  # the same source read twice: its insights are kept once
        old.conn.execute(
            "INSERT INTO handoffs (id, run_id, role, status, input, output, started_at, finished_at)"
            " VALUES (?, 'run_1', 'extractor', 'done', '{}', ?, ?, 'later')",
            (handoff_id, output, handoff_id),
        )
    old.conn.commit()
    old.conn.close()

    store = Store(path)

    kept = store.known_insights(kinds=["source_gap", "follow_up"])
    assert sorted((i.kind, i.text, i.ref, i.title, i.handoff_id, i.run_id) for i in kept) == [
        ("follow_up", "How do floating turbines fare?", "corpus:1", "Wind", "h_1", "run_1"),
        ("source_gap", "No floating turbines.", "corpus:1", "Wind", "h_1", "run_1"),
    ]
    store.close()


def _old_corpus_folder(path: Path, texts: dict[str, str]) -> None:
    """A data folder as 0.x left it before migration 013: each chunk's text and title kept in its row
    and, through the chunk table, in the full-text index (external content)."""
    old = Database(path)
    apply_migrations(old, MIGRATIONS[: [name for name, _ in MIGRATIONS].index("015_chunk_text_once")])
    chunk_id = 0
    for doc_id, (name, text) in enumerate(texts.items(), 1):
        old.conn.execute(
            "INSERT INTO corpus_documents (id, root, path, title, content_hash, size, mtime_ns, text, indexed_at)"
            " VALUES (?, 'notes', ?, ?, ?, ?, 1, ?, 'then')",
            (doc_id, f"{name}.md", name.title(), name, len(text), compress_text(text)),
        )
        for ordinal, (start, end) in enumerate(chunk_spans(text)):
            chunk_id += 1
            old.conn.execute(
                'INSERT INTO corpus_chunks (id, doc_id, ordinal, title, text, start, "end") VALUES (?, ?, ?, ?, ?, ?, ?)',
                (chunk_id, doc_id, ordinal, name.title(), text[start:end], start, end),
            )
    old.conn.execute(
        "INSERT INTO corpus_chunks_fts (rowid, text, title) SELECT id, text, title FROM corpus_chunks"
    )
    old.conn.commit()
    old.conn.close()


def test_015_keeps_a_chunks_text_once_and_an_older_folder_searches_and_reads_as_before(
    tmp_path: Path,
) -> None:
    path = tmp_path / "research.db"
    tides = "\n\n".join(
        f"Paragraph {i}: spring tides follow the new and the full moon. " * 12 for i in range(30)
    )
    reefs = "\n\n".join(f"Paragraph {i}: coral reefs bleach when the sea warms. " * 12 for i in range(30))
    _old_corpus_folder(path, {"tides": tides, "reefs": reefs})
    before = path.stat().st_size

    store = Store(path)

    assert store.db.table("corpus_chunks").columns_dict == {
        "id": int,
        "doc_id": int,
        "ordinal": int,
        "start": int,
        "end": int,
    }
    # Compacted: the chunk texts' pages went back to the file system, none is left free in the file.
    assert path.stat().st_size < before
    assert store.db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    found = store.corpus_bm25("coral", ["notes"], weights=(1.0, 2.0), limit=10, chunks=100)
    assert [doc_id for doc_id, _ in found] == [2]
    assert store.corpus_bm25("reefs", ["notes"], weights=(1.0, 2.0), limit=10, chunks=100)  # the title
    chunks = store.corpus_chunks_after(0, 1000)
    assert " ".join(chunk.text for chunk in chunks if chunk.doc_id == 1).split() == tides.split()
    assert {chunk.title for chunk in chunks} == {"Tides", "Reefs"}
    # A chunk indexed before the migration leaves the index with its document.
    store.delete_corpus_document(2)
    assert store.corpus_bm25("coral", ["notes"], weights=(1.0, 2.0), limit=10, chunks=100) == []
    with store.write() as conn:
        conn.execute("INSERT INTO corpus_chunks_fts (corpus_chunks_fts) VALUES ('integrity-check')")
    store.close()

"""The corpus tables: a document's chunks and their full-text index stay in step, written in bulk."""

from __future__ import annotations

from pathlib import Path

from research_mcp.sources.documents import chunk_spans
from research_mcp.storage.store import Store


def _save(store: Store, text: str, doc_id: int | None = None) -> tuple[int, list[int], list[int]]:
    return store.save_corpus_document(
        doc_id=doc_id,
        root="notes",
        path="tides.md",
        title="Tides",
        text=text,
        content_hash=str(hash(text)),
        size=len(text),
        mtime_ns=1,
        spans=chunk_spans(text),
    )


def _found(store: Store, word: str) -> list[tuple[int, int]]:
    return store.corpus_bm25(word, ["notes"], weights=(1.0, 2.0), limit=10, chunks=100)


def _fts_consistent(store: Store) -> None:
    with store.write() as conn:  # raises when the index and its content table disagree
        conn.execute("INSERT INTO corpus_chunks_fts (corpus_chunks_fts) VALUES ('integrity-check')")


def test_a_documents_chunks_enter_the_full_text_index_at_once(tmp_path: Path) -> None:
    """One trigger call per chunk made FTS5 flush at every chunk: a 10 MB text file took 3 s to store
    instead of 1 (`python -m bench.hostile_docs`). Now the index is written once per document."""
    store = Store(tmp_path / "research.db")
    text = "\n\n".join(
        f"Paragraph {i}: spring tides follow the new and the full moon. " * 15 for i in range(60)
    )
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        doc_id, _, chunk_ids = _save(store, text)
    finally:
        store.db.conn.set_trace_callback(None)

    assert len(chunk_ids) == 60
    # FTS5's own statements: each flush of its pending terms writes a new segment (rows of _idx), and
    # too many segments are merged (deletes from _data). Per-row triggers: 64 segment rows, 48 merges.
    segment_rows = sum("INSERT INTO 'main'.'corpus_chunks_fts_idx'" in s for s in statements)
    merges = sum("DELETE FROM 'main'.'corpus_chunks_fts_data'" in s for s in statements)
    assert (segment_rows <= 5, merges) == (True, 0)
    assert {d for d, _ in _found(store, "spring")} == {doc_id}
    _fts_consistent(store)


def test_the_full_text_index_follows_a_document_changed_and_deleted(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    doc_id, _, first = _save(store, "Neap tides come with the quarter moons. " * 40)
    assert _found(store, "neap") and not _found(store, "estuary")

    same_id, replaced, second = _save(store, "An estuary mixes river and sea water. " * 40, doc_id)

    assert (same_id, replaced) == (doc_id, first)
    assert [chunk for _, chunk in _found(store, "estuary")] == [second[0]]
    assert _found(store, "neap") == []
    _fts_consistent(store)

    assert store.delete_corpus_document(doc_id) == second
    assert _found(store, "estuary") == []
    _fts_consistent(store)


def test_a_documents_text_is_kept_compressed_and_reads_back_whole_as_do_older_plain_rows(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "research.db")
    text = "\n\n".join(f"Paragraph {i}: spring tides follow the new and the full moon." for i in range(400))
    doc_id, _, _ = _save(store, text)
    with store.write() as conn:
        stored = conn.execute("SELECT text FROM corpus_documents WHERE id = ?", (doc_id,)).fetchone()[0]
    document = store.corpus_document(doc_id)

    assert document is not None and document.text == text
    assert isinstance(stored, bytes) and len(stored) < len(text) / 3  # its chunks keep it readable

    with store.write() as conn:  # a row as releases before 0.2 wrote it
        conn.execute("UPDATE corpus_documents SET text = ? WHERE id = ?", ("Neap tides.", doc_id))
    older = store.corpus_document(doc_id)
    assert older is not None and older.text == "Neap tides."
    store.close()

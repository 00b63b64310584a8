"""The local corpus's tables: documents, their chunks and the FTS5 index over them. `sources/corpus.py`
decides what to index and how to rank; these methods hold its SQL.

A chunk's text is kept once, in its document's compressed text: a chunk row holds its offsets, and
the full-text index is contentless (migration 013). The index is written here, with a document's
chunks when they are saved, and told the text a chunk was indexed with when the chunk goes.

Every query that lists documents takes the configured corpus folders (`roots`), so a document of a
folder no longer configured is never found.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from research_mcp.storage.database import StoreDatabase, marks, now
from research_mcp.storage.models import (
    CorpusChunk,
    CorpusDocumentInfo,
    CorpusFailure,
    CorpusFileState,
    StoredCorpusDocument,
    compress_text,
    decompress_text,
)

__all__ = ["CorpusTables"]


class CorpusTables(StoreDatabase):
    # --- indexing ------------------------------------------------------------------------------

    def corpus_files(self, root: str) -> list[CorpusFileState]:
        """What is stored of each document of one corpus folder, to compare with the files on disk."""
        rows = self._all(
            "SELECT id, path, size, mtime_ns, content_hash, reader_version FROM corpus_documents WHERE root = ?",
            (root,),
        )
        return [CorpusFileState.model_validate(row) for row in rows]

    def corpus_failures(self, root: str) -> dict[str, CorpusFailure]:
        """The files of one corpus folder that failed, by path."""
        rows = self._all("SELECT * FROM corpus_failures WHERE root = ?", (root,))
        return {str(row["path"]): CorpusFailure.model_validate(row) for row in rows}

    def remember_corpus_failure(self, failure: CorpusFailure) -> None:
        with self.write():
            self.db.table("corpus_failures").upsert(failure.model_dump(), pk=("root", "path"))

    def forget_corpus_failures(self, root: str, paths: Sequence[str]) -> None:
        """These files were indexed, or are gone: nothing to remember of an earlier failure."""
        with self.write() as conn:
            conn.executemany(
                "DELETE FROM corpus_failures WHERE root = ? AND path = ?", [(root, path) for path in paths]
            )

    def touch_corpus_document(self, doc_id: int, *, size: int, mtime_ns: int) -> None:
        """A file read again with the same content: only its size and modification time change."""
        with self.write():
            self.db.table("corpus_documents").update(doc_id, {"size": size, "mtime_ns": mtime_ns})

    def save_corpus_document(
        self,
        *,
        doc_id: int | None,
        root: str,
        path: str,
        title: str,
        text: str,
        content_hash: str,
        size: int,
        mtime_ns: int,
        spans: Sequence[tuple[int, int]],
        reader_version: int = 0,
    ) -> tuple[int, list[int], list[int]]:
        """Store a new (`doc_id` None) or changed document and its chunks (`spans` of its text), in one
        transaction. Returns its id, the ids of the chunks it replaced, and its new chunks' ids in order."""
        values = {
            "title": title,
            "content_hash": content_hash,
            "size": size,
            "mtime_ns": mtime_ns,
            "reader_version": reader_version,
            "text": compress_text(text),
            "indexed_at": now(),
        }
        documents = self.db.table("corpus_documents")
        with self.write() as conn:
            if doc_id is None:
                doc_id = int(documents.insert({**values, "root": root, "path": path}).last_rowid or 0)
                old: list[int] = []
            else:
                old = self._unindex_chunks(doc_id)  # with the text they were indexed with, first
                documents.update(doc_id, values)
            first = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM corpus_chunks").fetchone()[0]
            new = list(range(first, first + len(spans)))
            conn.executemany(
                'INSERT INTO corpus_chunks (id, doc_id, ordinal, start, "end") VALUES (?, ?, ?, ?, ?)',
                (
                    (first + ordinal, doc_id, ordinal, start, end)
                    for ordinal, (start, end) in enumerate(spans)
                ),
            )
            # One statement, one transaction: FTS5 flushes its pending terms once for the document.
            conn.executemany(
                "INSERT INTO corpus_chunks_fts (rowid, text, title) VALUES (?, ?, ?)",
                (
                    (chunk_id, text[start:end], title)
                    for chunk_id, (start, end) in zip(new, spans, strict=True)
                ),
            )
        return doc_id, old, new

    def delete_corpus_document(self, doc_id: int) -> list[int]:
        """Remove a document and its chunks; the ids of the chunks removed."""
        with self.write():
            chunk_ids = self._unindex_chunks(doc_id)
            self.db.table("corpus_documents").delete_where("id = ?", [doc_id])
        return chunk_ids

    def _unindex_chunks(self, doc_id: int) -> list[int]:
        """Take a stored document's chunks out of the full-text index and the chunk table (in the
        caller's transaction); their ids. A contentless index removes a row's terms only when told
        the text the row was indexed with: the document's text as stored, cut at the chunks' offsets."""
        conn = self.db.conn
        chunks = conn.execute(
            'SELECT id, start, "end" FROM corpus_chunks WHERE doc_id = ? ORDER BY id', (doc_id,)
        ).fetchall()
        if chunks:
            title, text = self._document_texts([doc_id])[doc_id]
            conn.executemany(
                "INSERT INTO corpus_chunks_fts (corpus_chunks_fts, rowid, text, title) VALUES ('delete', ?, ?, ?)",
                ((chunk_id, text[start:end], title) for chunk_id, start, end in chunks),
            )
            conn.execute("DELETE FROM corpus_chunks WHERE doc_id = ?", (doc_id,))
        return [chunk_id for chunk_id, _, _ in chunks]

    def _document_texts(self, doc_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """(title, whole text) of these documents, by id."""
        if not doc_ids:
            return {}
        rows = self._all(
            f"SELECT id, title, text FROM corpus_documents WHERE id IN ({marks(doc_ids)})", list(doc_ids)
        )
        return {
            row["id"]: (
                row["title"],
                decompress_text(text) if isinstance(text := row["text"], bytes) else text,
            )
            for row in rows
        }

    def corpus_chunk_count(self) -> int:
        row = self._one("SELECT COUNT(*) AS n FROM corpus_chunks")
        return 0 if row is None else int(row["n"])

    def corpus_chunks_version(self) -> tuple[int, int | None, str | None]:
        """Changes whenever any process changes the chunks: their count, highest id, and the last
        time a document was indexed."""
        row = self._one(
            "SELECT (SELECT COUNT(*) FROM corpus_chunks) AS n, (SELECT MAX(id) FROM corpus_chunks) AS last,"
            " (SELECT MAX(indexed_at) FROM corpus_documents) AS at"
        )
        return (0, None, None) if row is None else (int(row["n"]), row["last"], row["at"])

    def corpus_chunks_after(self, after: int, limit: int) -> list[CorpusChunk]:
        """Chunks with ids above `after`, in order, at most `limit` (to page through all of them)."""
        rows = self._all(
            'SELECT id, doc_id, start, "end" FROM corpus_chunks WHERE id > ? ORDER BY id LIMIT ?',
            (after, limit),
        )
        return self._chunks_of(rows)

    def _chunks_of(self, rows: Sequence[Any]) -> list[CorpusChunk]:
        """Chunk rows (id, doc_id, start, end) with their text and title, read from their documents."""
        documents = self._document_texts(sorted({row["doc_id"] for row in rows}))
        return [
            CorpusChunk(
                id=row["id"],
                doc_id=row["doc_id"],
                title=documents[row["doc_id"]][0],
                text=documents[row["doc_id"]][1][row["start"] : row["end"]],
            )
            for row in rows
        ]

    def corpus_chunks_by_id(self, chunk_ids: Sequence[int]) -> list[CorpusChunk]:
        """These chunks, those the store still holds, in id order."""
        if not chunk_ids:
            return []
        rows = self._all(
            f'SELECT id, doc_id, start, "end" FROM corpus_chunks WHERE id IN ({marks(chunk_ids)}) ORDER BY id',
            list(chunk_ids),
        )
        return self._chunks_of(rows)

    def corpus_chunks_among(self, chunk_ids: Sequence[int]) -> set[int]:
        """Which of these chunk ids the store holds."""
        if not chunk_ids:
            return set()
        rows = self._all(f"SELECT id FROM corpus_chunks WHERE id IN ({marks(chunk_ids)})", list(chunk_ids))
        return {int(row["id"]) for row in rows}

    # --- reading -------------------------------------------------------------------------------

    def corpus_document_count(self, roots: Sequence[str]) -> int:
        row = self._one(
            f"SELECT COUNT(*) AS n FROM corpus_documents WHERE root IN ({marks(roots) or 'NULL'})",
            list(roots),
        )
        return 0 if row is None else int(row["n"])

    def corpus_document(self, doc_id: int) -> StoredCorpusDocument | None:
        row = self._one("SELECT * FROM corpus_documents WHERE id = ?", (doc_id,))
        return None if row is None else StoredCorpusDocument.model_validate(row)

    def corpus_documents(self, doc_ids: Sequence[int], roots: Sequence[str]) -> dict[int, CorpusDocumentInfo]:
        """Those of these documents that exist in one of the folders `roots`, by id."""
        if not doc_ids:
            return {}
        rows = self._all(
            f"SELECT id, root, path, title FROM corpus_documents WHERE id IN ({marks(doc_ids)})",
            list(doc_ids),
        )
        allowed = set(roots)
        return {row["id"]: CorpusDocumentInfo.model_validate(row) for row in rows if row["root"] in allowed}

    def corpus_mentions(self, word: str, roots: Sequence[str]) -> bool:
        """Whether any chunk (text or title) of the folders' documents holds `word`, as the full-text
        index's tokenizer reads it (stemmed: "users" holds "user")."""
        row = self._one(
            "SELECT 1 FROM corpus_chunks_fts f JOIN corpus_chunks c ON c.id = f.rowid"
            " JOIN corpus_documents d ON d.id = c.doc_id"
            f" WHERE corpus_chunks_fts MATCH ? AND d.root IN ({marks(roots)}) LIMIT 1",
            [f'"{word}"', *roots],
        )
        return row is not None

    def corpus_paths_hold(self, fragment: str, roots: Sequence[str]) -> bool:
        """Whether a document's path under the folders holds `fragment` (case-insensitively): a
        question naming a folder of the corpus ("common-licenses") names where to look."""
        row = self._one(
            f"SELECT 1 FROM corpus_documents WHERE root IN ({marks(roots)}) AND instr(lower(path), ?) > 0 LIMIT 1",
            [*roots, fragment.casefold()],
        )
        return row is not None

    def corpus_chunk_texts(self, chunk_ids: Sequence[int], first_of: Sequence[int]) -> dict[int, str]:
        """Chunk texts by document: the chunks `chunk_ids`, and the first chunk of the documents `first_of`."""
        rows = self._all(
            f'SELECT doc_id, start, "end" FROM corpus_chunks WHERE id IN ({marks(chunk_ids)})'
            f" OR (ordinal = 0 AND doc_id IN ({marks(first_of)}))",
            [*chunk_ids, *first_of],
        )
        documents = self._document_texts(sorted({row["doc_id"] for row in rows}))
        return {row["doc_id"]: documents[row["doc_id"]][1][row["start"] : row["end"]] for row in rows}

    def corpus_bm25(
        self, match: str, roots: Sequence[str], *, weights: tuple[float, float], limit: int, chunks: int
    ) -> list[tuple[int, int]]:
        """BM25 ranking of the folders' documents by their best chunk for an FTS5 `match`: `[(doc_id, chunk_id)]`.

        The full-text index ranks its chunks alone first and keeps the best `chunks`; only those are
        joined to their documents (joining every chunk that shares a word with the query made a
        query grow with the corpus). MATERIALIZED keeps bm25() in the full-text query; MIN() makes
        SQLite take the other bare columns from the row holding the minimum, so each document keeps
        its best chunk.
        """
        rows = self._all(
            "WITH top AS MATERIALIZED ("
            " SELECT rowid AS chunk_id,"
            f" bm25(corpus_chunks_fts, {float(weights[0])}, {float(weights[1])}) AS score FROM corpus_chunks_fts"
            " WHERE corpus_chunks_fts MATCH ? ORDER BY score LIMIT ?)"
            " SELECT top.chunk_id AS chunk_id, c.doc_id AS doc_id, MIN(top.score) AS score FROM top"
            " JOIN corpus_chunks c ON c.id = top.chunk_id"
            " JOIN corpus_documents d ON d.id = c.doc_id"
            f" WHERE d.root IN ({marks(roots)})"
            " GROUP BY c.doc_id ORDER BY score, c.doc_id LIMIT ?",
            [match, chunks, *roots, limit],
        )
        return [(row["doc_id"], row["chunk_id"]) for row in rows]

    def corpus_titles_version(self, roots: Sequence[str]) -> tuple[int, int | None, str | None]:
        """Changes whenever the folders' documents do: their count, highest id and last indexing time."""
        row = self._one(
            "SELECT COUNT(*) AS n, MAX(id) AS last, MAX(indexed_at) AS at FROM corpus_documents"
            f" WHERE root IN ({marks(roots)})",
            list(roots),
        )
        return (0, None, None) if row is None else (int(row["n"]), row["last"], row["at"])

    def corpus_titles(self, roots: Sequence[str]) -> list[tuple[int, str]]:
        """(id, title) of every document of the folders."""
        rows = self._all(
            f"SELECT id, title FROM corpus_documents WHERE root IN ({marks(roots)})", list(roots)
        )
        return [(row["id"], row["title"]) for row in rows]

"""The user's own documents: folders indexed into SQLite full-text search and vectors, searched hybrid.

Files: ``.md``, ``.markdown``, ``.txt``, ``.html``, ``.htm`` and ``.pdf`` (anything else, and hidden
files and folders, are skipped). Only regular files are read: a FIFO, a device or a socket with such
a name is skipped with a note and never opened (opening a FIFO blocks, reading a device never
ends), and a file larger than its cap (PDF 50 MB, other kinds 10 MB) is skipped with a note. How a
file becomes a title and a text, and how the text is cut into chunks: ``documents.py``; HTML and
PDF are parsed in a worker process under the source time limit and a memory limit
(``parsing.py``), so no file can stall or crash indexing.

Indexing is incremental. A file whose size and modification time match what is stored is not
read; one that differs is read and hashed (sha256), and only when the hash changed is it chunked
again and its chunks embedded again. Files gone from disk are removed.

Path safety: every path is resolved (symlinks followed, ``..`` collapsed) and must then lie inside
a configured folder, tested with ``Path.is_relative_to`` on resolved paths (a string prefix test
would let ``/data/corpus-secret`` pass for ``/data/corpus``). The indexer walks without following
symlinked folders and skips, reporting it, any symlink that points outside the corpus folders.

Ranking: BM25, vectors and title links fused by reciprocal rank fusion; see ``ranking.py``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat as stat_mode
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from research_mcp.errors import InvalidInput, NotConfigured, NotFound, SourceError
from research_mcp.sources.documents import (
    chunk_spans,
    describe_file_kind,
    embedding_text,
    read_document,
    read_regular_file,
    size_cap,
)
from research_mcp.sources.parsing import DocumentParser
from research_mcp.sources.ranking import (
    WORD,
    Fusion,
    TitleIndex,
    best_per_document,
    fts_query,
    query_words,
    snippet,
)

if TYPE_CHECKING:
    from research_mcp.contracts import Embedder
    from research_mcp.storage.models import CorpusDocumentInfo, CorpusFileState
    from research_mcp.storage.store import Store
    from research_mcp.storage.vectors import KnowledgeIndex

__all__ = ["Corpus", "CorpusDocument", "CorpusHit", "IndexReport", "SearchMode", "fts_query"]

logger = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "lexical", "dense"]

SUFFIXES = frozenset({".md", ".markdown", ".txt", ".html", ".htm", ".pdf"})
#: Seconds one HTML or PDF file may take to parse when no parser is given (the server's is built
#: with RESEARCH_MCP_SOURCE_TIMEOUT).
DEFAULT_PARSE_TIMEOUT = 20.0
#: bm25() column weights (text, title): a query word in the title says what the whole document is
#: about, so it counts as much as two in the body, the usual BM25F-style title boost.
BM25_WEIGHTS = (1.0, 2.0)
#: Documents each retriever ranks per requested hit, before fusion.
POOL_FACTOR = 5
MIN_POOL = 50
#: Chunks the full-text index ranks per document wanted, before they are grouped by document: ample
#: for a document's best chunk to be among them unless a few documents hold most of the best chunks.
LEXICAL_CHUNKS_PER_DOC = 10
#: The first-pass documents whose matched passages are searched for other documents' titles.
LINK_SEEDS = 3
#: Chunks embedded and upserted together: bounds the memory one indexing step holds.
EMBED_BATCH = 256
#: Seconds between two progress log lines of a long re-embedding.
PROGRESS_SECONDS = 5.0


@dataclass(frozen=True)
class CorpusHit:
    """A corpus document found by a search, with the passage that matched best."""

    doc_id: int
    ref: str
    path: str
    title: str
    snippet: str
    score: float


@dataclass(frozen=True)
class CorpusDocument:
    """A corpus document with its full text, as extractors read it."""

    doc_id: int
    ref: str
    root: str
    path: str
    title: str
    text: str
    content_hash: str


@dataclass(frozen=True)
class IndexReport:
    """What one indexing pass did; ``read`` counts the files whose bytes were read."""

    added: int
    updated: int
    unchanged: int
    removed: int
    errors: list[str] = field(default_factory=list)
    read: int = 0


@dataclass
class _Tally:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    read: int = 0
    errors: list[str] = field(default_factory=list)


class Corpus:
    """Folders of the user's documents: indexed incrementally, searched hybrid, read by id.

    ``index`` is the knowledge index holding chunk vectors (its ``chunks`` collection). Given only
    an ``embedder``, the corpus keeps its vectors in an in-memory index, rebuilt from SQLite by the
    first :meth:`index` call of the process. Given neither, search is lexical only.

    ``parser`` parses HTML and PDF files (the server shares one with the fetcher); without one,
    each :meth:`index` call starts its own and stops it when done.
    """

    def __init__(
        self,
        store: Store,
        roots: Sequence[Path],
        *,
        embedder: Embedder | None = None,
        index: KnowledgeIndex | None = None,
        parser: DocumentParser | None = None,
    ) -> None:
        self._store = store
        self._parser = parser
        self.roots = [Path(root).expanduser().resolve() for root in roots]
        if index is None and embedder is not None:
            from research_mcp.storage.vectors import KnowledgeIndex

            index = KnowledgeIndex.open(location=":memory:", embedder=embedder)
        self._index = index
        self._titles: tuple[tuple[Any, ...], TitleIndex] | None = None

    @property
    def dense_available(self) -> bool:
        return self._index is not None and self._index.available

    # --- paths ---------------------------------------------------------------------------------

    def resolve(self, path: str | Path) -> Path:
        """The resolved path, if it lies inside a configured folder; InvalidInput otherwise.

        A relative path is taken relative to each folder in turn.
        """
        if not self.roots:
            raise InvalidInput("No corpus folders are configured: set RESEARCH_MCP_CORPUS to your folders.")
        raw = Path(path).expanduser()
        candidates = [raw] if raw.is_absolute() else [root / raw for root in self.roots]
        for candidate in candidates:
            try:
                resolved = candidate.resolve()
            except (OSError, RuntimeError, ValueError):  # symlink loops, NUL bytes
                continue
            if self._owner(resolved) is not None:
                return resolved
        raise InvalidInput(
            f"{str(path)!r} is outside the corpus folders ({', '.join(str(r) for r in self.roots)}); "
            f"give a path inside one of them (symlinks are followed before the check)."
        )

    def _owner(self, resolved: Path) -> Path | None:
        """The most specific configured folder holding a resolved path."""
        owners = [root for root in self.roots if resolved.is_relative_to(root)]
        return max(owners, key=lambda root: len(root.parts)) if owners else None

    # --- indexing ------------------------------------------------------------------------------

    def index(self, folder: Path | None = None) -> IndexReport:
        """Bring the index up to date with the files on disk (all folders, or one folder inside one)."""
        if folder is None:
            scopes = [(root, root) for root in self.roots]
        else:
            top = self.resolve(folder)
            if not top.is_dir():
                raise InvalidInput(f"{str(folder)!r} is not a folder; give a folder inside the corpus.")
            owner = self._owner(top)
            assert owner is not None
            scopes = [(owner, top)]
        tally = _Tally()
        stale_vectors = self.dense_available and self._vectors_out_of_step()
        pending: list[tuple[int, str, dict[str, Any]]] = []
        parser = self._parser or DocumentParser(timeout=DEFAULT_PARSE_TIMEOUT)
        try:
            for root, top in scopes:
                if not top.is_dir():
                    tally.errors.append(f"{top}: folder not found; its documents are kept until it is back")
                    continue
                self._index_scope(root, top, tally, pending, parser, embed=not stale_vectors)
        finally:
            if parser is not self._parser:
                parser.close()
        try:
            self._embed(pending)
            if self.dense_available and (stale_vectors or self._vectors_out_of_step()):
                self.rebuild_vectors()
        except NotConfigured as err:
            tally.errors.append(f"vectors: {err}")
            self._drop_vectors(err)
        return IndexReport(
            added=tally.added,
            updated=tally.updated,
            unchanged=tally.unchanged,
            removed=tally.removed,
            errors=tally.errors,
            read=tally.read,
        )

    def _index_scope(
        self,
        root: Path,
        top: Path,
        tally: _Tally,
        pending: list[tuple[int, str, dict[str, Any]]],
        parser: DocumentParser,
        *,
        embed: bool,
    ) -> None:
        known = {
            row.path: row
            for row in self._store.corpus_files(str(root))
            if top == root or PurePosixPath(row.path).is_relative_to(top.relative_to(root).as_posix())
        }
        seen: set[str] = set()
        for file in self._walk(root, top, tally.errors):
            rel = file.relative_to(root).as_posix()
            if rel in seen:
                continue
            seen.add(rel)
            row = known.get(rel)
            try:
                stat = file.stat()
            except OSError as err:
                tally.errors.append(f"{rel}: cannot be read ({err.strerror}); skipped")
                continue
            if not stat_mode.S_ISREG(stat.st_mode):
                self._fail(
                    tally, row, f"{rel}: {describe_file_kind(stat.st_mode)}, not a regular file; skipped"
                )
                continue
            if row is not None and row.size == stat.st_size and row.mtime_ns == stat.st_mtime_ns:
                tally.unchanged += 1
                continue
            cap = size_cap(file.suffix.lower())
            if stat.st_size > cap:
                self._fail(tally, row, f"{rel}: larger than {cap // 2**20} MB; skipped")
                continue
            try:
                data = read_regular_file(file, cap)
            except SourceError as err:
                self._fail(tally, row, f"{rel}: {err}")
                continue
            except OSError as err:
                tally.errors.append(f"{rel}: cannot be read ({err.strerror}); skipped")
                continue
            tally.read += 1
            digest = hashlib.sha256(data).hexdigest()
            if row is not None and row.content_hash == digest:
                self._store.touch_corpus_document(row.id, size=stat.st_size, mtime_ns=stat.st_mtime_ns)
                tally.unchanged += 1
                continue
            try:
                document = read_document(data, file.suffix.lower(), rel, parser)
            except SourceError as err:
                self._fail(tally, row, f"{rel}: {err}")
                continue
            if document is None:  # an empty file: nothing to find in it, nothing to report
                self._fail(tally, row, None)
                continue
            title, text = document
            chunks = self._save(root, rel, title, text, digest, stat, row)
            if embed:
                pending.extend(chunks)
            if row is None:
                tally.added += 1
            else:
                tally.updated += 1
            if len(pending) >= EMBED_BATCH:
                try:
                    self._embed(pending)
                except NotConfigured as err:
                    self._drop_vectors(err)
        gone = [row for path, row in known.items() if path not in seen]
        for row in gone:
            self._delete(row.id)
        tally.removed += len(gone)

    def _walk(self, root: Path, top: Path, errors: list[str]) -> Iterator[Path]:
        """Files to index under ``top``, resolved, in a stable order; escaping symlinks reported."""

        def unreadable(err: OSError) -> None:
            errors.append(f"{err.filename}: cannot be listed ({err.strerror}); skipped")

        for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable, followlinks=False):
            here = Path(dirpath)
            for name in sorted(dirnames):
                if not name.startswith(".") and (here / name).is_symlink():
                    self._check_link(here / name, errors)  # never followed; its target is walked if ours
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                path = here / name
                if name.startswith(".") or path.suffix.lower() not in SUFFIXES:
                    continue
                if path.is_symlink():
                    target = self._check_link(path, errors)
                    # A target that is not a regular file (a FIFO, a device) is reported by the indexer.
                    if target is None or target.is_dir() or target.suffix.lower() not in SUFFIXES:
                        continue
                    path = target
                if self._owner(path) == root:  # a file of a nested corpus folder belongs to that one
                    yield path

    def _check_link(self, link: Path, errors: list[str]) -> Path | None:
        """The target of a symlink inside the corpus folders; None (reported) for one outside or broken."""
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError):
            errors.append(f"{link}: broken symlink; skipped")
            return None
        if self._owner(target) is None:
            errors.append(f"{link}: symlink points outside the corpus folders ({target}); skipped")
            return None
        return target

    def _fail(self, tally: _Tally, row: CorpusFileState | None, message: str | None) -> None:
        """Report a file that cannot be indexed; its earlier version, if any, leaves the index."""
        if message is not None:
            tally.errors.append(message)
        if row is not None:
            self._delete(row.id)
            tally.removed += 1

    def _save(
        self,
        root: Path,
        rel: str,
        title: str,
        text: str,
        digest: str,
        stat: os.stat_result,
        row: CorpusFileState | None,
    ) -> list[tuple[int, str, dict[str, Any]]]:
        """Store a new or changed document and its chunks; return the chunks to embed."""
        spans = list(chunk_spans(text))
        doc_id, old_chunks, chunk_ids = self._store.save_corpus_document(
            doc_id=None if row is None else row.id,
            root=str(root),
            path=rel,
            title=title,
            text=text,
            content_hash=digest,
            size=stat.st_size,
            mtime_ns=stat.st_mtime_ns,
            spans=spans,
        )
        if old_chunks and self._index is not None:
            self._index.delete("chunks", old_chunks)
        return [
            (chunk_id, embedding_text(title, text[start:end]), {"doc_id": doc_id})
            for chunk_id, (start, end) in zip(chunk_ids, spans, strict=True)
        ]

    def _delete(self, doc_id: int) -> None:
        chunk_ids = self._store.delete_corpus_document(doc_id)
        if chunk_ids and self._index is not None:
            self._index.delete("chunks", chunk_ids)

    def _drop_vectors(self, err: NotConfigured) -> None:
        """The embedder cannot run (its model is missing): go on with lexical search alone."""
        logger.warning("corpus search goes on without vectors: %s", err)
        self._index = None

    def _embed(self, pending: list[tuple[int, str, dict[str, Any]]]) -> None:
        if self._index is not None and pending:
            self._index.add("chunks", pending)
        pending.clear()

    def _vectors_out_of_step(self) -> bool:
        assert self._index is not None
        return self._index.count("chunks") != self._store.corpus_chunk_count()

    def rebuild_vectors(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Re-embed every chunk from SQLite: the vector index is derived data and may be lost.

        Also how a change of embedder is caught up: its collection starts empty. Chunks are read
        and embedded EMBED_BATCH at a time, so memory does not grow with the corpus. ``progress``
        is called after each batch with (chunks embedded, chunks in all); a log line reports the
        same at most every PROGRESS_SECONDS.
        """
        if self._index is None:
            return
        total = self._store.corpus_chunk_count()
        embedder = self._index.embedder_for("chunks")
        logger.info("re-embedding %d corpus chunks from SQLite with %s", total, embedder.name)
        self._index.reset("chunks")
        last, done, started = 0, 0, time.monotonic()
        logged = started
        while True:
            chunks = self._store.corpus_chunks_after(last, EMBED_BATCH)
            if not chunks:
                break
            self._index.add(
                "chunks", [(c.id, embedding_text(c.title, c.text), {"doc_id": c.doc_id}) for c in chunks]
            )
            last, done = chunks[-1].id, done + len(chunks)
            if progress is not None:
                progress(done, total)
            if time.monotonic() - logged >= PROGRESS_SECONDS:
                logged = time.monotonic()
                logger.info("re-embedding corpus chunks: %d of %d", done, total)
        logger.info("re-embedded %d corpus chunks in %.1f s", done, time.monotonic() - started)

    # --- reading -------------------------------------------------------------------------------

    @property
    def _root_names(self) -> list[str]:
        return [str(root) for root in self.roots]

    def document_count(self) -> int:
        return self._store.corpus_document_count(self._root_names)

    def read(self, doc_id: int) -> CorpusDocument:
        """A document of the configured folders by id; NotFound otherwise."""
        row = self._store.corpus_document(doc_id)
        if row is None or Path(row.root) not in self.roots:
            raise NotFound("corpus document", f"corpus:{doc_id}")
        return CorpusDocument(
            doc_id=row.id,
            ref=f"corpus:{row.id}",
            root=row.root,
            path=row.path,
            title=row.title,
            text=row.text,
            content_hash=row.content_hash,
        )

    # --- search --------------------------------------------------------------------------------

    def search(
        self, query: str, *, limit: int = 10, mode: SearchMode = "hybrid", follow_links: bool = True
    ) -> list[CorpusHit]:
        """Documents best matching ``query``, best first.

        ``mode`` and ``follow_links`` isolate one signal, for evaluation; the default uses them all.
        """
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, not {limit!r}.")
        if not self.roots or not WORD.search(query):
            return []
        pool = max(limit * POOL_FACTOR, MIN_POOL)
        rankings: list[list[tuple[int, int | None]]] = []
        if mode in ("hybrid", "lexical"):
            rankings.append(list(self._lexical(query, pool)))
        if mode in ("hybrid", "dense"):
            rankings.append(list(self._dense(query, pool)))
        fused = Fusion(rankings)
        if mode == "hybrid" and follow_links:
            linked = self._linked(query, [(d, fused.chunk[d]) for d in fused.order[:LINK_SEEDS]])
            if linked:
                fused = Fusion([*rankings, linked])
        order = fused.order[:limit]
        if not order:
            return []
        docs = self._in_scope(order)
        texts = self._chunk_texts(order, fused.chunk)
        words = query_words(query)
        return [
            CorpusHit(
                doc_id=doc_id,
                ref=f"corpus:{doc_id}",
                path=docs[doc_id].path,
                title=docs[doc_id].title,
                snippet=snippet(texts.get(doc_id, ""), words),
                score=fused.score[doc_id],
            )
            for doc_id in order
            if doc_id in docs
        ]

    def _chunk_texts(self, doc_ids: Sequence[int], chunk: dict[int, int | None]) -> dict[int, str]:
        """Each document's matched chunk text (its first chunk when only a link found it)."""
        ids = [chunk[d] for d in doc_ids if chunk[d] is not None]
        firsts = [d for d in doc_ids if chunk[d] is None]
        return self._store.corpus_chunk_texts([i for i in ids if i is not None], firsts)

    def _lexical(self, query: str, pool: int) -> list[tuple[int, int]]:
        """BM25 ranking of documents by their best chunk: ``[(doc_id, chunk_id)]``."""
        match = fts_query(query)
        if match is None:
            return []
        return self._store.corpus_bm25(
            match, self._root_names, weights=BM25_WEIGHTS, limit=pool, chunks=pool * LEXICAL_CHUNKS_PER_DOC
        )

    def _linked(self, query: str, seeds: list[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
        """Documents named in the query, then those named in the seeds' matched passages."""
        titles = self._title_index()
        named = titles.named_in(query, ignore_case=True)
        passages = self._chunk_texts([d for d, _ in seeds], dict(seeds))
        for doc_id, _ in seeds:
            named += [d for d in titles.named_in(passages.get(doc_id, ""), ignore_case=False) if d != doc_id]
        return [(doc_id, None) for doc_id in dict.fromkeys(named)]

    def _title_index(self) -> TitleIndex:
        """The titles of the configured folders' documents, rebuilt when the documents change."""
        key = self._store.corpus_titles_version(self._root_names)
        if self._titles is None or self._titles[0] != key:
            self._titles = (key, TitleIndex(iter(self._store.corpus_titles(self._root_names))))
        return self._titles[1]

    def _dense(self, query: str, pool: int) -> list[tuple[int, int]]:
        """Cosine-similarity ranking of documents by their best chunk: ``[(doc_id, chunk_id)]``."""
        if self._index is None or not self._index.available:
            return []
        try:
            hits = self._index.search("chunks", query, limit=pool, min_score=-1.0)
        except NotConfigured as err:
            self._drop_vectors(err)
            return []
        ranking = best_per_document((int(h.payload["doc_id"]), h.id) for h in hits if "doc_id" in h.payload)
        in_scope = self._in_scope([doc_id for doc_id, _ in ranking])
        return [(doc_id, chunk_id) for doc_id, chunk_id in ranking if doc_id in in_scope]

    def _in_scope(self, doc_ids: Sequence[int]) -> dict[int, CorpusDocumentInfo]:
        """Those documents that exist and belong to a configured folder, by id."""
        return self._store.corpus_documents(doc_ids, self._root_names)

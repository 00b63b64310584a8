"""The user's own documents: folders indexed into SQLite full-text search and vectors, searched hybrid.

Only regular files are read: a FIFO, device or socket with a document's name is skipped with a note
and never opened (opening a FIFO blocks), and so is a file over its cap (PDF 50 MB, others 10 MB).
Which files are documents: ``folders.py``; title, text and chunks: ``documents.py``; HTML and PDF
are parsed in a worker process under time and memory limits (``parsing.py``). Indexing is
incremental and resumable (``indexing.py``): only a file whose size, modification time and then
hash changed is chunked and embedded again. Ranking fuses BM25, vectors and title links
(``ranking.py``).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from research_mcp.answering.terms import terms
from research_mcp.core.errors import InvalidInput, NotConfigured, NotFound, shown
from research_mcp.core.ids import corpus_ref
from research_mcp.sources.chunk_vectors import chunk_point
from research_mcp.sources.documents import chunk_spans
from research_mcp.sources.folders import CorpusFolders, storable_name, why_not_a_document
from research_mcp.sources.index_progress import CorpusStatus, IndexProgress, IndexReport
from research_mcp.sources.indexing import index_corpus, rebuild_vectors
from research_mcp.sources.parsing import DocumentParser
from research_mcp.sources.ranking import (
    WORD,
    Fusion,
    Page,
    TitleIndex,
    best_per_document,
    fts_query,
    one_per_page,
    page_of,
    query_words,
    snippet,
)
from research_mcp.sources.readers import READER_VERSION

if TYPE_CHECKING:
    from research_mcp.core.contracts import Embedder
    from research_mcp.storage.models import CorpusDocumentInfo, CorpusFailure, CorpusFileState
    from research_mcp.storage.store import Store
    from research_mcp.storage.vectors import KnowledgeIndex

__all__ = ["Corpus", "CorpusDocument", "CorpusHit", "CorpusStatus", "IndexReport", "SearchMode", "fts_query"]

logger = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "lexical", "dense"]

#: Seconds one HTML or PDF file may take to parse when no parser is given (the server's is built
#: with RESEARCH_MCP_SOURCE_TIMEOUT).
DEFAULT_PARSE_TIMEOUT = 20.0
#: bm25() column weights (text, title): a query word in the title says what the whole document is
#: about, so it counts as much as two in the body, the usual BM25F-style title boost.
BM25_WEIGHTS = (1.0, 2.0)
#: The relevance floor (cosine of the corpus embedder's vectors, the static MiniLM): a query no chunk comes this close
#: to has nothing relevant in the corpus. Calibrated by ``python -m bench.relevance``; recalibrate
#: it there when the embedding model changes.
RELEVANCE_FLOOR = 0.35
#: Documents each retriever ranks per requested hit, before fusion.
POOL_FACTOR = 5
MIN_POOL = 50
#: Chunks the full-text index ranks per document wanted, before they are grouped by document: ample
#: for a document's best chunk to be among them unless a few documents hold most of the best chunks.
LEXICAL_CHUNKS_PER_DOC = 10
#: The first-pass documents whose matched passages are searched for other documents' titles.
LINK_SEEDS = 3
#: Words joined by "_", "." or "-" ("PASS_WARN_AGE", "nsswitch.conf", "date-of-last-password-change").
_IDENTIFIER = re.compile(r"[^\W_]+(?:[_.-][^\W_]+)+")


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
        self.folders = CorpusFolders(roots)
        self.roots = self.folders.roots
        if index is None and embedder is not None:
            from research_mcp.storage.vectors import KnowledgeIndex

            index = KnowledgeIndex.open(location=":memory:", embedder=embedder)
        self._index = index
        self._titles: tuple[tuple[Any, ...], TitleIndex] | None = None
        self.progress = IndexProgress(known=self.document_count())

    @property
    def dense_available(self) -> bool:
        return self._index is not None and self._index.available

    # --- paths (folders.py) ------------------------------------------------------------------

    def resolve(self, path: str | Path) -> Path:
        """The resolved path, if it lies inside a configured folder; InvalidInput otherwise."""
        return self.folders.resolve(path)

    # --- indexing (the pass itself: indexing.py) ---------------------------------------------

    @property
    def store(self) -> Store:
        return self._store

    @property
    def vectors(self) -> KnowledgeIndex | None:
        """The index holding chunk vectors; None when search is lexical only."""
        return self._index

    def status(self) -> CorpusStatus:
        """How far indexing has got, for tool results, the status resource and ``doctor``."""
        return self.progress.status()

    def index(
        self,
        folder: Path | None = None,
        *,
        progress: IndexProgress | None = None,
        stop: threading.Event | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the files on disk (all folders, or one folder inside one).

        Setting ``stop`` ends the pass after the file or batch at hand; what it did is kept.
        """
        if folder is None:
            scopes = [(root, root) for root in self.roots]
        else:
            top = self.resolve(folder)
            if not top.is_dir():
                raise InvalidInput(f"{str(folder)!r} is not a folder; give a folder inside the corpus.")
            owner = self.folders.owner(top)
            assert owner is not None
            scopes = [(owner, top)]
        parser = self._parser or DocumentParser(timeout=DEFAULT_PARSE_TIMEOUT)
        try:
            return index_corpus(self, scopes, parser, progress or self.progress, stop)
        finally:
            if parser is not self._parser:
                parser.close()

    def walk(
        self, root: Path, top: Path, errors: list[str], passed: Counter[str] | None = None
    ) -> Iterator[Path]:
        return self.folders.walk(root, top, errors, passed)

    def known_files(self, root: Path) -> list[CorpusFileState]:
        """What the index holds of the files of one folder, to compare with the disk."""
        return self._store.corpus_files(str(root))

    def failures(self, root: Path) -> dict[str, CorpusFailure]:
        """The files of one folder that could not be indexed, by path, as they were when they failed."""
        return self._store.corpus_failures(str(root))

    def remember_failure(self, failure: CorpusFailure) -> None:
        self._store.remember_corpus_failure(failure)

    def forget_failures(self, root: Path, paths: Sequence[str]) -> None:
        if paths:
            self._store.forget_corpus_failures(str(root), paths)

    def touch_document(self, doc_id: int, stat: os.stat_result) -> None:
        """A file touched but unchanged: remember its new size and time, so it is not read again."""
        self._store.touch_corpus_document(doc_id, size=stat.st_size, mtime_ns=stat.st_mtime_ns)

    def save_document(
        self,
        root: Path,
        rel: str,
        title: str,
        text: str,
        digest: str,
        stat: os.stat_result,
        row: CorpusFileState | None,
    ) -> list[tuple[int, str, dict[str, Any]]]:
        """Store a new or changed document and its chunks (one transaction); return the chunks to embed."""
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
            reader_version=READER_VERSION,
        )
        if old_chunks and self._index is not None:
            self._index.delete("chunks", old_chunks)
        return [
            chunk_point(chunk_id, doc_id, title, text[start:end])
            for chunk_id, (start, end) in zip(chunk_ids, spans, strict=True)
        ]

    def delete_document(self, doc_id: int) -> None:
        chunk_ids = self._store.delete_corpus_document(doc_id)
        if chunk_ids and self._index is not None:
            self._index.delete("chunks", chunk_ids)

    def drop_vectors(self, err: NotConfigured) -> None:
        """The embedder cannot run (its model is missing): go on with lexical search alone."""
        logger.warning("corpus search goes on without vectors: %s", err)
        self._index = None

    def rebuild_vectors(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Re-embed every chunk from SQLite: the vector index is derived data and may be lost."""
        rebuild_vectors(self, progress)

    # --- reading -------------------------------------------------------------------------------

    @property
    def _root_names(self) -> list[str]:
        return [str(root) for root in self.roots]

    def document_count(self) -> int:
        return self._store.corpus_document_count(self._root_names)

    def document_at(self, path: str | Path) -> int:
        """The id of the indexed document at a local path inside the corpus folders; InvalidInput
        (saying why) for a path outside them, one that is no document, or one not indexed yet."""
        resolved = self.resolve(path)
        owner = self.folders.owner(resolved)
        assert owner is not None
        rel = storable_name(resolved.relative_to(owner).as_posix())
        row = next((f for f in self._store.corpus_files(str(owner)) if f.path == rel), None)
        if row is not None:
            return row.id
        if (refusal := why_not_a_document(path, resolved)) is not None:
            raise InvalidInput(refusal)
        status = self.status()
        if status.complete:
            raise InvalidInput(
                f"{shown(str(path))} is in the corpus but was skipped when it was indexed (research-mcp index "
                "names why); fix the file, and it is read on the next pass."
            )
        raise InvalidInput(
            f"{shown(str(path))} is in the corpus but not indexed yet ({status.line()}); try again later."
        )

    def page(self, doc_id: int) -> Page | None:
        """The page a document of the configured folders is, whatever its format (`page_of`):
        ``git-reset.txt`` and ``git-reset.html`` are one. None when it has no other format's name
        or is not in the folders."""
        info = self._in_scope([doc_id]).get(doc_id)
        return page_of(info.root, info.path) if info is not None else None

    def read(self, doc_id: int) -> CorpusDocument:
        """A document of the configured folders by id; NotFound otherwise."""
        row = self._store.corpus_document(doc_id)
        if row is None or Path(row.root) not in self.roots:
            raise NotFound("corpus document", corpus_ref(doc_id))
        return CorpusDocument(
            doc_id=row.id,
            ref=corpus_ref(row.id),
            root=row.root,
            path=row.path,
            title=row.title,
            text=row.text,
            content_hash=row.content_hash,
        )

    # --- search --------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        mode: SearchMode = "hybrid",
        follow_links: bool = True,
        min_similarity: float | None = None,
    ) -> list[CorpusHit]:
        """Documents best matching ``query``, best first.

        ``mode`` and ``follow_links`` isolate one signal, for evaluation; the default uses them all.
        ``min_similarity`` is a relevance floor: when no chunk of the corpus is that close in meaning
        to the query (cosine of the embeddings), nothing is relevant and no document is returned,
        however many share a word with it. Without vectors the floor cannot be applied.
        """
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, not {limit!r}.")
        if not self.roots or not WORD.search(query):
            return []
        pool = max(limit * POOL_FACTOR, MIN_POOL)
        rankings: list[list[tuple[int, int | None]]] = []
        dense: list[tuple[int, int]] = []
        if mode in ("hybrid", "dense") or min_similarity is not None:
            dense, best = self._dense(query, pool)
            if min_similarity is not None and best is not None and best < min_similarity:
                return []
        if mode in ("hybrid", "lexical"):
            rankings.append(list(self._lexical(query, pool)))
        if mode in ("hybrid", "dense"):
            rankings.append(list(dense))
        fused = Fusion(rankings)
        if mode == "hybrid" and follow_links:
            linked = self._linked(query, [(d, fused.chunk[d]) for d in fused.order[:LINK_SEEDS]])
            if linked:
                fused = Fusion([*rankings, linked])
        docs = self._in_scope(fused.order[: limit * 2])  # a page in two formats counts once
        in_scope = [doc_id for doc_id in fused.order[: limit * 2] if doc_id in docs]
        order = one_per_page(in_scope, lambda doc_id: page_of(docs[doc_id].root, docs[doc_id].path))[:limit]
        if not order:
            return []
        texts = self._chunk_texts(order, fused.chunk)
        words = query_words(query)
        return [
            CorpusHit(
                doc_id=doc_id,
                ref=corpus_ref(doc_id),
                path=docs[doc_id].path,
                title=docs[doc_id].title,
                snippet=snippet(texts.get(doc_id, ""), words),
                score=fused.score[doc_id],
            )
            for doc_id in order
            if doc_id in docs
        ]

    def unmentioned(self, question: str) -> list[str]:
        """The question's content words that no document of the folders holds, in any spelling the
        matching knows ("licence" is held by a "license"), and its identifiers no document holds as
        written: what the documents cannot answer about. A word naming a document's path or folder
        ("common-licenses") is held. Numbers and stopwords aside."""
        if not self.roots:
            return []
        missing = []
        for word in query_words(question):
            spellings = [word, *(term for term in terms(word) if '"' not in term)]
            if word.isdigit() or len(spellings) == 1:
                continue
            if not any(self._mentions(spelling) for spelling in dict.fromkeys(spellings)):
                missing.append(word)
        # An identifier ("PASS_WARN_AGE", "nsswitch.conf") is held only as written, its parts together.
        for identifier in dict.fromkeys(_IDENTIFIER.findall(question)):
            if not self._mentions(identifier):
                missing.append(identifier)
        return missing

    def _mentions(self, word: str) -> bool:
        """A document's text or title holds the word, or the path of a document or folder does."""
        roots = self._root_names
        return (
            self._store.corpus_mentions(word, roots)
            or self._store.corpus_paths_hold(word, roots)
            or any(word.casefold() in Path(root).name.casefold() for root in roots)
        )

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

    def _dense(self, query: str, pool: int) -> tuple[list[tuple[int, int]], float | None]:
        """Cosine-similarity ranking of documents by their best chunk, ``[(doc_id, chunk_id)]``, and
        the best cosine of a chunk in scope (None without vectors)."""
        if self._index is None or not self._index.available:
            return [], None
        try:
            hits = self._index.search("chunks", query, limit=pool, min_score=-1.0)
        except NotConfigured as err:
            self.drop_vectors(err)
            return [], None
        ranking = best_per_document((int(h.payload["doc_id"]), h.id) for h in hits if "doc_id" in h.payload)
        in_scope = self._in_scope([doc_id for doc_id, _ in ranking])
        scores = [h.score for h in hits if h.payload.get("doc_id") in in_scope]
        return [(d, c) for d, c in ranking if d in in_scope], max(scores, default=None)

    def _in_scope(self, doc_ids: Sequence[int]) -> dict[int, CorpusDocumentInfo]:
        """Those documents that exist and belong to a configured folder, by id."""
        return self._store.corpus_documents(doc_ids, self._root_names)

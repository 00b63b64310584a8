"""The user's own documents: folders indexed into SQLite full-text search and vectors, searched hybrid.

Files: ``.md``, ``.markdown``, ``.txt``, ``.html``, ``.htm`` and ``.pdf`` (anything else, and hidden
files and folders, are skipped). A document's title is its first Markdown heading (or front-matter
``title:``), its HTML ``<title>`` or its PDF metadata title, else the file name without extension.

Indexing is incremental. A file whose size and modification time match what is stored is not
read; one that differs is read and hashed (sha256), and only when the hash changed is it chunked
again and its chunks embedded again. Files gone from disk are removed. Chunks are ~800-1,200
characters cut on paragraph, then sentence, then word boundaries, each with its offsets into the
document text, so quotes can be located.

Path safety: every path is resolved (symlinks followed, ``..`` collapsed) and must then lie inside
a configured folder, tested with ``Path.is_relative_to`` on resolved paths (a string prefix test
would let ``/data/corpus-secret`` pass for ``/data/corpus``). The indexer walks without following
symlinked folders and skips, reporting it, any symlink that points outside the corpus folders.

Ranking: up to three rankings of documents, fused by reciprocal rank fusion (RRF),
``score = sum 1 / (60 + rank)`` (Cormack, Clarke and Büttcher, SIGIR 2009):

1. BM25 over the FTS5 index of chunk text and document title (title weighted 2). The MATCH
   expression is the query's word tokens, stopwords dropped, each quoted and OR-ed, so no user
   punctuation can be read as FTS5 syntax.
2. Cosine similarity of MiniLM vectors in the knowledge index's ``chunks`` collection (each
   chunk embedded with its document's title in front, the context a chunk cut from the middle
   of a document lacks).
3. Title links: the documents whose title (less a trailing "(...)" disambiguator) the query
   names, then those named in the best passages of the top 3 documents of the fusion of 1 and 2.
   It follows references the way a reader does: a passage that answers part of a question often
   names the document that answers the rest (multi-hop questions; notes that refer to other
   notes by title). It needs no model call and no labelled data.

Chunk rankings become document rankings by each document's best chunk. RRF rather than a weighted
sum of scores because the scores live on unrelated scales: bm25 is unbounded and shifts with query
length and corpus statistics, cosine similarity is bunched in a narrow band that depends on the
model, and title links have no score at all; a weighted sum needs per-query normalisation and
weights fitted to labelled data, which a user's corpus does not have. RRF uses ranks only, has one
constant whose published default is robust, and rewards documents that several signals place high.
Without a vector index, rankings 1 and 3 are fused. `bench/retrieval.py` measures each part.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from research_mcp.errors import InvalidInput, NotConfigured, NotFound, SourceError
from research_mcp.sources.text import extract_text

if TYPE_CHECKING:
    from research_mcp.storage.embeddings import Embedder
    from research_mcp.storage.knowledge import KnowledgeIndex
    from research_mcp.storage.store import Store

__all__ = ["Corpus", "CorpusDocument", "CorpusHit", "IndexReport", "SearchMode", "chunk_spans", "fts_query"]

logger = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "lexical", "dense"]

SUFFIXES = frozenset({".md", ".markdown", ".txt", ".html", ".htm", ".pdf"})
MAX_FILE_BYTES = 50 * 1024 * 1024
CHUNK_MIN_CHARS = 800
CHUNK_MAX_CHARS = 1200
#: The RRF constant of Cormack et al. (2009); it damps the weight of the very top ranks.
RRF_K = 60
#: bm25() column weights (text, title): a query word in the title says what the whole document is
#: about, so it counts as much as two in the body, the usual BM25F-style title boost.
BM25_WEIGHTS = (1.0, 2.0)
#: Documents each retriever ranks per requested hit, before fusion.
POOL_FACTOR = 5
MIN_POOL = 50
#: The first-pass documents whose matched passages are searched for other documents' titles.
LINK_SEEDS = 3
#: Titles of more words than this are not names and are not looked for in texts.
MAX_NAME_WORDS = 12
EMBED_BATCH = 256
SNIPPET_CHARS = 300
TITLE_CHARS = 300

# A common English stopword list (after NLTK's), question words included.
_STOPWORD_LIST = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())

_WORD = re.compile(r"[^\W_]+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*\s+")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_SETEXT_HEADING = re.compile(r"^ {0,3}(\S.*?)[ \t]*\n {0,3}=+[ \t]*$", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n", re.DOTALL)
_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*[\"']?(.+?)[\"']?[ \t]*$", re.MULTILINE)
_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)\s*$")
_HTML_TITLE = re.compile(rb"<title[^>]*>\s*[^<\s]", re.IGNORECASE)


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
    """

    def __init__(
        self,
        store: Store,
        roots: Sequence[Path],
        *,
        embedder: Embedder | None = None,
        index: KnowledgeIndex | None = None,
    ) -> None:
        self._store = store
        self.roots = [Path(root).expanduser().resolve() for root in roots]
        if index is None and embedder is not None:
            from research_mcp.storage.knowledge import KnowledgeIndex

            index = KnowledgeIndex.open(location=":memory:", embedder=embedder)
        self._index = index
        self._titles: tuple[tuple[Any, ...], _TitleIndex] | None = None

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
        for root, top in scopes:
            if not top.is_dir():
                tally.errors.append(f"{top}: folder not found; its documents are kept until it is back")
                continue
            self._index_scope(root, top, tally, pending, embed=not stale_vectors)
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
        *,
        embed: bool,
    ) -> None:
        known = {
            row["path"]: row
            for row in self._store._all(
                "SELECT id, path, size, mtime_ns, content_hash FROM corpus_documents WHERE root = ?",
                (str(root),),
            )
            if top == root or PurePosixPath(row["path"]).is_relative_to(top.relative_to(root).as_posix())
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
            if row is not None and row["size"] == stat.st_size and row["mtime_ns"] == stat.st_mtime_ns:
                tally.unchanged += 1
                continue
            if stat.st_size > MAX_FILE_BYTES:
                self._fail(tally, row, f"{rel}: larger than {MAX_FILE_BYTES // 2**20} MB; skipped")
                continue
            try:
                data = file.read_bytes()
            except OSError as err:
                tally.errors.append(f"{rel}: cannot be read ({err.strerror}); skipped")
                continue
            tally.read += 1
            digest = hashlib.sha256(data).hexdigest()
            if row is not None and row["content_hash"] == digest:
                with self._store.write() as conn:
                    conn.execute(
                        "UPDATE corpus_documents SET size = ?, mtime_ns = ? WHERE id = ?",
                        (stat.st_size, stat.st_mtime_ns, row["id"]),
                    )
                tally.unchanged += 1
                continue
            try:
                document = _read_document(data, file.suffix.lower(), rel)
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
            self._delete(row["id"])
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
                    if target is None or not target.is_file() or target.suffix.lower() not in SUFFIXES:
                        continue
                    path = target
                if self._owner(path) == root:  # a file of a nested corpus folder belongs to that one
                    yield path

    def _check_link(self, link: Path, errors: list[str]) -> Path | None:
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError):
            errors.append(f"{link}: broken symlink; skipped")
            return None
        if self._owner(target) is None:
            errors.append(f"{link}: symlink points outside the corpus folders ({target}); skipped")
            return None
        return target

    def _fail(self, tally: _Tally, row: dict[str, Any] | None, message: str | None) -> None:
        """Report a file that cannot be indexed; its earlier version, if any, leaves the index."""
        if message is not None:
            tally.errors.append(message)
        if row is not None:
            self._delete(row["id"])
            tally.removed += 1

    def _save(
        self, root: Path, rel: str, title: str, text: str, digest: str, stat: os.stat_result, row: Any
    ) -> list[tuple[int, str, dict[str, Any]]]:
        """Store a new or changed document and its chunks; return the chunks to embed."""
        values = (title, digest, stat.st_size, stat.st_mtime_ns, text, datetime.now(UTC).isoformat())
        with self._store.write() as conn:
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO corpus_documents"
                    " (title, content_hash, size, mtime_ns, text, indexed_at, root, path)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*values, str(root), rel),
                )
                doc_id = int(cursor.lastrowid or 0)
                old_chunks: list[int] = []
            else:
                doc_id = row["id"]
                conn.execute(
                    "UPDATE corpus_documents SET title = ?, content_hash = ?, size = ?, mtime_ns = ?,"
                    " text = ?, indexed_at = ? WHERE id = ?",
                    (*values, doc_id),
                )
                old_chunks = [
                    r[0] for r in conn.execute("SELECT id FROM corpus_chunks WHERE doc_id = ?", (doc_id,))
                ]
                conn.execute("DELETE FROM corpus_chunks WHERE doc_id = ?", (doc_id,))
            chunks = []
            for ordinal, (start, end) in enumerate(chunk_spans(text)):
                cursor = conn.execute(
                    'INSERT INTO corpus_chunks (doc_id, ordinal, title, text, start, "end")'
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (doc_id, ordinal, title, text[start:end], start, end),
                )
                chunks.append(
                    (int(cursor.lastrowid or 0), _embedding_text(title, text[start:end]), {"doc_id": doc_id})
                )
        if old_chunks and self._index is not None:
            self._index.delete("chunks", old_chunks)
        return chunks

    def _delete(self, doc_id: int) -> None:
        with self._store.write() as conn:
            chunk_ids = [
                r[0] for r in conn.execute("SELECT id FROM corpus_chunks WHERE doc_id = ?", (doc_id,))
            ]
            conn.execute("DELETE FROM corpus_chunks WHERE doc_id = ?", (doc_id,))
            conn.execute("DELETE FROM corpus_documents WHERE id = ?", (doc_id,))
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
        row = self._store._one("SELECT COUNT(*) AS n FROM corpus_chunks")
        return row is not None and self._index.count("chunks") != row["n"]

    def rebuild_vectors(self) -> None:
        """Re-embed every chunk from SQLite: the vector index is derived data and may be lost."""
        if self._index is None:
            return
        logger.info("re-embedding every corpus chunk from SQLite")
        self._index.reset("chunks")
        last = 0
        while True:
            rows = self._store._all(
                "SELECT id, doc_id, title, text FROM corpus_chunks WHERE id > ? ORDER BY id LIMIT ?",
                (last, EMBED_BATCH),
            )
            if not rows:
                return
            self._index.add(
                "chunks",
                [(r["id"], _embedding_text(r["title"], r["text"]), {"doc_id": r["doc_id"]}) for r in rows],
            )
            last = rows[-1]["id"]

    # --- reading -------------------------------------------------------------------------------

    def document_count(self) -> int:
        marks = ", ".join("?" for _ in self.roots) or "NULL"
        row = self._store._one(
            f"SELECT COUNT(*) AS n FROM corpus_documents WHERE root IN ({marks})",
            [str(r) for r in self.roots],
        )
        return 0 if row is None else int(row["n"])

    def read(self, doc_id: int) -> CorpusDocument:
        """A document of the configured folders by id; NotFound otherwise."""
        row = self._store._one("SELECT * FROM corpus_documents WHERE id = ?", (doc_id,))
        if row is None or Path(row["root"]) not in self.roots:
            raise NotFound("corpus document", f"corpus:{doc_id}")
        return CorpusDocument(
            doc_id=row["id"],
            ref=f"corpus:{row['id']}",
            root=row["root"],
            path=row["path"],
            title=row["title"],
            text=row["text"],
            content_hash=row["content_hash"],
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
        if not self.roots or not _WORD.search(query):
            return []
        pool = max(limit * POOL_FACTOR, MIN_POOL)
        rankings: list[list[tuple[int, int | None]]] = []
        if mode in ("hybrid", "lexical"):
            rankings.append(list(self._lexical(query, pool)))
        if mode in ("hybrid", "dense"):
            rankings.append(list(self._dense(query, pool)))
        fused = _Fusion(rankings)
        if mode == "hybrid" and follow_links:
            linked = self._linked(query, [(d, fused.chunk[d]) for d in fused.order[:LINK_SEEDS]])
            if linked:
                fused = _Fusion([*rankings, linked])
        order = fused.order[:limit]
        if not order:
            return []
        docs = self._in_scope(order)
        texts = self._chunk_texts(order, fused.chunk)
        words = _query_words(query)
        return [
            CorpusHit(
                doc_id=doc_id,
                ref=f"corpus:{doc_id}",
                path=docs[doc_id]["path"],
                title=docs[doc_id]["title"],
                snippet=_snippet(texts.get(doc_id, ""), words),
                score=fused.score[doc_id],
            )
            for doc_id in order
            if doc_id in docs
        ]

    def _chunk_texts(self, doc_ids: Sequence[int], chunk: dict[int, int | None]) -> dict[int, str]:
        """Each document's matched chunk text (its first chunk when only a link found it)."""
        ids = [chunk[d] for d in doc_ids if chunk[d] is not None]
        firsts = [d for d in doc_ids if chunk[d] is None]
        rows = self._store._all(
            f"SELECT doc_id, text FROM corpus_chunks WHERE id IN ({', '.join('?' for _ in ids)})"
            f" OR (ordinal = 0 AND doc_id IN ({', '.join('?' for _ in firsts)}))",
            [*ids, *firsts],
        )
        return {r["doc_id"]: r["text"] for r in rows}

    def _lexical(self, query: str, pool: int) -> list[tuple[int, int]]:
        """BM25 ranking of documents by their best chunk: ``[(doc_id, chunk_id)]``."""
        match = fts_query(query)
        if match is None:
            return []
        marks = ", ".join("?" for _ in self.roots)
        # MATERIALIZED keeps bm25() in the full-text query; MIN() makes SQLite take the other
        # bare columns from the row holding the minimum, so each document keeps its best chunk.
        rows = self._store._all(
            "WITH scored AS MATERIALIZED ("
            " SELECT c.id AS chunk_id, c.doc_id AS doc_id,"
            f" bm25(corpus_chunks_fts, {BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]}) AS score FROM corpus_chunks_fts"
            " JOIN corpus_chunks c ON c.id = corpus_chunks_fts.rowid"
            " JOIN corpus_documents d ON d.id = c.doc_id"
            f" WHERE corpus_chunks_fts MATCH ? AND d.root IN ({marks}))"
            " SELECT chunk_id, doc_id, MIN(score) AS score FROM scored"
            " GROUP BY doc_id ORDER BY score, doc_id LIMIT ?",
            [match, *(str(r) for r in self.roots), pool],
        )
        return [(r["doc_id"], r["chunk_id"]) for r in rows]

    def _linked(self, query: str, seeds: list[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
        """Documents named in the query, then those named in the seeds' matched passages."""
        titles = self._title_index()
        named = titles.named_in(query, ignore_case=True)
        passages = self._chunk_texts([d for d, _ in seeds], dict(seeds))
        for doc_id, _ in seeds:
            named += [d for d in titles.named_in(passages.get(doc_id, ""), ignore_case=False) if d != doc_id]
        return [(doc_id, None) for doc_id in dict.fromkeys(named)]

    def _title_index(self) -> _TitleIndex:
        """The titles of the configured folders' documents, rebuilt when the documents change."""
        marks = ", ".join("?" for _ in self.roots)
        roots = [str(r) for r in self.roots]
        state = self._store._one(
            f"SELECT COUNT(*) AS n, MAX(id) AS last, MAX(indexed_at) AS at FROM corpus_documents"
            f" WHERE root IN ({marks})",
            roots,
        )
        key = tuple(state.values()) if state else ()
        if self._titles is None or self._titles[0] != key:
            rows = self._store._all(f"SELECT id, title FROM corpus_documents WHERE root IN ({marks})", roots)
            self._titles = (key, _TitleIndex((r["id"], r["title"]) for r in rows))
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
        ranking = _best_per_document((int(h.payload["doc_id"]), h.id) for h in hits if "doc_id" in h.payload)
        in_scope = self._in_scope([doc_id for doc_id, _ in ranking])
        return [(doc_id, chunk_id) for doc_id, chunk_id in ranking if doc_id in in_scope]

    def _in_scope(self, doc_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Rows (id, path, title) of those documents that exist and belong to a configured folder."""
        if not doc_ids:
            return {}
        roots = {str(r) for r in self.roots}
        marks = ", ".join("?" for _ in doc_ids)
        rows = self._store._all(
            f"SELECT id, root, path, title FROM corpus_documents WHERE id IN ({marks})", list(doc_ids)
        )
        return {r["id"]: r for r in rows if r["root"] in roots}


# --- documents, chunks and queries -------------------------------------------------------------


def _read_document(data: bytes, suffix: str, rel: str) -> tuple[str, str] | None:
    """``(title, text)`` of a file's bytes, None for an empty file; SourceError when unreadable."""
    stem = PurePosixPath(rel).stem
    if not data.strip():
        return None
    if suffix in (".html", ".htm", ".pdf"):
        header = "application/pdf" if suffix == ".pdf" else "text/html"
        _, title, text = extract_text(data, header, rel)
        # extract_text falls back to the first line (or the name given) when a document has no
        # title of its own; ours falls back to the file name instead.
        declared = bool(_HTML_TITLE.search(data[:65536])) if suffix != ".pdf" else title != _first_line(text)
        return (title if declared and title != rel else stem), text
    if b"\x00" in data[:8192]:
        raise SourceError("holds binary data, not text; skipped")
    text = data.decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        return None
    title = _markdown_title(text) if suffix in (".md", ".markdown") else ""
    return title or stem, text


def _markdown_title(text: str) -> str:
    front = _FRONT_MATTER.match(text)
    if front:
        declared = _FRONT_MATTER_TITLE.search(front.group(1))
        if declared:
            return _collapse(declared.group(1))
        text = text[front.end() :]
    headings = [m for m in (_ATX_HEADING.search(text), _SETEXT_HEADING.search(text)) if m]
    if not headings:
        return ""
    return _collapse(min(headings, key=lambda m: m.start()).group(1))


def _collapse(text: str) -> str:
    return " ".join(text.split())[:TITLE_CHARS]


def _first_line(text: str) -> str:
    return next((_collapse(line) for line in text.split("\n") if line.strip()), "")


def _embedding_text(title: str, chunk: str) -> str:
    # The title gives a chunk cut from the middle of a document the context it lacks.
    return f"{title}\n\n{chunk}"


def chunk_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of chunks of ``text``: paragraphs packed to 800-1,200 characters.

    A chunk is closed once it reaches the minimum, or when the next piece would push it past the
    maximum. Paragraphs longer than the maximum are cut at sentence ends, sentences longer than it
    at spaces, and unbroken runs at the maximum itself.
    """
    pieces: list[tuple[int, int]] = []
    for start, end in _split(text, _PARAGRAPH_BREAK, 0, len(text), keep_separator=False):
        if end - start <= CHUNK_MAX_CHARS:
            pieces.append((start, end))
            continue
        for s_start, s_end in _split(text, _SENTENCE_END, start, end, keep_separator=True):
            pieces.extend(_cut_at_spaces(text, s_start, s_end))
    chunks: list[tuple[int, int]] = []
    for start, end in pieces:
        if (
            chunks
            and (chunks[-1][1] - chunks[-1][0]) < CHUNK_MIN_CHARS
            and end - chunks[-1][0] <= CHUNK_MAX_CHARS
        ):
            chunks[-1] = (chunks[-1][0], end)
        else:
            chunks.append((start, end))
    return chunks


def _split(
    text: str, separator: re.Pattern[str], start: int, end: int, *, keep_separator: bool
) -> Iterator[tuple[int, int]]:
    """The non-blank stretches of ``text[start:end]`` cut at ``separator``, trimmed.

    With ``keep_separator`` a stretch keeps the separator that ends it (a sentence its full stop).
    """
    position = start
    for match in separator.finditer(text, start, end):
        yield from _trimmed(text, position, match.end() if keep_separator else match.start())
        position = match.end()
    yield from _trimmed(text, position, end)


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def _cut_at_spaces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while end - start > CHUNK_MAX_CHARS:
        cut = text.rfind(" ", start + 1, start + CHUNK_MAX_CHARS)
        cut = cut if cut > start else start + CHUNK_MAX_CHARS
        yield from _trimmed(text, start, cut)
        start = cut
    yield from _trimmed(text, start, end)


def _query_words(query: str) -> list[str]:
    """The query's distinct word tokens, lower-cased, stopwords dropped (kept if nothing else is left)."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:64]


def fts_query(query: str) -> str | None:
    """An FTS5 MATCH expression: the query's words, each quoted, OR-ed; None when there are none.

    Tokens are letters and digits only, so the quotes can hold nothing FTS5 would parse.
    """
    words = _query_words(query)
    return " OR ".join(f'"{word}"' for word in words) if words else None


class _Fusion:
    """Reciprocal rank fusion of document rankings ``[(doc_id, chunk_id or None)]``."""

    def __init__(self, rankings: Sequence[Sequence[tuple[int, int | None]]]) -> None:
        self.score: dict[int, float] = {}
        self.chunk: dict[int, int | None] = {}  # the chunk of the document's best-ranked passage
        top: dict[int, int] = {}
        for ranking in rankings:
            for rank, (doc_id, chunk_id) in enumerate(ranking, start=1):
                self.score[doc_id] = self.score.get(doc_id, 0.0) + 1.0 / (RRF_K + rank)
                if chunk_id is not None and (self.chunk.get(doc_id) is None or rank < top[doc_id]):
                    self.chunk[doc_id] = chunk_id
                self.chunk.setdefault(doc_id, None)
                top[doc_id] = min(top.get(doc_id, rank), rank)
        self.order = sorted(self.score, key=lambda d: (-self.score[d], top[d], d))


class _TitleIndex:
    """Document titles as word sequences, to find the documents a text names.

    A title's trailing parenthetical ("Ed Wood (film)") is a disambiguator, not part of the name.
    Titles of stopwords only, or under three characters, name nothing. Where names overlap the
    longest wins ("Esma Sultan Mansion", not "Esma Sultan"); a name shared by several documents
    lists the one titled exactly so first.
    """

    def __init__(self, titles: Iterator[tuple[int, str]]) -> None:
        self._exact: dict[tuple[str, ...], list[int]] = {}
        self._folded: dict[tuple[str, ...], list[int]] = {}
        self._longest = 0
        entries = []
        for doc_id, title in titles:
            name = _DISAMBIGUATOR.sub("", title).strip()
            words = tuple(_WORD.findall(name))
            folded = tuple(w.lower() for w in words)
            if not words or len(words) > MAX_NAME_WORDS or len("".join(words)) < 3:
                continue
            if all(w in STOPWORDS for w in folded):
                continue
            entries.append((name != title, doc_id, words, folded))
            self._longest = max(self._longest, len(words))
        for _, doc_id, words, folded in sorted(entries):
            self._exact.setdefault(words, []).append(doc_id)
            self._folded.setdefault(folded, []).append(doc_id)

    def named_in(self, text: str, *, ignore_case: bool) -> list[int]:
        """Documents whose names occur in ``text``, in order of first mention."""
        words = [w.lower() for w in _WORD.findall(text)] if ignore_case else _WORD.findall(text)
        table = self._folded if ignore_case else self._exact
        found: list[int] = []
        i = 0
        while i < len(words):
            for n in range(min(self._longest, len(words) - i), 0, -1):
                docs = table.get(tuple(words[i : i + n]))
                if docs:
                    found.extend(docs)
                    i += n
                    break
            else:
                i += 1
        return list(dict.fromkeys(found))


def _best_per_document(chunks: Iterator[tuple[int, int]]) -> list[tuple[int, int]]:
    """Reduce a ranked list of ``(doc_id, chunk_id)`` to each document's first (best) chunk."""
    seen: dict[int, int] = {}
    for doc_id, chunk_id in chunks:
        seen.setdefault(doc_id, chunk_id)
    return list(seen.items())


def _snippet(text: str, words: Sequence[str]) -> str:
    """About SNIPPET_CHARS of ``text`` around the first query word it contains."""
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat
    lowered = flat.lower()
    found = [i for i in (lowered.find(w) for w in words) if i >= 0]
    start = max(0, min(found) - SNIPPET_CHARS // 3) if found else 0
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 40 else start
    end = min(len(flat), start + SNIPPET_CHARS)
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > start + SNIPPET_CHARS // 2 else end
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")

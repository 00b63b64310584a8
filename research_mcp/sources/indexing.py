"""Bringing a corpus's index up to date with its folders, in steps that are each safe to interrupt.

1. **scan**: walk the folders and ``stat`` every file, reading none. A file whose size and
   modification time match what is stored is up to date; files gone from disk leave the index.
2. **read**: each new or changed file is read and hashed (sha256); only when the hash changed is
   it parsed (or when the readers changed since it was: ``readers.READER_VERSION``), chunked and
   committed to SQLite, in a transaction of its own, so it is searchable
   (full text) at once. Its chunks are embedded in batches of :data:`EMBED_BATCH`.
3. **vectors**: every chunk in SQLite that the vector index lacks is embedded (those an
   interrupted pass left, or all of them once the embedding model changed), and vectors of chunks
   gone are deleted.

So an interrupted pass keeps every document it committed: the next one reads only files not yet
committed and embeds only chunks not yet embedded. :class:`IndexProgress` is the pass's live state,
read by other threads (the server's status resource and tool results, the terminal's progress bar).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat as stat_mode
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from research_mcp.errors import NotConfigured, SourceError
from research_mcp.sources.documents import (
    describe_file_kind,
    embedding_text,
    read_regular_file,
    size_cap,
)
from research_mcp.sources.folders import document_name, gunzip, sniff_text_file, storable_name
from research_mcp.sources.index_progress import CorpusStatus, IndexProgress, IndexReport
from research_mcp.sources.readers import READER_VERSION, read_document
from research_mcp.storage.models import CorpusFailure, CorpusFileState

if TYPE_CHECKING:
    from collections.abc import Iterator

    from research_mcp.sources.parsing import DocumentParser
    from research_mcp.storage.store import Store
    from research_mcp.storage.vectors import KnowledgeIndex

__all__ = [
    "EMBED_BATCH",
    "index_corpus",
    "rebuild_vectors",
]

logger = logging.getLogger(__name__)

#: A file at least this large is named in the log, with its size, when it is read.
LARGE_FILE_BYTES = 5 * 1024 * 1024
#: Chunks embedded at once: small enough that a stop request waits for little, large enough to batch.
EMBED_BATCH = 64
#: Chunks read from SQLite at once when looking for those the vector index lacks.
SCAN_BATCH = 1024
#: Seconds after which a file that failed is tried again although unchanged (a parse that timed out
#: on a loaded machine may pass later).
RETRY_FAILED_AFTER = 3600.0
#: Seconds between two progress log lines of a long re-embedding.
PROGRESS_SECONDS = 5.0

Chunk = tuple[int, str, dict[str, Any]]


class Corpus(Protocol):
    """What a pass needs of the corpus it indexes (``corpus.Corpus``; a protocol keeps imports one-way)."""

    progress: IndexProgress

    @property
    def store(self) -> Store: ...
    @property
    def vectors(self) -> KnowledgeIndex | None: ...
    def walk(
        self, root: Path, top: Path, errors: list[str], passed: Counter[str] | None = None
    ) -> Iterator[Path]: ...
    def known_files(self, root: Path) -> list[CorpusFileState]: ...
    # Files that could not be indexed, kept in the store so that no pass of any process parses an
    # unchanged one again (a stalling PDF cost 20 s at every rescan and every `index`).
    def failures(self, root: Path) -> dict[str, CorpusFailure]: ...
    def remember_failure(self, failure: CorpusFailure) -> None: ...
    def forget_failures(self, root: Path, paths: Sequence[str]) -> None: ...
    def document_count(self) -> int: ...
    def status(self) -> CorpusStatus: ...
    def touch_document(self, doc_id: int, stat: os.stat_result) -> None: ...
    def save_document(
        self,
        root: Path,
        rel: str,
        title: str,
        text: str,
        digest: str,
        stat: os.stat_result,
        row: CorpusFileState | None,
    ) -> list[Chunk]: ...
    def delete_document(self, doc_id: int) -> None: ...
    def drop_vectors(self, err: NotConfigured) -> None: ...
    def index(self, *, stop: threading.Event | None = None) -> IndexReport: ...


@dataclass
class _Tally:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    read: int = 0
    embedded: int = 0
    errors: list[str] = field(default_factory=list)
    not_documents: Counter[str] = field(default_factory=Counter)
    binary: int = 0
    empty: int = 0


@dataclass(frozen=True)
class _Work:
    """A file the scan found new or changed."""

    root: Path
    rel: str
    file: Path
    stat: os.stat_result
    row: CorpusFileState | None
    failed_before: bool = False  # an earlier pass remembered it failing (it has changed since)


def index_corpus(
    corpus: Corpus,
    scopes: list[tuple[Path, Path]],
    parser: DocumentParser,
    progress: IndexProgress | None = None,
    stop: threading.Event | None = None,
) -> IndexReport:
    """One pass over ``scopes`` (``(corpus folder, folder inside it)`` pairs); see the module doc."""
    progress = progress or IndexProgress()
    stop = stop or threading.Event()
    tally = _Tally()
    progress.scanning()
    work: list[_Work] = []
    for root, top in scopes:
        if not top.is_dir():
            tally.errors.append(f"{top}: folder not found; its documents are kept until it is back")
            continue
        work += _scan(corpus, root, top, tally)
    progress.reading(total=tally.unchanged + len(work), up_to_date=tally.unchanged)
    pending: list[Chunk] = []
    for item in work:
        if stop.is_set():
            break
        _read(corpus, item, tally, pending, parser)
        progress.document_done()
        if len(pending) >= EMBED_BATCH:
            _embed(corpus, pending, tally)
    _embed(corpus, pending, tally)
    # The vector index is checked against SQLite by the process's first pass, and by any pass that
    # changed the corpus; a rescan that found nothing new leaves it be.
    changed = tally.added or tally.updated or tally.removed
    if not stop.is_set() and (changed or not progress.vectors_checked):
        tally.embedded += _embed_missing(corpus, progress, stop)
        progress.vectors_checked = not stop.is_set()
    if tally.embedded and corpus.vectors is not None and not stop.is_set():
        corpus.vectors.optimize("chunks")  # the HNSW index over what this pass added
    progress.finished(corpus.document_count(), stopped=stop.is_set())
    return IndexReport(
        added=tally.added,
        updated=tally.updated,
        unchanged=tally.unchanged,
        removed=tally.removed,
        errors=tally.errors,
        read=tally.read,
        embedded=tally.embedded,
        stopped=stop.is_set(),
        not_documents=dict(tally.not_documents),
        binary=tally.binary,
        empty=tally.empty,
    )


def _scan(corpus: Corpus, root: Path, top: Path, tally: _Tally) -> list[_Work]:
    """The new or changed files under ``top``; files gone from disk are removed from the index."""

    def in_scope(path: str) -> bool:
        return top == root or PurePosixPath(path).is_relative_to(top.relative_to(root).as_posix())

    known = {row.path: row for row in corpus.known_files(root) if in_scope(row.path)}
    failures = {path: failure for path, failure in corpus.failures(root).items() if in_scope(path)}
    seen: set[str] = set()
    work: list[_Work] = []
    for file in corpus.walk(root, top, tally.errors, tally.not_documents):
        rel = storable_name(file.relative_to(root).as_posix())
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
            _fail(
                corpus, tally, row, f"{rel}: {describe_file_kind(stat.st_mode)}, not a regular file; skipped"
            )
            continue
        if (
            row is not None
            and row.size == stat.st_size
            and row.mtime_ns == stat.st_mtime_ns
            and row.reader_version == READER_VERSION  # else read again: the readers changed since
        ):
            tally.unchanged += 1
            continue
        failed = failures.get(rel)
        if (
            row is None
            and failed is not None
            and (failed.size, failed.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
            and time.time() - failed.failed_at < RETRY_FAILED_AFTER
        ):
            tally.errors.append(f"{failed.error} (unchanged since: not read again)")
            continue
        named = document_name(file.name)
        if named is not None and named.sniffed and not sniff_text_file(file, gzipped=named.gzipped):
            tally.binary += 1  # a program, an image: no document, counted in the skipped line
            _fail(corpus, tally, row, None)
            continue
        work.append(_Work(root, rel, file, stat, row, failed_before=failed is not None))
    corpus.forget_failures(root, [path for path in failures if path not in seen])
    gone = [row for path, row in known.items() if path not in seen]
    for row in gone:
        corpus.delete_document(row.id)
    tally.removed += len(gone)
    return work


def _read(corpus: Corpus, item: _Work, tally: _Tally, pending: list[Chunk], parser: DocumentParser) -> None:
    """Read one new or changed file into the store; its chunks to embed join ``pending``."""
    rel, row, stat = item.rel, item.row, item.stat
    named = document_name(storable_name(item.file.name))
    assert named is not None  # the walk yields documents only
    cap = size_cap(named.kind)
    if stat.st_size > cap:
        _fail(corpus, tally, row, _remember(corpus, item, f"{rel}: larger than {cap // 2**20} MB; skipped"))
        return
    if stat.st_size >= LARGE_FILE_BYTES:
        logger.info("corpus: reading %s, a large file (%.1f MB)", rel, stat.st_size / 2**20)
    try:
        data = read_regular_file(item.file, cap)
    except SourceError as err:
        _fail(corpus, tally, row, _remember(corpus, item, f"{rel}: {err}"))
        return
    except OSError as err:
        tally.errors.append(f"{rel}: cannot be read ({err.strerror}); skipped")
        return
    tally.read += 1
    digest = hashlib.sha256(data).hexdigest()
    if row is not None and row.content_hash == digest and row.reader_version == READER_VERSION:
        corpus.touch_document(row.id, stat)
        tally.unchanged += 1
        return
    try:
        document = read_document(
            gunzip(data, cap) if named.gzipped else data, named, rel, parser, (item.root, item.file)
        )
    except SourceError as err:
        _fail(corpus, tally, row, _remember(corpus, item, f"{rel}: {err}"))
        return
    if document is None:  # an empty file: nothing to find in it, counted in the skipped line
        tally.empty += 1
        _fail(corpus, tally, row, None)
        return
    title, text = document
    pending.extend(corpus.save_document(item.root, rel, title, text, digest, stat, row))
    if item.failed_before:
        corpus.forget_failures(item.root, [rel])
    if row is None:
        tally.added += 1
    else:
        tally.updated += 1


def _remember(corpus: Corpus, item: _Work, message: str) -> str:
    """Keep why this file failed, with its size and time, for the passes (of any process) that find
    it unchanged."""
    failure = CorpusFailure(
        root=str(item.root),
        path=item.rel,
        size=item.stat.st_size,
        mtime_ns=item.stat.st_mtime_ns,
        error=message,
        failed_at=time.time(),
    )
    corpus.remember_failure(failure)
    return message


def _fail(corpus: Corpus, tally: _Tally, row: CorpusFileState | None, message: str | None) -> None:
    """Report a file that cannot be indexed; its earlier version, if any, leaves the index."""
    if message is not None:
        tally.errors.append(message)
    if row is not None:
        corpus.delete_document(row.id)
        tally.removed += 1


def _embed(corpus: Corpus, pending: list[Chunk], tally: _Tally) -> None:
    index = corpus.vectors
    if index is not None and pending:
        try:
            index.add("chunks", pending)
            tally.embedded += len(pending)
        except NotConfigured as err:
            tally.errors.append(f"vectors: {err}")
            corpus.drop_vectors(err)
    pending.clear()


def _embed_missing(corpus: Corpus, progress: IndexProgress, stop: threading.Event) -> int:
    """Embed every chunk in SQLite the vector index lacks; delete vectors of chunks gone.

    Both sides are read a page at a time (ids only from the index), so memory does not grow with
    the corpus: this is also how a data folder whose index was moved to another engine gets its
    vectors back."""
    index = corpus.vectors
    if index is None or not index.available:
        return 0
    stored = corpus.store.corpus_chunk_count()
    held_count = index.count("chunks")
    if held_count == stored:
        return 0
    after: int | None = None
    while not stop.is_set():
        page, after = index.id_page("chunks", after=after)
        gone = sorted(set(page) - corpus.store.corpus_chunks_among(page))
        if gone:
            index.delete("chunks", gone)
            held_count -= len(gone)
        if after is None:
            break
    if held_count >= stored:
        return 0
    logger.info("corpus: embedding about %d chunks the vector index lacks", stored - held_count)
    progress.embedding(stored - held_count)
    embedded, last = 0, 0
    while not stop.is_set() and (chunks := corpus.store.corpus_chunks_after(last, EMBED_BATCH)):
        last = chunks[-1].id
        held = index.held("chunks", [c.id for c in chunks])
        batch = [
            (c.id, embedding_text(c.title, c.text), {"doc_id": c.doc_id}) for c in chunks if c.id not in held
        ]
        if not batch:
            continue
        if not index.available:
            break
        try:
            index.add("chunks", batch)
        except NotConfigured as err:
            corpus.drop_vectors(err)
            break
        embedded += len(batch)
        progress.chunks_done(len(batch))
    return embedded


def rebuild_vectors(corpus: Corpus, progress: Callable[[int, int], None] | None = None) -> None:
    """Re-embed every chunk from SQLite into an emptied collection (``research-mcp reindex``).

    Chunks are read and embedded EMBED_BATCH at a time, so memory does not grow with the corpus.
    ``progress`` is called after each batch with (chunks embedded, chunks in all); a log line reports
    the same at most every PROGRESS_SECONDS.
    """
    index = corpus.vectors
    if index is None:
        return
    total = corpus.store.corpus_chunk_count()
    logger.info("re-embedding %d corpus chunks from SQLite with %s", total, index.embedder_for("chunks").name)
    index.reset("chunks")
    last, done, started = 0, 0, time.monotonic()
    logged = started
    while chunks := corpus.store.corpus_chunks_after(last, EMBED_BATCH):
        index.add("chunks", [(c.id, embedding_text(c.title, c.text), {"doc_id": c.doc_id}) for c in chunks])
        last, done = chunks[-1].id, done + len(chunks)
        if progress is not None:
            progress(done, total)
        if time.monotonic() - logged >= PROGRESS_SECONDS:
            logged = time.monotonic()
            logger.info("re-embedding corpus chunks: %d of %d", done, total)
    logger.info("re-embedded %d corpus chunks in %.1f s", done, time.monotonic() - started)

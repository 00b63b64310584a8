"""Bringing a corpus's index up to date with its folders, in steps that are each safe to interrupt.

1. **scan**: walk the folders and ``stat`` every file, reading none. A file whose size and
   modification time match what is stored is up to date; files gone from disk leave the index.
2. **read**: each new or changed file is read and hashed (sha256); only when the hash changed (or
   the readers did since it was read: ``readers.READER_VERSION``) is it parsed, chunked and
   committed to SQLite, in a transaction of its own, so it is searchable (full text) at once. Its
   chunks are embedded in batches of :data:`EMBED_BATCH`. Two files are read at once, stored in the
   folder's order (stable ids); one that stalls its reader holds the others back 2 s at most.
3. **vectors**: every chunk in SQLite whose vector the index lacks, or holds of other text, is
   embedded (those an interrupted pass left, or all of them once the embedding model changed), and
   vectors of chunks gone are deleted: chunk ids and text hashes compared, never counts
   (``chunk_vectors.py``), unless a process found them in step with exactly these chunks since.

So an interrupted pass keeps every document it committed: the next one reads only files not yet
committed and embeds only chunks not yet embedded. :class:`IndexProgress` is the pass's live state,
read by other threads (the server's status resource and tool results, the terminal's progress bar).
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import stat as stat_mode
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from research_mcp.core.errors import NotConfigured, SourceError
from research_mcp.sources.chunk_vectors import bring_in_step, chunk_point, mark_in_step, marked_in_step
from research_mcp.sources.documents import (
    describe_file_kind,
    read_regular_file,
    size_cap,
)
from research_mcp.sources.folders import document_name, gunzip, sniff_text_file, storable_name
from research_mcp.sources.index_progress import CorpusStatus, IndexProgress, IndexReport
from research_mcp.sources.readers import READER_VERSION, read_document
from research_mcp.storage.models import CorpusFailure, CorpusFileState

if TYPE_CHECKING:
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
#: Files read at once: one that stalls its reader (until the parser's limit) does not hold the others
#: but `IN_ORDER_WAIT_S`, the seconds later documents wait to be stored in the folder's order.
READING_THREADS = 2
IN_ORDER_WAIT_S = 2.0
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
    for reading in _readings(work, parser, stop):
        _store(corpus, reading, tally, pending)
        progress.document_done()
        if len(pending) >= EMBED_BATCH:
            _embed(corpus, pending, tally)
    _embed(corpus, pending, tally)
    # The vector index is checked against SQLite whenever the store's chunks are not those this
    # process last found in step: at its first pass, after a pass that changed the corpus, and after
    # another process changed it (`research-mcp index` beside a server, its vectors left to whoever
    # holds the index). A rescan that finds nothing new, in a store nobody changed, leaves it be.
    changed = tally.added or tally.updated or tally.removed
    if not stop.is_set() and (
        changed or corpus.store.corpus_chunks_version() != progress.vectors_checked_for
    ):
        _check_vectors(corpus, progress, stop, tally)
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


@dataclass(frozen=True)
class _Reading:
    """What reading one file found, for the pass to store: its text, or why there is none."""

    item: _Work
    digest: str = ""
    document: tuple[str, str] | None = None
    failure: str | None = None  # why it cannot be indexed (remembered until the file changes)
    unreadable: str | None = None  # why it could not be opened now (tried again next pass)
    read: bool = False  # its bytes were read
    unchanged: bool = False  # same bytes, same readers as stored


def _readings(work: list[_Work], parser: DocumentParser, stop: threading.Event) -> Iterator[_Reading]:
    """The files of ``work`` read by ``READING_THREADS`` threads, yielded in ``work``'s (sorted) order, so
    a folder indexed twice gives its documents the same ids and searches break ties the same way; a
    reading stalled (until the parser's limit) keeps those after it waiting `IN_ORDER_WAIT_S` at most.
    No file is started once ``stop`` is set (or the caller stopped listening); what was read is
    yielded. The threads are daemons: a process that exits does not wait for them."""
    items = iter(enumerate(work))
    taking = threading.Lock()
    done: queue.Queue[tuple[int, _Reading] | BaseException | None] = queue.Queue()
    closed = threading.Event()

    def read_files() -> None:
        try:
            while not (stop.is_set() or closed.is_set()):
                with taking:
                    taken = next(items, None)
                if taken is None:
                    return
                done.put((taken[0], _read(taken[1], parser)))
        except BaseException as failure:  # a bug, not a document: raised again by the pass
            done.put(failure)
        finally:
            done.put(None)

    threads = [
        threading.Thread(target=read_files, name="corpus-read", daemon=True) for _ in range(READING_THREADS)
    ]
    for thread in threads:
        thread.start()
    try:
        finished, due, early, given, deadline = 0, 0, dict[int, _Reading](), set[int](), None
        while finished < len(threads):
            try:
                got = done.get(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
            except queue.Empty:  # the reading due stalls: the others go on, out of order
                given.update(early)
                yield from (early.pop(index) for index in sorted(early))
                deadline = None  # and the next reading waits again
                continue
            if got is None:
                finished += 1
            elif isinstance(got, BaseException):
                raise got
            else:
                early[got[0]] = got[1]
                while due in early or due in given:
                    if due in early:
                        yield early.pop(due)
                    given.discard(due)
                    due += 1
                deadline = (deadline or time.monotonic() + IN_ORDER_WAIT_S) if early else None
        yield from (early[index] for index in sorted(early))  # stopped: what was read, in order
    finally:
        closed.set()


def _read(item: _Work, parser: DocumentParser) -> _Reading:
    """Read and parse one new or changed file (in a reading thread: nothing is stored here)."""
    rel, row, stat = item.rel, item.row, item.stat
    named = document_name(storable_name(item.file.name))
    assert named is not None  # the walk yields documents only
    cap = size_cap(named.kind)
    if stat.st_size > cap:
        return _Reading(item, failure=f"{rel}: larger than {cap // 2**20} MB; skipped")
    if stat.st_size >= LARGE_FILE_BYTES:
        logger.info("corpus: reading %s, a large file (%.1f MB)", rel, stat.st_size / 2**20)
    try:
        data = read_regular_file(item.file, cap)
    except SourceError as err:
        return _Reading(item, failure=f"{rel}: {err}")
    except OSError as err:
        return _Reading(item, unreadable=f"{rel}: cannot be read ({err.strerror}); skipped")
    digest = hashlib.sha256(data).hexdigest()
    if row is not None and row.content_hash == digest and row.reader_version == READER_VERSION:
        return _Reading(item, digest, read=True, unchanged=True)
    try:
        document = read_document(
            gunzip(data, cap) if named.gzipped else data, named, rel, parser, (item.root, item.file)
        )
    except SourceError as err:
        return _Reading(item, digest, failure=f"{rel}: {err}", read=True)
    return _Reading(item, digest, document, read=True)


def _store(corpus: Corpus, reading: _Reading, tally: _Tally, pending: list[Chunk]) -> None:
    """Store what reading one file found; its chunks to embed join ``pending``."""
    item = reading.item
    tally.read += reading.read
    if reading.unreadable is not None:
        tally.errors.append(reading.unreadable)
    elif reading.failure is not None:
        _fail(corpus, tally, item.row, _remember(corpus, item, reading.failure))
    elif reading.unchanged:
        assert item.row is not None
        corpus.touch_document(item.row.id, item.stat)
        tally.unchanged += 1
    elif reading.document is None:  # an empty file: nothing to find in it, counted in the skipped line
        tally.empty += 1
        _fail(corpus, tally, item.row, None)
    else:
        title, text = reading.document
        pending.extend(
            corpus.save_document(item.root, item.rel, title, text, reading.digest, item.stat, item.row)
        )
        if item.failed_before:
            corpus.forget_failures(item.root, [item.rel])
        if item.row is None:
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


def _check_vectors(corpus: Corpus, progress: IndexProgress, stop: threading.Event, tally: _Tally) -> None:
    """Bring the chunk vectors in step with the store, unless they are known to be
    (`chunk_vectors.marked_in_step`); then build the search index over what this pass added."""
    version = corpus.store.corpus_chunks_version()
    if marked_in_step(corpus.vectors, version):
        progress.vectors_checked_for = version
        return
    stamp = None if corpus.vectors is None else corpus.vectors.write_stamp("chunks")  # before either side
    embedded, complete = bring_in_step(corpus.store, corpus.vectors, progress, stop, corpus.drop_vectors)
    tally.embedded += embedded
    if tally.embedded and corpus.vectors is not None and not stop.is_set():
        corpus.vectors.optimize("chunks")  # the HNSW index over what this pass added
    if complete and not stop.is_set() and corpus.store.corpus_chunks_version() == version:
        progress.vectors_checked_for = version
        mark_in_step(corpus.vectors, version, stamp)


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
        index.add("chunks", [chunk_point(c.id, c.doc_id, c.title, c.text) for c in chunks])
        last, done = chunks[-1].id, done + len(chunks)
        if progress is not None:
            progress(done, total)
        if time.monotonic() - logged >= PROGRESS_SECONDS:
            logged = time.monotonic()
            logger.info("re-embedding corpus chunks: %d of %d", done, total)
    logger.info("re-embedded %d corpus chunks in %.1f s", done, time.monotonic() - started)

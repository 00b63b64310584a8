"""Corpus chunk vectors checked against SQLite by identity, never by count.

A chunk's vector is in step when the index holds a point with the chunk's id whose payload carries
the hash of the very text it was embedded from (`embedding_text`: the title and the chunk). Counts
say nothing: a pass killed between committing a changed document and embedding it, or two
processes indexing one folder at once, leave chunks without vectors beside as many vectors of
chunks gone (equal counts, 1,200 of each in issue 46), and a changed document whose chunks were the
last of the table takes its old ids again (a chunk's id is the next free one), so a vector of its
old text sits under its new chunk's id.

:func:`check_chunk_vectors` pages through both sides: the index's ids (ids only) for vectors of
chunks gone, which it deletes; then SQLite's chunks, a page at a time, each hashed and compared with
what the index holds under its id (the hash only, no vector). A chunk whose vector is missing, was
embedded from other text, or from text unknown (a vector made before vectors carried the hash) is
embedded again, in batches. Memory holds the ids to embed again, never their texts. The indexing
pass runs it (`sources/indexing.py`), `doctor` runs it without repairing.

Comparing pages every chunk's text out of SQLite (`index` on an unchanged /usr/share/doc, 280,000
chunks: 5 s of CPU and 200 MB with it, 0.6 s and 74 MB without), so a complete check (or repair)
leaves a mark in the vector index naming the store's chunks version it found in step (`KnowledgeIndex.mark_checked`): a later process whose store holds exactly those chunks
skips the comparison (:func:`marked_in_step`). Every write of a chunk vector, by any process, removes
the mark first (on disk, before the write), so a process killed mid-write leaves none and the next
compares in full; a mark is refused when another process wrote between the check's start and it.
`doctor` always compares.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from research_mcp.core.errors import NotConfigured
from research_mcp.sources.documents import embedding_text

if TYPE_CHECKING:
    from research_mcp.sources.index_progress import IndexProgress
    from research_mcp.storage.store import Store
    from research_mcp.storage.vector_engine import WriteStamp
    from research_mcp.storage.vectors import KnowledgeIndex

__all__ = [
    "FINGERPRINT",
    "ChunkDrift",
    "bring_in_step",
    "check_chunk_vectors",
    "chunk_point",
    "fingerprint",
    "mark_in_step",
    "marked_in_step",
]

#: The store's chunks version (`Store.corpus_chunks_version`).
ChunksVersion = tuple[int, int | None, str | None]

logger = logging.getLogger(__name__)

#: The payload key of the hash of the text a chunk's vector was embedded from.
FINGERPRINT = "text_sha256"
#: Chunks read from SQLite (and hashes from the index) per page while comparing.
COMPARE_PAGE = 1024
#: Chunks embedded at once while repairing: a stop request waits for little.
REPAIR_BATCH = 64


def fingerprint(embedded: str) -> str:
    """The hash a chunk's vector carries of the text it was embedded from."""
    return hashlib.sha256(embedded.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def chunk_point(chunk_id: int, doc_id: int, title: str, text: str) -> tuple[int, str, dict[str, Any]]:
    """What the index is given for one chunk: its id, the text to embed, and its payload (its
    document, and the hash of that text: what makes the vector this chunk's)."""
    embedded = embedding_text(title, text)
    return chunk_id, embedded, {"doc_id": doc_id, FINGERPRINT: fingerprint(embedded)}


@dataclass(frozen=True)
class ChunkDrift:
    """How far the corpus chunk vectors were from SQLite, and what a repair embedded."""

    chunks: int  # chunks in SQLite
    missing: int  # of those, without a vector
    stale: int  # of those, with a vector of other text, or of text unknown (made before the hash)
    extra: int  # vectors of no chunk in SQLite
    embedded: int = 0  # chunks embedded again by a repair
    available: bool = True  # False: the index could not be read; nothing was compared
    finished: bool = True  # False: stopped (or the index went away) before the end

    @property
    def in_step(self) -> bool:
        return self.available and self.finished and not (self.missing or self.stale or self.extra)

    def describe(self) -> str:
        if not self.available:
            return "the knowledge index is unavailable; corpus vectors not checked"
        if self.in_step:
            return f"{self.chunks:,} corpus chunks, vectors in step with the store"
        said = (
            f"{self.missing:,} of {self.chunks:,} corpus chunks without a vector, {self.stale:,} with a "
            f"vector of other text, {self.extra:,} vectors of chunks gone"
        )
        if self.embedded:
            said += f"; {self.embedded:,} embedded again"
        return said if self.finished else f"{said} (stopped before the end)"


def check_chunk_vectors(
    store: Store,
    index: KnowledgeIndex | None,
    *,
    repair: bool,
    stop: threading.Event | None = None,
    on_embedding: Callable[[int], None] | None = None,
    on_embedded: Callable[[int], None] | None = None,
) -> ChunkDrift:
    """Compare the chunk vectors with SQLite by id and text hash; with ``repair``, delete the vectors
    of chunks gone and embed the chunks whose vector is missing or not of their text.

    ``on_embedding`` is told how many chunks are to be embedded before the first is, ``on_embedded``
    each batch's size after it is. Raises what the embedder raises (NotConfigured: no model)."""
    stop = stop or threading.Event()
    if index is None or not index.available:
        return ChunkDrift(0, 0, 0, 0, available=False)
    extra = _vectors_of_chunks_gone(store, index, repair=repair, stop=stop)
    chunks, missing, stale = 0, [], []
    last = 0
    while not stop.is_set() and (page := store.corpus_chunks_after(last, COMPARE_PAGE)):
        last = page[-1].id
        chunks += len(page)
        held = index.held_values("chunks", [chunk.id for chunk in page], FINGERPRINT)
        for chunk in page:
            if chunk.id not in held:
                missing.append(chunk.id)
            elif held[chunk.id] != fingerprint(embedding_text(chunk.title, chunk.text)):
                stale.append(chunk.id)
    if not index.available:  # it went away while compared: what it lacked is not known
        return ChunkDrift(0, 0, 0, 0, available=False)
    finished = not stop.is_set()
    drift = ChunkDrift(chunks, len(missing), len(stale), extra, available=True, finished=finished)
    if not repair or not finished or not (missing or stale):
        return drift
    embedded, done = _embed_again(store, index, sorted(missing + stale), stop, on_embedding, on_embedded)
    return ChunkDrift(chunks, len(missing), len(stale), extra, embedded=embedded, finished=done)


def _vectors_of_chunks_gone(
    store: Store, index: KnowledgeIndex, *, repair: bool, stop: threading.Event
) -> int:
    """How many vectors stand for no chunk of SQLite; with ``repair``, deleted."""
    extra, after = 0, None
    while not stop.is_set():
        page, after = index.id_page("chunks", after=after)
        gone = sorted(set(page) - store.corpus_chunks_among(page))
        extra += len(gone)
        if gone and repair:
            index.delete("chunks", gone)
        if after is None:
            break
    return extra


def _embed_again(
    store: Store,
    index: KnowledgeIndex,
    chunk_ids: list[int],
    stop: threading.Event,
    on_embedding: Callable[[int], None] | None,
    on_embedded: Callable[[int], None] | None,
) -> tuple[int, bool]:
    """Embed these chunks (those SQLite still holds) in batches: how many were, and whether every
    batch was reached (not stopped, the index still there)."""
    logger.info("corpus: embedding %d chunks whose vectors are missing or not of their text", len(chunk_ids))
    if on_embedding is not None:
        on_embedding(len(chunk_ids))
    embedded = 0
    for start in range(0, len(chunk_ids), REPAIR_BATCH):
        if stop.is_set() or not index.available:
            return embedded, False
        batch = store.corpus_chunks_by_id(chunk_ids[start : start + REPAIR_BATCH])
        index.add("chunks", [chunk_point(c.id, c.doc_id, c.title, c.text) for c in batch])
        embedded += len(batch)
        if on_embedded is not None:
            on_embedded(len(batch))
    return embedded, index.available


def marked_in_step(index: KnowledgeIndex | None, version: ChunksVersion) -> bool:
    """Whether a process found the chunk vectors in step with exactly these chunks and no process
    wrote a chunk vector since (the index's check mark)."""
    return index is not None and index.checked_for("chunks") == json.dumps(version)


def mark_in_step(index: KnowledgeIndex | None, version: ChunksVersion, stamp: WriteStamp | None) -> None:
    """After a complete check (and repair) of ``version``, begun at the index's write ``stamp``: remember
    it for the next processes (refused by the index when another process wrote since ``stamp``)."""
    if index is not None and stamp is not None:
        index.mark_checked("chunks", json.dumps(version), stamp)


def bring_in_step(
    store: Store,
    index: KnowledgeIndex | None,
    progress: IndexProgress,
    stop: threading.Event,
    no_embedder: Callable[[NotConfigured], None],
) -> tuple[int, bool]:
    """Bring the chunk vectors in step with SQLite by identity: vectors of chunks gone deleted, chunks
    whose vector is missing or of other text embedded again.

    Both sides are read a page at a time, so memory does not grow with the corpus: this is also how
    a data folder whose index was moved to another engine gets its vectors back. Returns how many
    chunks were embedded, and whether the index is now known to be in step (False: it could not be
    read, another process held it, or the pass stopped). ``no_embedder`` is told when the embedder
    cannot run (its model is missing)."""
    try:
        drift = check_chunk_vectors(
            store,
            index,
            repair=True,
            stop=stop,
            on_embedding=progress.embedding,
            on_embedded=progress.chunks_done,
        )
    except NotConfigured as err:
        no_embedder(err)
        return 0, False
    if drift.available and not drift.in_step:
        logger.info("corpus vectors: %s", drift.describe())
    return drift.embedded, drift.available and drift.finished

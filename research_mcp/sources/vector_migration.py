"""Moving a data folder's vectors from qdrant-client's local mode (``<data>/qdrant``, releases before
0.2) to Qdrant Edge (``<data>/vectors``).

Nothing is copied out of the old folder: opening it would load every point into memory, which is
what the move is for. SQLite is the system of record, so the new index is filled from it, as the
server already keeps it in step: the facts healer (``storage/healing.py``) indexes every verified
fact the index lacks, and the corpus's first indexing pass embeds every chunk it lacks, both in
bounded batches, in the background, with their progress logged. :func:`keep_migrating` watches
both and removes the old folder once the new index holds everything; a migration that a stop or a
crash interrupts goes on from where it was at the next start (only what is still missing is
embedded).
"""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from research_mcp.sources.corpus import Corpus
    from research_mcp.storage.knowledge_base import KnowledgeBase

__all__ = ["keep_migrating", "migrated", "retire"]

logger = logging.getLogger(__name__)

#: Seconds between two checks whether the new index holds everything.
CHECK_INTERVAL = 5.0


def migrated(knowledge: KnowledgeBase, corpus: Corpus | None) -> tuple[bool, str]:
    """Whether the new index holds every verified fact and corpus chunk of the store, and how far it is."""
    index = knowledge.index
    if index is None or not index.available:
        return False, "the knowledge index is not available yet"
    facts, held_facts = knowledge.store.count_known_facts(), index.count("facts")
    chunks = held_chunks = 0
    if corpus is not None:
        chunks, held_chunks = corpus.store.corpus_chunk_count(), index.count("chunks")
    done = held_facts == facts and held_chunks == chunks
    return done, f"{held_facts:,} of {facts:,} facts and {held_chunks:,} of {chunks:,} corpus chunks indexed"


def retire(legacy: Path) -> None:
    shutil.rmtree(legacy, ignore_errors=True)
    logger.info("knowledge index moved to Qdrant Edge; the old folder %s is removed", legacy)


async def keep_migrating(
    legacy: Path,
    knowledge: KnowledgeBase,
    corpus: Corpus | None,
    stop: threading.Event,
    *,
    interval: float | None = None,
) -> None:
    """The server's background migration: log progress until the new index holds the store's facts and
    chunks, then remove ``legacy``. Returns at once when there is no old folder."""
    if not legacy.is_dir():
        return
    logger.warning(
        "Moving the knowledge index from %s (qdrant-client's local mode) to Qdrant Edge: facts and corpus "
        "chunks are embedded again from the store in the background; research goes on meanwhile.",
        legacy,
    )
    last = ""
    while not stop.is_set():
        done, progress = await anyio.to_thread.run_sync(migrated, knowledge, corpus)
        if done and (corpus is None or corpus.status().complete):
            await anyio.to_thread.run_sync(retire, legacy)
            return
        if progress != last:
            logger.info("knowledge index migration: %s", progress)
            last = progress
        await anyio.sleep(CHECK_INTERVAL if interval is None else interval)

"""Self-healing of the knowledge index: the Qdrant "facts" collection brought back in step with SQLite.

The index holds one point per verified canonical fact of the store. It drifts when facts are stored
while it cannot be written (another process holds the local folder, the Qdrant server is down, the
disk is full), when a process is killed between storing facts and indexing them, or when points are
deleted or added behind its back. :func:`heal` compares the two id sets in pages (ids only: no
vectors, no payloads), indexes the missing facts in bounded batches (through
:meth:`KnowledgeBase.merge_or_index`, so a missing fact that duplicates a known one is merged as it
would have been) and deletes the points no verified canonical fact stands behind.

The server heals at start when the store and the index hold different numbers of facts, and then
whenever an indexing failure marked the index dirty or the counts differ (:func:`keep_healed`, in the background: it never
delays the host's first request). `research-mcp doctor` reports the drift; `research-mcp reindex`
rebuilds the index at once.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import anyio

from research_mcp.storage.knowledge_base import KnowledgeBase

__all__ = ["HEAL_BATCH", "HEAL_INTERVAL", "IndexDrift", "heal", "keep_healed"]

logger = logging.getLogger(__name__)

#: Facts embedded and indexed per batch while healing (and ids compared per page of the store).
HEAL_BATCH = 256
#: Seconds between the server's checks whether the index needs healing again.
HEAL_INTERVAL = 60.0


@dataclass(frozen=True)
class IndexDrift:
    """How far the facts index was from the store, and whether healing brought it back."""

    facts: int  # verified canonical facts in the store
    missing: int  # of those, not in the index
    extra: int  # points in the index with no verified canonical fact behind them
    healed: bool  # the index now holds exactly the store's facts (False: a dry run, or stopped)
    available: bool = True  # False: the index could not be opened or read; nothing was compared

    @property
    def in_step(self) -> bool:
        return self.available and not self.missing and not self.extra

    def describe(self) -> str:
        if not self.available:
            return "the knowledge index is unavailable; drift not checked"
        if self.in_step:
            return f"{self.facts} facts, index in step with the store"
        return f"{self.missing} of {self.facts} facts missing from the index, {self.extra} extra points" + (
            "; healed" if self.healed else ""
        )


def heal(
    knowledge: KnowledgeBase, *, dry_run: bool = False, stop: threading.Event | None = None
) -> IndexDrift:
    """Compare the facts index with the store; unless ``dry_run``, index what is missing and delete
    what is extra. Blocking; safe while runs record facts. ``stop`` ends it after the batch at hand."""
    if not knowledge.available:
        return IndexDrift(facts=0, missing=0, extra=0, healed=False, available=False)
    index, store = knowledge.index, knowledge.store
    assert index is not None
    dirty_before, knowledge.dirty = knowledge.dirty, False
    stopped = lambda: stop is not None and stop.is_set()  # noqa: E731
    # Extras first, so that a missing fact is never merged into a point that should not be there.
    extra, after = 0, None
    while not stopped():
        ids, after = index.id_page("facts", after=after)
        known = {row.id for row in store.known_facts(ids)}
        gone = [point for point in ids if point not in known]
        extra += len(gone)
        if gone and not dry_run:
            index.delete("facts", gone)
        if after is None:
            break
    facts, missing, failed, last = 0, 0, False, 0
    while not stopped():
        ids = store.known_fact_ids(after=last, limit=HEAL_BATCH)
        if not ids:
            break
        facts += len(ids)
        absent = sorted(set(ids) - index.held("facts", ids))
        missing += len(absent)
        if absent and not dry_run:
            failed |= not knowledge.merge_or_index(absent)
        last = ids[-1]
    available = knowledge.available
    finished = not stopped() and available and not failed
    if not finished:
        knowledge.dirty = knowledge.dirty or dirty_before or missing > 0 or extra > 0
    return IndexDrift(
        facts=facts,
        missing=missing,
        extra=extra,
        healed=finished and not dry_run,
        available=available,
    )


def needs_healing(knowledge: KnowledgeBase) -> bool:
    """Cheap check: an indexing failure marked the index dirty, or the counts differ (facts stored by
    another process while this one held the index, points deleted behind its back)."""
    if not knowledge.available:
        return False
    assert knowledge.index is not None
    return knowledge.dirty or knowledge.store.count_known_facts() != knowledge.index.count("facts")


async def keep_healed(
    knowledge: KnowledgeBase, stop: threading.Event, *, interval: float = HEAL_INTERVAL
) -> None:
    """The server's background healer: heal at start when :func:`needs_healing` says so, then whenever it
    says so twice in a row (a single count difference may be a fact between being stored and indexed).

    At start only the counts are compared: a full comparison of the id sets pages through every fact
    (seconds of the server's time for 50,000 facts, while it answers its host) and finds more only
    when a missing fact and an extra point happen to cancel out; `research-mcp doctor` compares them
    in full and `research-mcp reindex` heals that case."""
    drifted = await anyio.to_thread.run_sync(needs_healing, knowledge)
    mismatches = 1 if drifted else -1  # a drift at start: heal at once
    while not stop.is_set():
        if knowledge.dirty or mismatches >= 1:
            drift = await anyio.to_thread.run_sync(lambda: heal(knowledge, stop=stop))
            _log(drift)
            mismatches = -1
        await anyio.sleep(interval)
        if stop.is_set():
            return
        if await anyio.to_thread.run_sync(needs_healing, knowledge):
            mismatches += 1
        else:
            mismatches = -1


def _log(drift: IndexDrift) -> None:
    if not drift.available:
        return
    if drift.missing or drift.extra:
        logger.warning(
            "knowledge index drift: %s (%s)",
            drift.describe(),
            "healed" if drift.healed else "not yet healed; retried later",
        )
    else:
        logger.info("knowledge index: %s", drift.describe())

"""The live state of corpus indexing: what a pass did (:class:`IndexReport`), where indexing stands
(:class:`CorpusStatus`, one line for tools, logs and ``doctor``) and the thread-safe holder the
indexing thread updates and every other thread reads (:class:`IndexProgress`)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["CorpusStatus", "IndexProgress", "IndexReport", "Phase", "duration"]

#: Suffixes of the files passed over named one by one in the skipped line; the rest are counted.
SHOWN_KINDS = 5

Phase = Literal["waiting", "scanning", "reading", "embedding", "ready", "stopped", "failed"]


@dataclass(frozen=True)
class IndexReport:
    """What one indexing pass did; ``read`` counts the files whose bytes were read."""

    added: int
    updated: int
    unchanged: int
    removed: int
    errors: list[str] = field(default_factory=list)
    read: int = 0
    embedded: int = 0
    stopped: bool = False
    #: Files passed over without a note: not documents by their names (counted by suffix), and
    #: files named like documents that hold binary data or nothing.
    not_documents: dict[str, int] = field(default_factory=dict)
    binary: int = 0
    empty: int = 0

    @property
    def skipped(self) -> int:
        return len(self.errors) + sum(self.not_documents.values()) + self.binary + self.empty

    def skipped_line(self) -> str | None:
        """How many files the pass skipped and why, in one line; None when it skipped none:
        ``skipped 287 files: 7 named above; 230 not documents by their names (.py 120, .json 40, …); 50 binary``."""
        if not self.skipped:
            return None
        parts = [f"{len(self.errors):,} named above"] if self.errors else []
        if self.not_documents:
            kinds = sorted(self.not_documents.items(), key=lambda kind: (-kind[1], kind[0]))
            shown = ", ".join(f"{suffix} {count:,}" for suffix, count in kinds[:SHOWN_KINDS])
            more = f", {len(kinds) - SHOWN_KINDS} more kinds" if len(kinds) > SHOWN_KINDS else ""
            parts.append(f"{sum(self.not_documents.values()):,} not documents by their names ({shown}{more})")
        if self.binary:
            parts.append(f"{self.binary:,} named like documents but holding binary data")
        if self.empty:
            parts.append(f"{self.empty:,} empty")
        return f"skipped {self.skipped:,} files: " + "; ".join(parts)


@dataclass(frozen=True)
class CorpusStatus:
    """The corpus index at one moment, as the tools and ``doctor`` report it."""

    phase: Phase
    documents_total: int
    documents_indexed: int
    chunks_to_embed: int = 0
    chunks_embedded: int = 0
    eta_s: float | None = None
    error: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every document is searchable: indexing is done, or a pass has read them all
        (what is left of it, storing the last vectors, does not hide a document from a search)."""
        return self.phase == "ready" or (
            self.phase == "reading" and self.documents_indexed >= self.documents_total
        )

    def line(self) -> str:
        """One line for a tool result or a log: ``corpus: 412 of 1,930 documents indexed (about 3 min left)``."""
        eta = f" (about {duration(self.eta_s)} left)" if self.eta_s is not None else ""
        if self.phase == "ready":
            return f"corpus: {self.documents_indexed:,} documents indexed"
        if self.phase in ("waiting", "scanning"):
            return (
                f"corpus: indexing is starting (scanning the folders); {self.documents_indexed:,} "
                "documents indexed earlier are searchable"
            )
        if self.phase == "failed":
            return (
                f"corpus: indexing failed ({self.error}); searches use the {self.documents_indexed:,} "
                "documents indexed before"
            )
        counts = f"{self.documents_indexed:,} of {self.documents_total:,} documents indexed"
        if self.phase == "stopped":
            return f"corpus: indexing stopped at {counts}; the next pass goes on from there"
        if self.phase == "embedding":
            counts += f", vectors for {self.chunks_embedded:,} of {self.chunks_to_embed:,} chunks"
        return f"corpus: {counts}{eta}"


class IndexProgress:
    """The live state of indexing passes, updated by the indexing thread and read by any other.

    ``on_change``, when given, is called (in the indexing thread) with each new status.
    """

    def __init__(self, on_change: Callable[[CorpusStatus], None] | None = None, *, known: int = 0) -> None:
        self._lock = threading.Lock()
        self._on_change = on_change
        self._status = CorpusStatus(phase="waiting", documents_total=known, documents_indexed=known)
        self._phase_started = time.monotonic()
        self._phase_done = 0
        #: The store's chunks (`Store.corpus_chunks_version`) when a pass of this process last found
        #: the vector index in step with them, or brought it there; None before any.
        self.vectors_checked_for: tuple[int, int | None, str | None] | None = None
        # Set once a pass knows what it has to read (or has ended): until then, whether the index is
        # complete is not known, and a search may wait for it (`wait_scanned`).
        self._scanned = threading.Event()

    def status(self) -> CorpusStatus:
        """The state now, its time left estimated at this moment (a long batch makes it grow)."""
        with self._lock:
            status = self._status
            return dataclasses.replace(status, eta_s=self._eta(dict(status.__dict__)))

    def _set(self, **changes: Any) -> None:
        with self._lock:
            old = self._status
            if "phase" in changes and changes["phase"] != old.phase:
                self._phase_started, self._phase_done = time.monotonic(), 0
            values = {**old.__dict__, **changes}
            values["eta_s"] = self._eta(values)
            self._status = status = CorpusStatus(**values)
        if self._on_change is not None:
            self._on_change(status)

    def _eta(self, values: dict[str, Any]) -> float | None:
        if values["phase"] == "reading":
            done, left = self._phase_done, values["documents_total"] - values["documents_indexed"]
        elif values["phase"] == "embedding":
            done, left = self._phase_done, values["chunks_to_embed"] - values["chunks_embedded"]
        else:
            return None
        if done == 0:
            return None
        return (time.monotonic() - self._phase_started) / done * max(left, 0)

    def scanning(self) -> None:
        """A pass begins by scanning the folders. A rescan of a corpus that is indexed stays
        ``ready`` until it finds something to read: everything indexed is still searchable."""
        if self.status().phase != "ready":
            self._scanned.clear()
            self._set(phase="scanning", error=None)

    def reading(self, total: int, up_to_date: int) -> None:
        """The scan has found what to read. Nothing (a new process re-checking a corpus indexed
        before): the index is complete, so ``ready`` at once, though the pass goes on to check the
        vectors (which says ``embedding`` if any are missing)."""
        if total == up_to_date:
            if self.status().phase != "ready":
                self._set(phase="ready", documents_total=total, documents_indexed=total)
        else:
            self._set(phase="reading", documents_total=total, documents_indexed=up_to_date)
        self._scanned.set()

    def wait_scanned(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) while a pass is scanning the folders; whether it is done."""
        if self.status().phase != "scanning":
            return True
        return self._scanned.wait(timeout)

    def document_done(self) -> None:
        with self._lock:
            self._phase_done += 1
        self._set(documents_indexed=self.status().documents_indexed + 1)

    def embedding(self, chunks: int) -> None:
        if self.status().phase == "ready" and chunks == 0:
            return
        self._set(phase="embedding", chunks_to_embed=chunks, chunks_embedded=0)

    def chunks_done(self, count: int) -> None:
        with self._lock:
            self._phase_done += count
        self._set(chunks_embedded=self.status().chunks_embedded + count)

    def finished(self, documents: int, *, stopped: bool) -> None:
        if stopped:
            self._set(phase="stopped")
        else:
            self._set(phase="ready", documents_total=documents, documents_indexed=documents)
        self._scanned.set()

    def failed(self, error: str) -> None:
        self._set(phase="failed", error=error)
        self._scanned.set()


def duration(seconds: float | None) -> str:
    """A time left, as a person reads it: "40 s", "12 min", "2.5 h"."""
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"

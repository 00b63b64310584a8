"""The seam between the knowledge index and the engine that holds its vectors.

Two engines serve it: Qdrant Edge, embedded in the process with its shards under the data folder
(``storage/edge.py``, the default), and a Qdrant server at ``QDRANT_URL`` through qdrant-client
(``storage/qdrant.py``), for an index that outgrows one machine. Both hold the same collections,
vectors and payloads and answer the same queries; :class:`~research_mcp.storage.vectors.KnowledgeIndex`
speaks only this protocol.

An engine raises :class:`EngineUnavailable` when it cannot serve a call (the server is down, the disk
refuses a write); the index then goes on without it, with one warning. :class:`EngineBusy` is the
embedded engine's "another process holds the folder right now": the index waits, then goes on
without it for a while and tries again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # numpy takes a while to import: the server answers its host first
    import numpy as np

__all__ = ["EngineBusy", "EngineUnavailable", "IndexedHit", "Point", "VectorEngine", "WriteStamp", "one_line"]

#: One point to store: its SQLite id, its vector, its payload.
Point = tuple[int, "np.ndarray", dict[str, Any]]
#: A collection's writes so far: who made it (a random id), and how many lease holds wrote to it since.
WriteStamp = tuple[str, int]


class EngineUnavailable(Exception):
    """The engine cannot serve this call; the message says why, in one line."""


class EngineBusy(EngineUnavailable):
    """Another process holds the embedded engine's folder and did not release it in time."""


@dataclass(frozen=True)
class IndexedHit:
    """One search result: the SQLite id of a fact or chunk, its cosine similarity, its payload."""

    id: int
    score: float
    payload: dict[str, Any]


class VectorEngine(Protocol):
    """Named collections of cosine vectors with payloads. Not thread-safe: the index serialises calls."""

    #: Whether other installations may share the engine (a server): its foreign collections are left alone.
    shared: bool

    def collections(self) -> list[str]: ...

    def dimension(self, name: str) -> int | None:
        """The collection's vector size, or None when it does not exist."""
        ...

    def create(
        self, name: str, dim: int, metadata: dict[str, Any], *, half: bool = False, rebuildable: bool = False
    ) -> None:
        """A new empty collection; ``half``: vectors stored as float16 (embedders whose vectors are no finer);
        ``rebuildable``: the caller re-adds what a crash loses (SQLite holds it), so the engine may skip
        its write-ahead log and keep only what a flush (``optimize``, ``release``) wrote."""
        ...

    def rebuildable(self, name: str) -> bool:
        """Whether the collection was created ``rebuildable`` (a server keeps its own log: always True)."""
        ...

    def drop(self, name: str) -> None: ...

    def upsert(self, name: str, points: Sequence[Point]) -> None: ...

    def query(
        self,
        name: str,
        vector: np.ndarray,
        *,
        limit: int,
        min_score: float,
        where: dict[str, str | int] | None,
    ) -> list[IndexedHit]: ...

    def delete(self, name: str, ids: Sequence[int]) -> None: ...

    def count(self, name: str) -> int: ...

    def id_page(self, name: str, after: int | None, limit: int) -> tuple[list[int], int | None]:
        """Ids from scroll position ``after`` (None: the start), and the next position (None: no more)."""
        ...

    def held(self, name: str, ids: Sequence[int]) -> set[int]: ...

    def held_values(self, name: str, ids: Sequence[int], key: str) -> dict[int, Any]:
        """Each of these ids the collection holds, with its payload's value under ``key`` (None: none)."""
        ...

    def optimize(self, name: str) -> None:
        """Build the search index of what was just written in bulk (a no-op where the engine does it itself)."""
        ...

    def write_stamp(self, name: str) -> WriteStamp | None:
        """The collection's writes so far (None: it does not exist, or the engine keeps no stamps)."""
        ...

    def checked_for(self, name: str) -> str | None:
        """What :meth:`mark_checked` last named, when no process wrote to the collection since (None:
        no such mark, or an engine that keeps none)."""
        ...

    def mark_checked(self, name: str, checked_for: str, since: WriteStamp) -> bool:
        """Remember, across processes, that the collection was found in step with ``checked_for``,
        unless another process wrote to it after ``since`` (taken before the check began); whether it
        was remembered."""
        ...

    def release(self) -> None:
        """Let other processes use what this one holds until its next call (a no-op for a server)."""
        ...

    def let_go(self, name: str) -> None:
        """Free what this process holds of one collection (an embedded engine's mapped files) until
        its next call on it (a no-op for a server)."""
        ...

    def close(self) -> None: ...


def one_line(err: BaseException) -> str:
    """An engine's error as one line of at most 200 characters, for a warning."""
    return " ".join(str(err).split())[:200] or type(err).__name__

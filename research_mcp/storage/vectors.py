"""The knowledge index: vectors of facts, corpus chunks and insights (what sources left open), in Qdrant.

SQLite is the system of record; this index only answers "what do we already
know that is close to this?" and can be dropped and rebuilt from SQLite at any
time (:meth:`KnowledgeIndex.reset`, then :meth:`KnowledgeIndex.add` again).

Qdrant runs embedded (Qdrant Edge, shards in one folder under the data folder:
``storage/edge.py``) unless a server URL is given (``storage/qdrant.py``); both
sit behind one small protocol (``storage/vector_engine.py``). When the engine
cannot be used (the server is down or refuses us, the disk refuses a write)
the index says so in one warning log line and becomes a no-op (``available`` is
False): research goes on, facts still land in SQLite, and healing or a reindex
catches up later. When another process holds the embedded folder, the index
waits for it, then does without it for :data:`BUSY_PAUSE` seconds and tries
again; an index idle for :data:`IDLE_RELEASE` seconds lets the folder go, so
processes sharing a data folder take turns.

Each collection is named after the embedder that fills it and records that embedder's name and
dimension: vectors of different models never mix. When the embedder changes (a new release,
another model), the new collection starts empty, which the corpus sees as vectors out of step with
SQLite and re-embeds once (``Corpus.rebuild_vectors``); the collections the old embedder filled are
dropped then, in the embedded engine. On a Qdrant server, which other installations may share,
they are left alone and named in a log line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from research_mcp.core.contracts import Embedder
from research_mcp.storage.vector_engine import (
    EngineBusy,
    EngineUnavailable,
    IndexedHit,
    VectorEngine,
    WriteStamp,
)

if TYPE_CHECKING:  # numpy takes a while to import: only when first used
    import numpy as np

__all__ = ["Collection", "IndexedHit", "KnowledgeIndex"]

logger = logging.getLogger(__name__)

Collection = Literal["facts", "chunks", "insights"]
#: Collections SQLite can fill again, kept without the engine's write-ahead log: chunks (the corpus's
#: check re-embeds what a crash lost) and insights (given vectors again when next looked up).
_REBUILDABLE: tuple[Collection, ...] = ("chunks", "insights")
T = TypeVar("T")

#: Points sent to the engine per upsert.
UPSERT_BATCH = 256
#: Ids read per scroll request when listing what the index holds.
SCROLL_PAGE = 2048
#: Seconds without a call after which the embedded engine's folder is let go for other processes.
IDLE_RELEASE = 2.0
#: Seconds the index does without the embedded engine after another process kept it past the wait.
BUSY_PAUSE = 30.0
#: Let go after each search: a few a run, seconds apart, each mapping every chunk vector (64 MB, 6,400 docs).
LET_GO_AFTER_SEARCH: frozenset[Collection] = frozenset({"chunks"})


class KnowledgeIndex:
    """Facts and chunks as vectors, searchable by meaning and filterable by payload."""

    def __init__(
        self,
        engine: VectorEngine | None,
        embedder: Embedder,
        *,
        chunk_embedder: Embedder | None = None,
        connect: Callable[[], VectorEngine | None] | None = None,
        idle_release: float | None = IDLE_RELEASE,
    ) -> None:
        self._engine = engine
        self._connect = connect  # run once, on first use, when the index was opened lazily
        self._embedder = embedder
        self._embedders: dict[Collection, Embedder] = {
            "facts": embedder,
            "chunks": chunk_embedder or embedder,
            "insights": embedder,
        }
        self._lock = threading.Lock()
        self._ready: set[str] = set()
        self._paused_until = 0.0  # another process kept the folder: do without it until then
        self._idle_release = idle_release
        self._last_call = 0.0
        self._releaser: threading.Thread | None = None
        self._closed = threading.Event()

    @classmethod
    def open(
        cls,
        *,
        path: Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        embedder: Embedder,
        chunk_embedder: Embedder | None = None,
        location: str | None = None,
        lazy: bool = False,
        wait: float = 10.0,
        idle_release: float | None = IDLE_RELEASE,
    ) -> KnowledgeIndex:
        """Open the engine: ``location=":memory:"`` (an embedded engine in a temporary folder, removed
        on close), a server ``url``, or an embedded engine in the folder ``path``.

        ``embedder`` embeds facts, and corpus chunks too unless ``chunk_embedder`` is given.
        Never raises because Qdrant is unavailable; returns an index whose ``available`` is False.
        ``lazy`` defers importing the engine and connecting until the index is first used (or
        :meth:`connect` is called), so a server can answer its host first. ``wait``: seconds a call
        waits for the embedded folder while another process holds it; ``idle_release``: seconds
        without a call after which this process lets the folder go (None: never).
        """
        if location is None and url is None and path is None:
            raise ValueError("KnowledgeIndex.open needs a path, a url or a location")

        def connect() -> VectorEngine | None:
            if url is not None:
                from research_mcp.storage.qdrant import connect_server

                return connect_server(url, api_key)
            from research_mcp.storage.edge import EdgeEngine

            return EdgeEngine(None if location is not None else path, wait=wait)

        index = cls(None, embedder, chunk_embedder=chunk_embedder, connect=connect, idle_release=idle_release)
        if not lazy:
            index.connect()
        return index

    def connect(self) -> bool:
        """Open the connection now if it is still deferred; whether the index is available."""
        return self.available

    @property
    def available(self) -> bool:
        with self._lock:
            return self._connected() is not None and time.monotonic() >= self._paused_until

    @property
    def busy(self) -> bool:
        """Another process held the embedded folder at the last call (the index does without it now)."""
        with self._lock:
            return time.monotonic() < self._paused_until

    def _connected(self) -> VectorEngine | None:
        """The engine, connecting first if that was deferred; call with the lock held."""
        if self._connect is not None:
            connect, self._connect = self._connect, None
            self._engine = connect()
        return self._engine

    @property
    def embedder(self) -> Embedder:
        """The embedder of facts."""
        return self._embedder

    def embedder_for(self, collection: Collection) -> Embedder:
        """The embedder whose vectors ``collection`` holds."""
        return self._embedders[collection]

    def add(self, collection: Collection, items: Sequence[tuple[int, str, dict[str, Any]]]) -> None:
        """Embed each ``(id, text, payload)`` and upsert it; an existing id is replaced."""
        if not self.available or not items:
            return
        vectors = self._embedders[collection].embed([text for _, text, _ in items])
        points = [(i, vector, payload) for (i, _, payload), vector in zip(items, vectors, strict=True)]
        self.add_vectors(collection, points)

    def add_vectors(
        self, collection: Collection, items: Sequence[tuple[int, np.ndarray, dict[str, Any]]]
    ) -> None:
        """As :meth:`add`, for ``(id, vector, payload)`` already embedded by this index's embedder."""
        if not items:
            return
        import numpy as np

        def upsert(engine: VectorEngine) -> None:
            name = self._ensure(engine, collection)
            for start in range(0, len(items), UPSERT_BATCH):
                batch = items[start : start + UPSERT_BATCH]
                engine.upsert(name, [(i, vector.astype(np.float32), payload) for i, vector, payload in batch])

        self._call(upsert, None)

    def search(
        self,
        collection: Collection,
        text: str,
        *,
        limit: int = 10,
        min_score: float = 0.0,
        where: dict[str, str | int] | None = None,
    ) -> list[IndexedHit]:
        """The items closest in meaning to ``text``, best first, each scoring at least ``min_score``."""
        if not self.available:
            return []
        vector = self._embedders[collection].embed([text])[0]
        return self.search_vector(collection, vector, limit=limit, min_score=min_score, where=where)

    def search_vector(
        self,
        collection: Collection,
        vector: np.ndarray,
        *,
        limit: int = 10,
        min_score: float = 0.0,
        where: dict[str, str | int] | None = None,
    ) -> list[IndexedHit]:
        """As :meth:`search`, for a vector already embedded (shape ``(dim,)``)."""
        import numpy as np

        dim = self._embedders[collection].dim
        if vector.shape != (dim,):
            raise ValueError(f"expected a vector of shape ({dim},), got {vector.shape!r}")

        def query(engine: VectorEngine) -> list[IndexedHit]:
            name = self._name(collection)
            if not self._exists(engine, name):
                return []
            hits = engine.query(
                name, vector.astype(np.float32), limit=limit, min_score=min_score, where=where
            )
            if collection in LET_GO_AFTER_SEARCH:
                engine.let_go(name)
            return hits

        return self._call(query, [])

    def delete(self, collection: Collection, ids: Sequence[int]) -> None:
        """Remove these ids; ids the index does not hold are ignored."""
        if not ids:
            return

        def delete(engine: VectorEngine) -> None:
            name = self._name(collection)
            if self._exists(engine, name):
                engine.delete(name, ids)

        self._call(delete, None)

    def reset(self, collection: Collection) -> None:
        """Drop the collection and recreate it empty, before a reindex from SQLite."""

        def reset(engine: VectorEngine) -> None:
            name = self._name(collection)
            engine.drop(name)
            self._ready.discard(name)
            self._ensure(engine, collection)

        self._call(reset, None)

    def optimize(self, collection: Collection) -> None:
        """Build the search index over what was just written in bulk (after indexing a corpus)."""
        self._call(lambda engine: self._on(engine, collection, engine.optimize, None), None)

    def count(self, collection: Collection) -> int:
        """How many items the collection holds (0 when unavailable)."""
        return self._call(lambda engine: self._on(engine, collection, engine.count, 0), 0)

    def id_page(
        self, collection: Collection, *, after: int | None = None, limit: int = SCROLL_PAGE
    ) -> tuple[list[int], int | None]:
        """One page of the ids the collection holds (ids only, no vectors or payloads), from the
        scroll position ``after`` (None: the start), and the position of the next page (None: no more).
        Empty when the index is unavailable."""

        def page(engine: VectorEngine) -> tuple[list[int], int | None]:
            name = self._name(collection)
            if not self._exists(engine, name):
                return [], None
            return engine.id_page(name, after, limit)

        nothing: tuple[list[int], int | None] = ([], None)
        return self._call(page, nothing)

    def held(self, collection: Collection, ids: Sequence[int]) -> set[int]:
        """Which of these ids the collection holds (empty when unavailable)."""
        if not ids:
            return set()

        def held(engine: VectorEngine) -> set[int]:
            name = self._name(collection)
            return engine.held(name, ids) if self._exists(engine, name) else set()

        return self._call(held, set())

    def held_values(self, collection: Collection, ids: Sequence[int], key: str) -> dict[int, Any]:
        """Each of these ids the collection holds, with its payload's value under ``key`` (None when its
        payload has none); empty when unavailable."""
        if not ids:
            return {}

        def values(engine: VectorEngine) -> dict[int, Any]:
            name = self._name(collection)
            return engine.held_values(name, ids, key) if self._exists(engine, name) else {}

        nothing: dict[int, Any] = {}
        return self._call(values, nothing)

    def write_stamp(self, collection: Collection) -> WriteStamp | None:
        """The collection's writes so far, taken before checking it (None: no collection, unavailable,
        or an engine that keeps no stamps: a server)."""
        return self._call(lambda engine: self._on(engine, collection, engine.write_stamp, None), None)

    def checked_for(self, collection: Collection) -> str | None:
        """What a process last found the collection in step with, when no process wrote to it since."""
        return self._call(lambda engine: self._on(engine, collection, engine.checked_for, None), None)

    def mark_checked(self, collection: Collection, checked_for: str, since: WriteStamp) -> bool:
        """Remember across processes that the collection is in step with ``checked_for``, unless another
        process wrote to it after ``since``; every later write removes the mark before touching a vector."""

        def mark(engine: VectorEngine) -> bool:
            return self._on(
                engine, collection, lambda name: engine.mark_checked(name, checked_for, since), False
            )

        return self._call(mark, False)

    def _on(self, engine: VectorEngine, collection: Collection, call: Callable[[str], T], missing: T) -> T:
        """``call`` on the collection's name in ``engine``, or ``missing`` when it does not exist."""
        name = self._name(collection)
        return call(name) if self._exists(engine, name) else missing

    def release(self) -> None:
        """Let other processes use the embedded engine's folder until this index's next call."""
        with self._lock:
            if self._engine is not None:
                self._engine.release()

    def close(self) -> None:
        """Release the engine (and the embedded folder). Safe to call twice."""
        self._closed.set()
        with self._lock:
            self._connect = None  # never opened: nothing to release
            engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    def __enter__(self) -> KnowledgeIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, operation: Callable[[VectorEngine], T], unavailable: T) -> T:
        """Run one operation on the engine, one thread at a time.

        When the index is unavailable the result is ``unavailable``. An engine that fails during
        the call makes the index unavailable from then on, with one warning; one that another
        process keeps busy makes it pause for :data:`BUSY_PAUSE` seconds.
        """
        with self._lock:
            engine = self._connected()
            if engine is None or time.monotonic() < self._paused_until:
                return unavailable
            try:
                return operation(engine)
            except EngineBusy as err:
                self._paused_until = time.monotonic() + BUSY_PAUSE
                logger.warning(
                    "Knowledge index busy: %s. Research continues without it for %.0f s (full-text search "
                    "only; facts are kept in SQLite and indexed later).",
                    err,
                    BUSY_PAUSE,
                )
                return unavailable
            except EngineUnavailable as err:
                self._engine = None
                engine.close()
                from research_mcp.storage.qdrant import warn_unavailable

                warn_unavailable(str(err))
                return unavailable
            finally:
                self._last_call = time.monotonic()
                self._start_releaser(engine)

    def _start_releaser(self, engine: VectorEngine) -> None:
        """The thread that lets an idle embedded folder go; call with the lock held."""
        if engine.shared or self._idle_release is None or self._releaser is not None:
            return
        self._releaser = threading.Thread(target=self._release_when_idle, name="vectors-release", daemon=True)
        self._releaser.start()

    def _release_when_idle(self) -> None:
        assert self._idle_release is not None
        while not self._closed.wait(self._idle_release / 2):
            with self._lock:
                idle = time.monotonic() - self._last_call >= self._idle_release
                if idle and self._engine is not None:
                    self._engine.release()

    def _name(self, collection: Collection) -> str:
        # One collection per embedder: vectors of different models never mix, and a
        # shared server can hold other applications' collections beside ours.
        return f"research_mcp_{collection}_{self._embedders[collection].name}"

    def _exists(self, engine: VectorEngine, name: str) -> bool:
        if name in self._ready:
            return True
        dim = engine.dimension(name)
        if dim is None:
            return False
        collection = next(c for c in self._embedders if name.startswith(f"research_mcp_{c}_"))
        if dim != self._embedders[collection].dim:
            # Same name, another dimension: not vectors this embedder can search. Start again.
            logger.warning("dropping %s: its vectors are not of this embedder's dimension", name)
            engine.drop(name)
            return False
        if collection == "chunks" and not engine.rebuildable(name):
            # Made before chunk vectors went without the engine's write-ahead log: made again,
            # and filled from SQLite by the corpus's next check, as after a change of embedder.
            logger.info("rebuilding %s without a write-ahead log (SQLite holds its chunks)", name)
            engine.drop(name)
            return False
        self._ready.add(name)
        return True

    def _ensure(self, engine: VectorEngine, collection: Collection) -> str:
        name = self._name(collection)
        if not self._exists(engine, name):
            embedder = self._embedders[collection]
            # Corpus chunks are many, and their embedder averages float16 rows: half precision loses
            # nothing bench.retrieval measures, and halves their disk and page cache.
            half, rebuildable = collection == "chunks", collection in _REBUILDABLE
            engine.create(name, embedder.dim, {"embedder": embedder.name}, half=half, rebuildable=rebuildable)
            self._ready.add(name)
            self._drop_other_embedders(engine, collection)
        return name

    def _drop_other_embedders(self, engine: VectorEngine, collection: Collection) -> None:
        """Drop this collection's siblings filled by other embedders: their vectors can no longer be searched."""
        prefix, current = f"research_mcp_{collection}_", self._name(collection)
        for name in [c for c in engine.collections() if c.startswith(prefix) and c != current]:
            if not engine.shared:  # the embedded engine is ours alone
                logger.info("dropping %s: it holds another embedder's vectors (now %s)", name, current)
                engine.drop(name)
            else:
                logger.info(
                    "%s holds another embedder's vectors (now %s); left on the shared server", name, current
                )

"""The knowledge index: vectors of facts and corpus chunks in Qdrant.

SQLite is the system of record; this index only answers "what do we already
know that is close to this?" and can be dropped and rebuilt from SQLite at any
time (:meth:`KnowledgeIndex.reset`, then :meth:`KnowledgeIndex.add` again).

Qdrant runs embedded (qdrant-client local mode, one folder under the data
folder) unless a server URL is given. When it cannot be used — another
process holds the local folder, the server is down or refuses us — the index
says so in one warning log line and becomes a no-op (``available`` is False):
research goes on, facts still land in SQLite, and a reindex catches up later.

Each collection is named after the embedder that fills it and records that embedder's name and
dimension in its Qdrant metadata: vectors of different models never mix. When the embedder
changes (a new release, another model), the new collection starts empty, which the corpus sees as
vectors out of step with SQLite and re-embeds once (``Corpus.rebuild_vectors``); the collections
the old embedder filled are dropped then, in the embedded Qdrant. On a Qdrant server, which other
installations may share, they are left alone and named in a log line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from research_mcp.contracts import Embedder
from research_mcp.storage.qdrant import (
    commit_without_waiting,
    connect_local,
    connect_server,
    is_server,
    one_line,
    warn_unavailable,
)

if TYPE_CHECKING:  # qdrant-client and numpy take a second or more to import: only when first used
    import numpy as np
    from qdrant_client import QdrantClient, models

__all__ = ["Collection", "IndexedHit", "KnowledgeIndex"]

logger = logging.getLogger(__name__)

Collection = Literal["facts", "chunks"]
T = TypeVar("T")

#: Points sent to Qdrant per upsert request.
UPSERT_BATCH = 256
#: Ids read per scroll request when listing what the index holds.
SCROLL_PAGE = 2048


@dataclass(frozen=True)
class IndexedHit:
    """One search result: the SQLite id of a fact or chunk, its cosine similarity, its payload."""

    id: int
    score: float
    payload: dict[str, Any]


class KnowledgeIndex:
    """Facts and chunks as vectors, searchable by meaning and filterable by payload."""

    def __init__(
        self,
        client: QdrantClient | None,
        embedder: Embedder,
        *,
        chunk_embedder: Embedder | None = None,
        connect: Callable[[], QdrantClient | None] | None = None,
    ) -> None:
        self._client = client
        self._connect = connect  # run once, on first use, when the index was opened lazily
        self._embedder = embedder
        self._embedders: dict[Collection, Embedder] = {
            "facts": embedder,
            "chunks": chunk_embedder or embedder,
        }
        self._lock = threading.Lock()
        self._ready: set[str] = set()

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
    ) -> KnowledgeIndex:
        """Connect to Qdrant: ``location=":memory:"``, a server ``url``, or a local folder ``path``.

        ``embedder`` embeds facts, and corpus chunks too unless ``chunk_embedder`` is given.
        Never raises because Qdrant is unavailable; returns an index whose ``available`` is False.
        ``lazy`` defers importing qdrant-client and connecting until the index is first used (or
        :meth:`connect` is called), so a server can answer its host first.
        """
        if location is None and url is None and path is None:
            raise ValueError("KnowledgeIndex.open needs a path, a url or a location")

        def connect() -> QdrantClient | None:
            from qdrant_client import QdrantClient

            if location is not None:
                return QdrantClient(location=location)
            if url is not None:
                return connect_server(url, api_key)
            assert path is not None
            return connect_local(path)

        index = cls(None, embedder, chunk_embedder=chunk_embedder, connect=connect)
        if not lazy:
            index.connect()
        return index

    def connect(self) -> bool:
        """Open the connection now if it is still deferred; whether the index is available."""
        return self.available

    @property
    def available(self) -> bool:
        with self._lock:
            return self._connected() is not None

    def _connected(self) -> QdrantClient | None:
        """The client, connecting first if that was deferred; call with the lock held."""
        if self._connect is not None:
            connect, self._connect = self._connect, None
            self._client = connect()
        return self._client

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
        self.add_vectors(
            collection, [(i, vector, payload) for (i, _, payload), vector in zip(items, vectors, strict=True)]
        )

    def add_vectors(
        self, collection: Collection, items: Sequence[tuple[int, np.ndarray, dict[str, Any]]]
    ) -> None:
        """As :meth:`add`, for ``(id, vector, payload)`` already embedded by this index's embedder."""
        if not self.available or not items:
            return
        import numpy as np
        from qdrant_client import models

        points = [
            models.PointStruct(id=point_id, vector=vector.astype(np.float32).tolist(), payload=payload)
            for point_id, vector, payload in items
        ]

        def upsert(client: QdrantClient) -> None:
            name = self._ensure(client, collection)
            for start in range(0, len(points), UPSERT_BATCH):
                client.upsert(name, points=points[start : start + UPSERT_BATCH], wait=True)

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

        def query(client: QdrantClient) -> list[IndexedHit]:
            name = self._name(collection)
            if not self._exists(client, name):
                return []
            response = client.query_points(
                name,
                query=vector.astype(np.float32).tolist(),
                query_filter=_filter(where),
                limit=limit,
                score_threshold=min_score,
                with_payload=True,
            )
            return [
                IndexedHit(id=int(point.id), score=float(point.score), payload=dict(point.payload or {}))
                for point in response.points
            ]

        return self._call(query, [])

    def delete(self, collection: Collection, ids: Sequence[int]) -> None:
        """Remove these ids; ids the index does not hold are ignored."""
        if not ids:
            return

        def delete(client: QdrantClient) -> None:
            name = self._name(collection)
            if self._exists(client, name):
                from qdrant_client import models

                client.delete(name, points_selector=models.PointIdsList(points=list(ids)), wait=True)

        self._call(delete, None)

    def reset(self, collection: Collection) -> None:
        """Drop the collection and recreate it empty, before a reindex from SQLite."""

        def reset(client: QdrantClient) -> None:
            name = self._name(collection)
            client.delete_collection(name)
            self._ready.discard(name)
            self._ensure(client, collection)

        self._call(reset, None)

    def count(self, collection: Collection) -> int:
        """How many items the collection holds (0 when unavailable)."""

        def count(client: QdrantClient) -> int:
            name = self._name(collection)
            return client.count(name, exact=True).count if self._exists(client, name) else 0

        return self._call(count, 0)

    def ids(self, collection: Collection) -> set[int]:
        """Every id the collection holds (empty when unavailable): what a resumed indexing skips."""

        def ids(client: QdrantClient) -> set[int]:
            name = self._name(collection)
            found: set[int] = set()
            if not self._exists(client, name):
                return found
            offset = None
            while True:
                points, offset = client.scroll(
                    name, limit=SCROLL_PAGE, offset=offset, with_payload=False, with_vectors=False
                )
                found.update(int(point.id) for point in points)
                if offset is None:
                    return found

        return self._call(ids, set())

    def id_page(
        self, collection: Collection, *, after: int | None = None, limit: int = SCROLL_PAGE
    ) -> tuple[list[int], int | None]:
        """One page of the ids the collection holds (ids only, no vectors or payloads), from the
        scroll position ``after`` (None: the start), and the position of the next page (None: no more).
        Empty when the index is unavailable."""

        def page(client: QdrantClient) -> tuple[list[int], int | None]:
            name = self._name(collection)
            if not self._exists(client, name):
                return [], None
            points, offset = client.scroll(
                name, limit=limit, offset=after, with_payload=False, with_vectors=False
            )
            return [int(point.id) for point in points], None if offset is None else int(offset)

        nothing: tuple[list[int], int | None] = ([], None)
        return self._call(page, nothing)

    def held(self, collection: Collection, ids: Sequence[int]) -> set[int]:
        """Which of these ids the collection holds (empty when unavailable)."""
        if not ids:
            return set()

        def held(client: QdrantClient) -> set[int]:
            name = self._name(collection)
            if not self._exists(client, name):
                return set()
            points = client.retrieve(name, ids=list(ids), with_payload=False, with_vectors=False)
            return {int(point.id) for point in points}

        return self._call(held, set())

    def close(self) -> None:
        """Release Qdrant (and the local folder's lock). Safe to call twice."""
        with self._lock:
            self._connect = None  # never opened: nothing to release
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> KnowledgeIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, operation: Callable[[QdrantClient], T], unavailable: T) -> T:
        """Run one operation on the client, one thread at a time.

        When the index is unavailable, or a Qdrant server fails during the call, the
        result is ``unavailable``; a server failure also makes the index unavailable
        from then on, with one warning.
        """
        from qdrant_client.http.exceptions import ApiException

        with self._lock:
            client = self._connected()
            if client is None:
                return unavailable
            try:
                return operation(client)
            except ApiException as err:
                self._client = None
                client.close()
                warn_unavailable(f"Qdrant stopped answering ({one_line(err)})")
                return unavailable

    def _name(self, collection: Collection) -> str:
        # One collection per embedder: vectors of different models never mix, and a
        # shared server can hold other applications' collections beside ours.
        return f"research_mcp_{collection}_{self._embedders[collection].name}"

    def _exists(self, client: QdrantClient, name: str) -> bool:
        if name in self._ready:
            return True
        if not client.collection_exists(name):
            return False
        collection: Collection = "facts" if name.startswith("research_mcp_facts_") else "chunks"
        if client.get_collection(name).config.params.vectors.size != self._embedders[collection].dim:  # type: ignore[union-attr]
            # Same name, another dimension: not vectors this embedder can search. Start again.
            logger.warning("dropping %s: its vectors are not of this embedder's dimension", name)
            client.delete_collection(name)
            return False
        self._ready.add(name)
        commit_without_waiting(client, name)
        return True

    def _ensure(self, client: QdrantClient, collection: Collection) -> str:
        name = self._name(collection)
        if not self._exists(client, name):
            from qdrant_client import models

            embedder = self._embedders[collection]
            client.create_collection(
                name,
                vectors_config=models.VectorParams(size=embedder.dim, distance=models.Distance.COSINE),
                metadata={"embedder": embedder.name, "dim": embedder.dim},
            )
            self._ready.add(name)
            commit_without_waiting(client, name)
            self._drop_other_embedders(client, collection)
        return name

    def _drop_other_embedders(self, client: QdrantClient, collection: Collection) -> None:
        """Drop this collection's siblings filled by other embedders: their vectors can no longer be searched."""
        prefix, current = f"research_mcp_{collection}_", self._name(collection)
        stale = [
            c.name
            for c in client.get_collections().collections
            if c.name.startswith(prefix) and c.name != current
        ]
        for name in stale:
            if not is_server(client):  # the embedded Qdrant is ours alone
                logger.info("dropping %s: it holds another embedder's vectors (now %s)", name, current)
                client.delete_collection(name)
            else:
                logger.info(
                    "%s holds another embedder's vectors (now %s); left on the shared server", name, current
                )


def _filter(where: dict[str, str | int] | None) -> models.Filter | None:
    if not where:
        return None
    from qdrant_client import models

    return models.Filter(
        must=[
            models.FieldCondition(key=key, match=models.MatchValue(value=value))
            for key, value in where.items()
        ]
    )

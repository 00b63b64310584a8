"""A Qdrant server (``QDRANT_URL``) as the knowledge index's engine, through qdrant-client: for an
index that outgrows one machine, with the same collections, vectors, payloads and queries as the
embedded Qdrant Edge (``storage/edge.py``). A server that is down or refuses us fails soft: one
warning line, and research goes on with the index off (``vectors.py``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from research_mcp.storage.vector_engine import EngineUnavailable, IndexedHit, Point, WriteStamp, one_line

if TYPE_CHECKING:
    import numpy as np
    from qdrant_client import QdrantClient, models

__all__ = ["ServerEngine", "connect_server", "one_line", "warn_unavailable"]

logger = logging.getLogger("research_mcp.storage.vectors")

#: Seconds a Qdrant server gets to answer before it counts as down.
SERVER_TIMEOUT = 5


def connect_server(url: str, api_key: str | None) -> ServerEngine | None:
    """The server at ``url`` if it answers; None (with one warning) if it does not."""
    from qdrant_client import QdrantClient
    from qdrant_client.http.exceptions import ApiException

    # check_compatibility would warn from a background thread; the probe below is our check.
    client = QdrantClient(url=url, api_key=api_key, timeout=SERVER_TIMEOUT, check_compatibility=False)
    try:
        client.get_collections()
    except ApiException as err:
        client.close()
        warn_unavailable(f"the Qdrant server at {url!r} could not be used ({one_line(err)})")
        return None
    return ServerEngine(client)


class ServerEngine:
    """The :class:`~research_mcp.storage.vector_engine.VectorEngine` of a Qdrant server."""

    shared = True  # other installations may keep collections beside ours

    def __init__(self, client: QdrantClient) -> None:
        self._client = client

    def collections(self) -> list[str]:
        return self._call(lambda: [c.name for c in self._client.get_collections().collections])

    def dimension(self, name: str) -> int | None:
        def dimension() -> int | None:
            if not self._client.collection_exists(name):
                return None
            vectors = self._client.get_collection(name).config.params.vectors
            return vectors.size if vectors is not None and hasattr(vectors, "size") else None

        return self._call(dimension)

    def create(
        self, name: str, dim: int, metadata: dict[str, Any], *, half: bool = False, rebuildable: bool = False
    ) -> None:
        from qdrant_client import models

        datatype = models.Datatype.FLOAT16 if half else None
        self._call(
            lambda: self._client.create_collection(
                name,
                vectors_config=models.VectorParams(
                    size=dim, distance=models.Distance.COSINE, datatype=datatype
                ),
                metadata={**metadata, "dim": dim},
            )
        )

    def rebuildable(self, name: str) -> bool:
        return True  # the server's own write-ahead log is none of ours

    def drop(self, name: str) -> None:
        self._call(lambda: self._client.delete_collection(name))

    def upsert(self, name: str, points: Sequence[Point]) -> None:
        from qdrant_client import models

        structs = [models.PointStruct(id=i, vector=v.tolist(), payload=p) for i, v, p in points]
        self._call(lambda: self._client.upsert(name, points=structs, wait=True))

    def query(
        self,
        name: str,
        vector: np.ndarray,
        *,
        limit: int,
        min_score: float,
        where: dict[str, str | int] | None,
    ) -> list[IndexedHit]:
        response = self._call(
            lambda: self._client.query_points(
                name,
                query=vector.tolist(),
                query_filter=_filter(where),
                limit=limit,
                score_threshold=min_score,
                with_payload=True,
            )
        )
        return [
            IndexedHit(id=int(point.id), score=float(point.score), payload=dict(point.payload or {}))
            for point in response.points
        ]

    def delete(self, name: str, ids: Sequence[int]) -> None:
        from qdrant_client import models

        self._call(
            lambda: self._client.delete(
                name, points_selector=models.PointIdsList(points=list(ids)), wait=True
            )
        )

    def count(self, name: str) -> int:
        return int(self._call(lambda: self._client.count(name, exact=True).count))

    def id_page(self, name: str, after: int | None, limit: int) -> tuple[list[int], int | None]:
        points, following = self._call(
            lambda: self._client.scroll(
                name, limit=limit, offset=after, with_payload=False, with_vectors=False
            )
        )
        return [int(point.id) for point in points], None if following is None else int(following)  # type: ignore[arg-type]

    def held(self, name: str, ids: Sequence[int]) -> set[int]:
        points = self._call(
            lambda: self._client.retrieve(name, ids=list(ids), with_payload=False, with_vectors=False)
        )
        return {int(point.id) for point in points}

    def held_values(self, name: str, ids: Sequence[int], key: str) -> dict[int, Any]:
        points = self._call(
            lambda: self._client.retrieve(name, ids=list(ids), with_payload=[key], with_vectors=False)
        )
        return {int(point.id): (point.payload or {}).get(key) for point in points}

    def optimize(self, name: str) -> None:
        """A server builds its HNSW index in the background."""

    def write_stamp(self, name: str) -> WriteStamp | None:
        """Writes to a server are not stamped: its collections are always checked in full."""
        return None

    def checked_for(self, name: str) -> str | None:
        return None

    def mark_checked(self, name: str, checked_for: str, since: WriteStamp) -> bool:
        return False

    def release(self) -> None:
        """A server is shared by design: nothing to let go."""

    def let_go(self, name: str) -> None:
        """A server's collections live in the server: nothing to let go."""

    def close(self) -> None:
        self._client.close()

    def _call(self, call: Any) -> Any:
        from qdrant_client.http.exceptions import ApiException

        try:
            return call()
        except ApiException as err:
            raise EngineUnavailable(f"Qdrant stopped answering ({one_line(err)})") from err


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


def warn_unavailable(reason: str) -> None:
    logger.warning(
        "Knowledge index unavailable: %s. Research continues and facts are kept in SQLite; "
        "once the index can be used again (its disk has room, its server answers), the next start "
        "heals it, or run `research-mcp reindex`.",
        reason,
    )

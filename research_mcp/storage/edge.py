"""Qdrant Edge: the embedded vector engine, one shard per collection under the data folder.

Edge is Qdrant's own engine run in the process: segments on disk (vectors and payloads
memory-mapped, so the process keeps only the pages it touches), a write-ahead log, an HNSW index
built by ``optimize()``. Settings measured in BENCHMARKS.md (``bench/vector_engine.py``).

Layout of the folder (``<data>/vectors``)::

    lease                      the folder lock: the process holding it may open the shards
    holder                     the pid of that process, for the others' "waiting" line
    <collection>/              one Edge shard (edge_config.json, wal/, segments/)
    <collection>.json          what we know of it: embedder name and dimension, its write stamp,
                               and the chunks version it was last found in step with (`checked`)

One process at a time: a shard's WAL is locked by the process that opened it. The process that
uses the index takes ``lease`` (an OS lock, released by the kernel if the process dies), opens the
shards it needs, and :meth:`EdgeEngine.release` closes them and lets the lease go once it is idle
(the index calls it). Another process waits for the lease up to ``wait`` seconds, saying so in one
log line, and gets :class:`EngineBusy` if it is still held: the index then goes on without vectors
for a while. So ``serve`` and a CLI ``run`` on one data folder take turns; neither corrupts a shard.

A collection's check mark (:meth:`EdgeEngine.mark_checked`) remembers across processes that its
vectors were found in step with what the caller names (the corpus's chunks version), so a new
process need not compare them again. Every write (upsert, delete, optimize) first removes the mark
and advances the collection's write stamp (``made`` at creation, ``generation`` at each lease hold
that writes), durably, before touching the shard: a process killed mid-write leaves no mark. A mark is
written only after a flush, and only when nothing but this process wrote since the stamp the caller
took before its check.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from research_mcp.storage.disk import no_room
from research_mcp.storage.vector_engine import (
    EngineBusy,
    EngineUnavailable,
    IndexedHit,
    Point,
    WriteStamp,
    one_line,
)

if TYPE_CHECKING:
    import numpy as np
    import qdrant_edge

__all__ = ["EdgeEngine"]

logger = logging.getLogger("research_mcp.storage.vectors")

#: The one vector of every point, by name.
VECTOR = "dense"
#: Seconds between two tries for the lease while another process holds it.
POLL = 0.05
#: KB of vectors a segment holds before optimize() builds its HNSW graph (about 150,000 chunk vectors
#: of 256 floats). Below it a query scores every vector: exact, and at 85,000 chunks as fast as the
#: graph, which would take 20 times longer to build and twice the memory (``bench/vector_engine.py``).
INDEXING_THRESHOLD_KB = 150_000
#: Candidates an HNSW search keeps (Qdrant's ``hnsw_ef``), in segments that have the graph.
HNSW_EF = 128


class EdgeEngine:
    """Collections as Qdrant Edge shards in ``root``. ``temporary``: a folder of its own, removed on close."""

    shared = False

    def __init__(self, root: Path | None, *, wait: float = 10.0) -> None:
        self._temporary = root is None
        self.root = Path(tempfile.mkdtemp(prefix="research-mcp-vectors-")) if root is None else Path(root)
        self.wait = wait
        self._shards: dict[str, qdrant_edge.EdgeShard] = {}
        self._lease: Any = None  # the open lock file while this process holds the folder
        # Collections whose check mark this lease hold already removed (and whose stamp it advanced).
        self._writing: set[str] = set()
        # The write stamps this process set: a mark is refused when any stamp since the caller's is not.
        self._own_stamps: set[tuple[str, WriteStamp]] = set()
        # Collections whose flush failed at a close: what this process wrote may be lost, never marked.
        self._unflushed: set[str] = set()

    # -- the lease -------------------------------------------------------------------------------

    @property
    def holding(self) -> bool:
        return self._lease is not None

    def _acquire(self) -> None:
        if self._lease is not None:
            return
        import portalocker

        try:
            self.root.mkdir(parents=True, exist_ok=True)
            lease = (self.root / "lease").open("a+")
        except OSError as err:
            raise EngineUnavailable(
                f"the folder {str(self.root)!r} cannot be written ({one_line(err)})"
            ) from err
        deadline, announced = time.monotonic() + self.wait, False
        while True:
            try:
                portalocker.lock(lease, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
                break
            except portalocker.exceptions.LockException:
                if time.monotonic() >= deadline:
                    lease.close()
                    raise EngineBusy(f"the folder {str(self.root)!r} is in use by {self._holder()}") from None
                if not announced:
                    logger.warning(
                        "The knowledge index at %r is in use by %s; waiting up to %.0f s for it.",
                        str(self.root),
                        self._holder(),
                        self.wait,
                    )
                    announced = True
                time.sleep(POLL)
        self._lease = lease
        with contextlib.suppress(OSError):  # only ever read for the waiting line
            (self.root / "holder").write_text(str(os.getpid()))
        if announced:
            logger.warning("The knowledge index at %r is this process's again.", str(self.root))

    def _holder(self) -> str:
        try:
            pid = int((self.root / "holder").read_text().strip())
        except (OSError, ValueError):
            return "another process"
        if pid == os.getpid():
            return "another knowledge index of this process"
        return f"another research-mcp process (pid {pid})"

    def release(self) -> None:
        """Close every shard (flushing it) and let the folder go."""
        for name in list(self._shards):
            self._close_shard(name)
        if self._lease is not None:
            import portalocker

            lease, self._lease = self._lease, None
            self._writing.clear()  # another process may mark a collection before this one holds it again
            portalocker.unlock(lease)
            lease.close()

    def let_go(self, name: str) -> None:
        """Close one shard (flushing it): its mapped segments leave the process's memory; the next
        call on it loads it again (about 20 ms for 85 MB of chunk vectors)."""
        self._close_shard(name)

    def close(self) -> None:
        self.release()
        if self._temporary:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- collections -----------------------------------------------------------------------------

    def collections(self) -> list[str]:
        self._acquire()
        return sorted(path.stem for path in self.root.glob("*.json") if (self.root / path.stem).is_dir())

    def dimension(self, name: str) -> int | None:
        self._acquire()  # before looking: another process may be making the collection
        if not (self.root / name / "edge_config.json").is_file():
            return None
        dim = self._meta(name).get("dim")
        return dim if isinstance(dim, int) else None

    def _meta(self, name: str) -> dict[str, Any]:
        self._acquire()
        try:
            meta = json.loads((self.root / f"{name}.json").read_text())
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def create(
        self, name: str, dim: int, metadata: dict[str, Any], *, half: bool = False, rebuildable: bool = False
    ) -> None:
        import qdrant_edge as qe

        self._acquire()
        self._room()
        self.drop(name)  # whatever a crash left half made
        config = qe.EdgeConfig(
            vectors={
                VECTOR: qe.EdgeVectorParams(
                    size=dim,
                    distance=qe.Distance.Cosine,
                    on_disk=True,
                    datatype=qe.VectorStorageDatatype.Float16 if half else None,
                )
            },
            on_disk_payload=True,
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=INDEXING_THRESHOLD_KB),
            # A log keeps every write until two 32 MB segments fill: the size of the vectors
            # themselves for a corpus of 70,000 chunks, mapped into memory on load. What the caller
            # can re-add does without it, durable at each flush.
            wal_enabled=not rebuildable,
        )
        self._shards[name] = self._edge(lambda: qe.EdgeShard.create(str(self.root / name), config))
        meta = {**metadata, "dim": dim, "rebuildable": rebuildable, "made": uuid.uuid4().hex, "generation": 0}
        _write_atomically(self.root / f"{name}.json", json.dumps(meta))
        self._writing.discard(name)

    def rebuildable(self, name: str) -> bool:
        return self._meta(name).get("rebuildable") is True

    def drop(self, name: str) -> None:
        self._acquire()
        self._close_shard(name)
        self._writing.discard(name)
        (self.root / f"{name}.json").unlink(missing_ok=True)
        shutil.rmtree(self.root / name, ignore_errors=True)

    # -- points ----------------------------------------------------------------------------------

    def upsert(self, name: str, points: Sequence[Point]) -> None:
        import qdrant_edge as qe

        shard = self._shard(name)
        self._before_writing(name)
        batch = [
            qe.Point(point_id, {VECTOR: vector.tolist()}, payload) for point_id, vector, payload in points
        ]
        self._edge(lambda: shard.update(qe.UpdateOperation.upsert_points(batch)))

    def query(
        self,
        name: str,
        vector: np.ndarray,
        *,
        limit: int,
        min_score: float,
        where: dict[str, str | int] | None,
    ) -> list[IndexedHit]:
        import qdrant_edge as qe

        shard = self._shard(name)
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector.tolist(), using=VECTOR),
            filter=_filter(where),
            score_threshold=min_score,
            with_payload=True,
            params=qe.SearchParams(hnsw_ef=HNSW_EF),
        )
        points = self._edge(lambda: shard.query(request))
        return [IndexedHit(id=int(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in points]

    def delete(self, name: str, ids: Sequence[int]) -> None:
        import qdrant_edge as qe

        shard = self._shard(name)
        self._before_writing(name)
        self._edge(lambda: shard.update(qe.UpdateOperation.delete_points(list(ids))))

    def count(self, name: str) -> int:
        import qdrant_edge as qe

        shard = self._shard(name)
        return int(self._edge(lambda: shard.count(qe.CountRequest(exact=True))))

    def id_page(self, name: str, after: int | None, limit: int) -> tuple[list[int], int | None]:
        import qdrant_edge as qe

        shard = self._shard(name)
        request = qe.ScrollRequest(offset=after, limit=limit, with_payload=False, with_vector=False)
        records, following = self._edge(lambda: shard.scroll(request))
        return [int(record.id) for record in records], None if following is None else int(following)

    def held(self, name: str, ids: Sequence[int]) -> set[int]:
        shard = self._shard(name)
        records = self._edge(lambda: shard.retrieve(list(ids), with_payload=False, with_vector=False))
        return {int(record.id) for record in records}

    def held_values(self, name: str, ids: Sequence[int], key: str) -> dict[int, Any]:
        shard = self._shard(name)
        records = self._edge(lambda: shard.retrieve(list(ids), with_payload=True, with_vector=False))
        return {int(record.id): (record.payload or {}).get(key) for record in records}

    def optimize(self, name: str) -> None:
        shard = self._shard(name)
        self._before_writing(name)
        self._edge(shard.optimize)
        self._edge(shard.flush)  # a shard without a log holds, after a crash, what the last flush wrote

    # -- check marks -----------------------------------------------------------------------------

    def write_stamp(self, name: str) -> WriteStamp | None:
        """The collection's writes so far: it changes before any process writes to it again."""
        meta = self._meta(name)
        if not meta:
            return None
        return str(meta.get("made", "")), int(meta.get("generation", 0))

    def checked_for(self, name: str) -> str | None:
        """What the collection was last found in step with, when nothing wrote to it since."""
        meta = self._meta(name)
        mark = meta.get("checked")
        if not isinstance(mark, dict) or mark.get("generation") != meta.get("generation", 0):
            return None
        named = mark.get("for")
        return named if isinstance(named, str) else None

    def mark_checked(self, name: str, checked_for: str, since: WriteStamp) -> bool:
        """Remember that the collection is in step with ``checked_for``, unless another process (or a
        collection made anew) wrote to it after ``since``; whether it was remembered."""
        meta = self._meta(name)
        made, now = str(meta.get("made", "")), int(meta.get("generation", 0))
        if not meta or made != since[0] or now < since[1] or name in self._unflushed:
            return False
        if any(
            (name, (made, generation)) not in self._own_stamps for generation in range(since[1] + 1, now + 1)
        ):
            return False
        shard = self._shards.get(name)
        if shard is not None:  # a shard without a log keeps, after a kill, only what a flush wrote
            self._edge(shard.flush)
        self._write_meta(name, {**meta, "checked": {"for": checked_for, "generation": now}}, sync=True)
        self._writing.discard(name)  # the next write removes this mark again
        return True

    def _before_writing(self, name: str) -> None:
        """Remove the collection's check mark and advance its write stamp, once per lease hold, before
        the first write: a process killed during its writes leaves no mark behind."""
        if name in self._writing:
            return
        meta = self._meta(name)
        if meta:
            marked = "checked" in meta
            made, generation = str(meta.get("made", "")), int(meta.get("generation", 0)) + 1
            meta.pop("checked", None)
            self._write_meta(name, {**meta, "generation": generation}, sync=marked)
            self._own_stamps.add((name, (made, generation)))
        self._writing.add(name)

    def _write_meta(self, name: str, meta: dict[str, Any], *, sync: bool) -> None:
        try:
            _write_atomically(self.root / f"{name}.json", json.dumps(meta), sync=sync)
        except OSError as err:
            raise EngineUnavailable(
                f"the folder {str(self.root)!r} cannot be written ({one_line(err)})"
            ) from err

    # -- shards ----------------------------------------------------------------------------------

    def _shard(self, name: str) -> qdrant_edge.EdgeShard:
        self._acquire()
        self._room()
        shard = self._shards.get(name)
        if shard is None:
            import qdrant_edge as qe

            shard = self._edge(lambda: qe.EdgeShard.load(str(self.root / name)))
            self._shards[name] = shard
        return shard

    def _room(self) -> None:
        """Refuse to touch a shard on a disk without room: Edge writes its segments and log through
        memory maps, and a page the kernel cannot back kills the process with SIGBUS (no exception
        to catch). The index goes on without the engine (`EngineUnavailable`), saying why."""
        reason = no_room(self.root)
        if reason is not None:
            raise EngineUnavailable(f"{reason}, so its shards are not opened; free some space")

    def _close_shard(self, name: str) -> None:
        shard = self._shards.pop(name, None)
        if shard is not None:
            try:
                shard.flush()
                shard.close()
            except (
                Exception
            ) as err:  # the binding raises bare Exception; a close that fails loses nothing the WAL holds
                self._unflushed.add(name)
                logger.warning("closing the knowledge index's %s shard failed: %s", name, one_line(err))

    @staticmethod
    def _edge(call: Any) -> Any:
        """Call into Edge, whose errors come as bare ``Exception`` with the engine's message."""
        try:
            return call()
        except Exception as err:
            raise EngineUnavailable(f"Qdrant Edge failed ({one_line(err)})") from err


def _filter(where: dict[str, str | int] | None) -> qdrant_edge.Filter | None:
    if not where:
        return None
    import qdrant_edge as qe

    return qe.Filter(
        must=[qe.FieldCondition(key=key, match=qe.MatchValue(value)) for key, value in where.items()]
    )


def _write_atomically(path: Path, text: str, *, sync: bool = False) -> None:
    """Replace ``path`` by ``text`` whole; ``sync``: on disk before this returns (a check mark's removal
    must be, before the writes it guards)."""
    partial = path.with_suffix(".partial")
    with partial.open("w") as file:
        file.write(text)
        if sync:
            file.flush()
            os.fsync(file.fileno())
    os.replace(partial, path)
    if sync:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)

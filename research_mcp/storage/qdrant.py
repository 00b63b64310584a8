"""Opening Qdrant for the knowledge index: the embedded one in a local folder (whose lock another
process may hold) or a server (which may be down or refuse us). Each way fails soft: one warning
line, and None, so research goes on with the index off (``vectors.py``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = [
    "commit_without_waiting",
    "connect_local",
    "connect_server",
    "folder_in_use",
    "is_server",
    "one_line",
    "warn_unavailable",
]

logger = logging.getLogger("research_mcp.storage.vectors")

#: Seconds a Qdrant server gets to answer before it counts as down.
SERVER_TIMEOUT = 5


def is_server(client: QdrantClient) -> bool:
    from qdrant_client.local.qdrant_local import QdrantLocal

    return not isinstance(client._client, QdrantLocal)


def connect_local(path: Path) -> QdrantClient | None:
    from qdrant_client import QdrantClient

    busy = f"the local Qdrant folder {str(path)!r} is in use by another process"
    try:
        # Probe first: a QdrantClient that loses the lock race leaks its open lock file.
        if folder_in_use(path):
            warn_unavailable(busy)
            return None
        # Our own lock serialises every call, so the client may move between worker threads.
        return QdrantClient(path=str(path), force_disable_check_same_thread=True)
    except OSError as err:  # a read-only or full disk, a folder we may not write
        warn_unavailable(f"the local Qdrant folder {str(path)!r} cannot be written ({one_line(err)})")
        return None
    except RuntimeError as err:
        if "already accessed by another instance" not in str(err):
            raise
        warn_unavailable(busy)
        return None


def connect_server(url: str, api_key: str | None) -> QdrantClient | None:
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
    return client


def folder_in_use(path: Path) -> bool:
    """Whether another client holds the local folder's lock (taken as qdrant-client takes it)."""
    import portalocker  # qdrant-client's own dependency for this lock

    lock_path = path / ".lock"
    if not lock_path.is_file():
        return False
    with lock_path.open("r+") as lock_file:
        try:
            portalocker.lock(lock_file, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            return True
        portalocker.unlock(lock_file)
    return False


def one_line(err: Exception) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__


def warn_unavailable(reason: str) -> None:
    logger.warning(
        "Knowledge index unavailable: %s. Research continues and facts are kept in SQLite; "
        "run `research-mcp reindex` once Qdrant is reachable again.",
        reason,
    )


def commit_without_waiting(client: QdrantClient, name: str) -> None:
    """Let the embedded Qdrant's SQLite file for collection ``name`` commit without waiting for the disk.

    qdrant-client's local mode commits every point in its own transaction; with SQLite's default
    journal each commit waits for the disk (about 30 ms here), so indexing a corpus crawled at ~25
    chunks/s whatever the embedder. In WAL mode with synchronous=NORMAL a commit is durable against
    a crash of the process, and the file stays consistent if the machine loses power (the last
    commits may be lost then; this index is compared with the store and healed). Reaches into
    qdrant-client's local storage, so it is skipped, with a log line, where a version lays it out
    otherwise; a Qdrant server is left alone.
    """
    if is_server(client):
        return
    try:
        storage = client._client.collections[name].storage  # type: ignore[attr-defined]
        if storage is None:  # in memory: nothing to commit
            return
        connection = storage.storage
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
    except (AttributeError, KeyError, TypeError) as err:
        logger.info("the embedded Qdrant's storage is kept as it is (%s)", one_line(err))

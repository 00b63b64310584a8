"""The SQLite layer under the store: connections (WAL, busy timeout, a read-only fallback), the
owner of a run as a process, and SQLite failures mapped to errors a user can act on.

`store_error` is the one place that knows SQLite's result codes: disk full, read-only, locked past
the busy timeout, unable to open, I/O or corruption each become a `StoreError` subclass whose message
names the data folder and what to do; anything else is a bug and stays an `sqlite3.Error`.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path

from research_mcp.core.errors import StoreBusy, StoreError, StoreFull, StoreIOError, StoreReadOnly
from research_mcp.storage.disk import no_room, writable

__all__ = [
    "BUSY_TIMEOUT_MS",
    "connect",
    "connect_read_only",
    "map_os_error",
    "owner_alive",
    "process_owner",
    "store_error",
]

BUSY_TIMEOUT_MS = 10_000

# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xFF).
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 10, 11, 13, 14, 26


def process_owner() -> str:
    """This process, as a run's owner: host and pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str) -> bool:
    """Whether the process named by `owner` still runs (an owner on another host is taken as alive)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def store_error(error: sqlite3.Error, path: Path | str) -> StoreError | None:
    """The user-facing error for an SQLite failure of the store at `path`; None for a plain bug."""
    folder = str(Path(path).parent) if str(path) != ":memory:" else ":memory:"
    code = getattr(error, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(error).lower()
    if primary == _FULL or "database or disk is full" in text:
        return StoreFull(
            f"The disk is full at the data folder {folder}: research-mcp could not save its work "
            "(the write was rolled back; earlier results are intact). Free some disk space, or set "
            "RESEARCH_MCP_HOME to a folder on a disk with room, then try again.",
            folder,
        )
    if primary in (_READONLY, _PERM) or "readonly" in text or "read-only" in text:
        return StoreReadOnly(
            f"The data folder {folder} is read-only, so research-mcp cannot save research there (earlier "
            "results can still be read). Make the folder and research.db writable (check permissions, and "
            "that its disk is not mounted read-only), or set RESEARCH_MCP_HOME to a writable folder.",
            folder,
        )
    if primary in (_BUSY, _LOCKED) or "database is locked" in text:
        return StoreBusy(
            f"The database in {folder} stayed locked by another process for more than "
            f"{BUSY_TIMEOUT_MS // 1000} s. Try again; if it persists, stop the other programs using "
            "that folder (another research-mcp with the same RESEARCH_MCP_HOME, or a tool holding research.db open).",
            folder,
        )
    if (primary == _CANTOPEN or "unable to open database" in text) and not writable(Path(folder)):
        return store_error(sqlite3.OperationalError("attempt to write a readonly database"), path)
    if primary == _CANTOPEN or "unable to open database" in text:
        return StoreReadOnly(
            f"research-mcp cannot open or create its database in the data folder {folder}. Check that the "
            "folder exists and is writable, or set RESEARCH_MCP_HOME to a writable folder.",
            folder,
        )
    if (primary == _IOERR or "disk i/o error" in text) and folder != ":memory:" and no_room(Path(folder)):
        # SQLite could not grow a file (its write-ahead log, its shared-memory index): the disk is
        # full, and nothing is damaged.
        return store_error(sqlite3.OperationalError("database or disk is full"), path)
    if primary in (_IOERR, _CORRUPT, _NOTADB) or "disk i/o error" in text or "malformed" in text:
        return StoreIOError(
            f"Reading or writing the database in {folder} failed ({error}): the disk may be failing or "
            "research.db is damaged. Check the disk; run `sqlite3 research.db 'PRAGMA integrity_check'` in "
            "that folder, or move research.db away (keeping a copy) and start again.",
            folder,
        )
    return None


def connect(path: str) -> sqlite3.Connection:
    """A read-write connection: WAL, busy timeout, foreign keys; fails at once if it cannot write."""
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # A write in a read-only folder fails here, at start, rather than in the middle of a run.
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def connect_read_only(path: Path) -> sqlite3.Connection:
    """The database of a folder that cannot be written, opened for reading (immutable if need be)."""
    for options in ("mode=ro", "mode=ro&immutable=1"):
        conn = sqlite3.connect(
            f"file:{path}?{options}", uri=True, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error:
            conn.close()
    mapped = store_error(sqlite3.OperationalError("attempt to write a readonly database"), path)
    assert mapped is not None
    raise mapped


def map_os_error(error: OSError, path: Path | str) -> StoreError:
    """A file-system failure around the store (making its folder, opening its file) as a StoreError."""
    readonly = isinstance(error, PermissionError) or error.errno in (30, 13)  # EROFS, EACCES
    fake = sqlite3.OperationalError("readonly" if readonly else "disk I/O error")
    if error.errno == 28:  # ENOSPC
        fake = sqlite3.OperationalError("database or disk is full")
    mapped = store_error(fake, path)
    assert mapped is not None
    return mapped

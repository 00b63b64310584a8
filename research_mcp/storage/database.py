"""The store's database: one connection, one writer at a time, SQLite failures as StoreErrors.

One connection per process (`storage/sqlite.py`), WAL mode, a busy timeout, and every write in a
`BEGIN IMMEDIATE` transaction so that a second process on the same file waits instead of failing. A
write returns only after its COMMIT; a failed write (disk full, read-only folder, I/O error, lock
held past the busy timeout) is rolled back whole and raised as a `StoreError` naming the data folder
and what to do. sqlite-utils' table methods may run inside `write()`: their transactions become
savepoints. The table modules (`run_tables.py`, ...) hold their tables' SQL as methods of this class.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from research_mcp.core.errors import StoreError, StoreFull, StoreReadOnly
from research_mcp.core.ids import new_id
from research_mcp.storage.migrations import apply_migrations
from research_mcp.storage.sqlite import connect, connect_read_only, map_os_error, store_error

__all__ = ["StoreDatabase", "as_json", "marks", "new_id", "now"]


def now() -> str:
    return datetime.now(UTC).isoformat()


def as_json(value: Any) -> str | None:
    """A JSON column's text: compact, non-ASCII kept; None stays NULL."""
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def marks(values: Sequence[Any]) -> str:
    """`?, ?, ?`: one SQL parameter per value, for `IN (...)`."""
    return ", ".join("?" for _ in values)


class StoreDatabase:
    """The connection under the store, its one-writer transactions and its error mapping."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.read_only = False
        # Why the store was opened for reading only (the folder cannot be written, its disk is full):
        # what every write then raises.
        self.read_only_because: StoreError | None = None
        self._lock = threading.RLock()
        try:
            if str(path) != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            conn = connect(str(path))
        except (OSError, sqlite3.Error) as error:
            mapped = self._mapped(error)
            # A folder that cannot be written, or whose disk is full, is still read.
            if not isinstance(mapped, StoreReadOnly | StoreFull) or not Path(path).exists():
                raise mapped from error
            self.read_only, self.read_only_because = True, mapped
            conn = connect_read_only(Path(path))
        self.db = Database(conn)
        with self._lock, self._errors():
            apply_migrations(self.db)

    def _mapped(self, error: BaseException) -> StoreError:
        if isinstance(error, sqlite3.Error):
            mapped = store_error(error, self.path)
            if mapped is not None:
                return mapped
        if isinstance(error, OSError):
            return map_os_error(error, self.path)
        raise error

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite failures that a user can act on become StoreErrors; anything else is a bug, raised as is."""
        try:
            yield
        except sqlite3.Error as error:
            mapped = store_error(error, self.path)
            if mapped is None:
                raise
            raise mapped from error

    def close(self) -> None:
        self.db.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: BEGIN IMMEDIATE ... COMMIT, rolled back whole on any error (COMMIT's too)."""
        if self.read_only:
            why = self.read_only_because
            if why is not None:
                raise type(why)(str(why), why.folder)
            raise self._mapped(sqlite3.OperationalError("attempt to write a readonly database"))
        with self._lock, self._errors():
            conn = self.db.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        with self._lock, self._errors():
            cursor = self.db.conn.execute(sql, params)
            row = cursor.fetchone()
            if row is None:
                return None
            return dict(zip([c[0] for c in cursor.description], row, strict=True))

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock, self._errors():
            cursor = self.db.conn.execute(sql, params)
            names = [c[0] for c in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

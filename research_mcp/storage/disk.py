"""What the disk under the data folder has room for: checked before anything maps a file of it.

A file mapped into memory (Qdrant Edge's segments and write-ahead log, SQLite's shared memory) is
written through the mapping; on a disk with no room left the kernel cannot back the page and the
process dies with SIGBUS, which no exception handler sees. So the engines look first, and a full or
read-only disk leaves the store readable and the knowledge index closed, each saying why.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ROOM_NEEDED", "free_bytes", "no_room", "writable"]

#: Free bytes below which the disk counts as full: the knowledge index's engine maps its segments
#: and log, and SQLite its write-ahead log's index, in pieces of a few megabytes.
ROOM_NEEDED = 16 * 1024 * 1024


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged process may still write on the disk holding `path` (or its nearest
    existing parent); None when that cannot be told."""
    for candidate in (path, *path.parents):
        try:
            stat = os.statvfs(candidate)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        return stat.f_bavail * stat.f_frsize
    return None


def no_room(path: Path) -> str | None:
    """Why the disk holding `path` is too full to map files on it (None: it has room)."""
    free = free_bytes(path)
    if free is None or free >= ROOM_NEEDED:
        return None
    return f"the disk holding {str(path)!r} is full ({free // 1024:,} KB free)"


def writable(path: Path) -> bool:
    """Whether files can be made in the folder `path` (or its nearest existing parent)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return os.access(candidate, os.W_OK) and not _mounted_read_only(candidate)
    return False


def _mounted_read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False

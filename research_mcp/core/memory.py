"""The C heap of a long-lived server: few arenas, and free pages given back when work ends.

glibc gives each thread that allocates its own heap arena (up to 8 per core), and keeps a freed
arena's pages: a server whose runs embed, parse and search on worker threads grew by tens of MB a
run and never came back (issue 49.3: 126 MB at start, 848 MB idle after 16 clients). `serve` caps
the arenas (as MALLOC_ARENA_MAX=2 would; an explicit MALLOC_ARENA_MAX wins), and the run manager
gives free pages back once the last run has ended. Where there is no glibc, nothing happens.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["give_back_freed_memory", "limit_heap_arenas"]

M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h
SERVER_ARENAS = 2


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def limit_heap_arenas(arenas: int = SERVER_ARENAS) -> bool:
    """Cap glibc's heap arenas for threads started from now on; False where it cannot (or was set)."""
    libc = _libc()
    if libc is None or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except AttributeError:
        return False


def give_back_freed_memory() -> None:
    """Return the C heap's free pages to the system (glibc keeps them otherwise)."""
    libc = _libc()
    try:
        if libc is not None:
            libc.malloc_trim(0)
    except AttributeError:
        pass

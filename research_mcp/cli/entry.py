"""The `research-mcp` console script: `serve` on stdio starts answering before the rest is imported.

Everything else goes straight to the click command line (:mod:`research_mcp.cli.main`). A plain
`research-mcp [-v] serve` first puts :mod:`research_mcp.server.handshake_replay`'s front on stdio
(standard library only), so a host that connected before is answered while the server still loads.
`RESEARCH_MCP_HANDSHAKE_REPLAY=0` turns the front off. Started at a terminal (`make run`: stdin is
a TTY, so a person, not a host, is there), `serve` first says on stderr what it waits for and how to
connect a host; stdout stays the protocol channel.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from research_mcp.cli.connect import terminal_notice

__all__ = ["main"]


#: What a command loads before its work starts, beyond the command line itself (`run` drives the
#: server in memory, through an MCP client).
_STARTUP_MODULES = {
    "run": ("research_mcp.cli.driver", "research_mcp.server.app"),
    "serve": ("research_mcp.server.app",),
}


def _command_line() -> None:
    command_line = _load_command_line(sys.argv[1:])
    command_line()


def _load_command_line(args: list[str]) -> Callable[[], None]:
    """The click command line, and the modules `args`' command loads first, loaded with the cyclic
    garbage collector paused, then frozen: they live as long as the process, and each collection
    the loading set off walked all that had loaded (0.13 s of a no-key run's CPU); frozen, later
    collections pass them by."""
    command = next((arg for arg in args if not arg.startswith("-")), None)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        from research_mcp.cli.main import main as command_line

        for name in _STARTUP_MODULES.get(command or "", ()):
            importlib.import_module(name)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    return command_line


def _data_folder() -> Path:
    """RESEARCH_MCP_HOME as Settings reads it, without importing the settings (pydantic)."""
    if "RESEARCH_MCP_HOME" in os.environ:
        return Path(os.environ["RESEARCH_MCP_HOME"])
    import platformdirs

    return Path(platformdirs.user_data_dir("research-mcp", appauthor=False))


#: glibc's mallopt parameter for the number of heaps threads allocate from (M_ARENA_MAX).
_M_ARENA_MAX = -8


def _one_heap() -> None:
    """Have every thread allocate from one heap, as MALLOC_ARENA_MAX=1 would (unless it is set).

    glibc gives each thread that allocates its own heap (up to 8 per core) and keeps what a thread
    freed in that heap: the worker threads of a run (extractors embedding and scoring at once) left
    a no-key run over git's documentation at 490 MB resident, 390 MB with one heap
    (bench.real_corpus, BENCHMARKS.md). Nothing happens where there is no glibc."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass


def _sleeping_blas_threads() -> None:
    """Have numpy's OpenBLAS threads wait for work asleep, as onnxruntime's are told to
    (``embeddings.py``), unless OPENBLAS_THREAD_TIMEOUT is set: by default each spins for 2**28
    loops after numpy loads and after each product it splits between threads, 60 to 100 ms of a
    core each time. The threads and how a product is split stay as they were."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # 2**4 loops, the fewest OpenBLAS takes


def _no_collection_at_exit() -> None:
    """Skip the interpreter's last garbage collections: at exit they walk every object the process
    made (the modules' classes and schemas, a run's data), to free memory the system takes back
    anyway. They were 0.3 s of a no-key run's 5 s of CPU over git's documentation. Registered
    first, the freeze runs after every other exit handler; what those close, they close."""
    atexit.register(gc.freeze)


def main() -> None:
    _one_heap()
    _sleeping_blas_threads()
    _no_collection_at_exit()
    plain_serve = sys.argv[1:] in (["serve"], ["-v", "serve"], ["--verbose", "serve"])
    try:
        _run(plain_serve)
    except KeyboardInterrupt:  # Ctrl-C while loading, before a command can catch it: no traceback
        print("interrupted", file=sys.stderr, flush=True)
        sys.exit(130)


def _run(plain_serve: bool) -> None:
    if plain_serve and sys.stdin.isatty():  # a person at a terminal, not a host
        print(terminal_notice(), file=sys.stderr, flush=True)
    if not plain_serve or os.environ.get("RESEARCH_MCP_HANDSHAKE_REPLAY", "1") == "0":
        _command_line()
        return
    from research_mcp.server.handshake_replay import serve_stdio

    serve_stdio(_data_folder(), _command_line)

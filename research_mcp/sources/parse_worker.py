"""The worker process of ``parsing.DocumentParser``: ``python -m research_mcp.sources.parse_worker MB``.

Says ``ready`` on stdout once the parsers are imported, then reads requests from stdin, each a JSON
line ``{"name", "content_type", "size", "seconds"}`` (or, for a corpus file, ``"file_kind"`` in
place of ``"content_type"``: its suffix, read by ``readers.read_file``) followed by ``size`` bytes of document, and
answers each with one JSON line on stdout: ``{"status": "ok", "kind", "title", "text"}`` or
``{"status": "error", "error": why}``. Exits when stdin closes, and (by SIGALRM) when a document
runs ``ALARM_GRACE`` seconds past the request's ``seconds``, which only happens when the server that
should have killed it is gone. ``MB`` > 0 caps the address space at what the worker maps after its
imports plus ``MB`` megabytes.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import IO, Any

from research_mcp.core.errors import SourceError
from research_mcp.sources.readers import read_file
from research_mcp.sources.text import extract_text

#: Seconds past its time limit after which a worker still parsing ends itself.
ALARM_GRACE = 5.0


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides what a Ctrl-C stops
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything a parser prints goes to the log, never into the answers
    # pypdf logs a warning or an error for every malformed object; the answer carries what matters.
    logging.basicConfig(level=logging.CRITICAL, stream=sys.stderr)
    memory_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    if memory_mb > 0:
        limit_memory(memory_mb)
    answers.write(b"ready\n")
    answers.flush()
    while True:
        header = requests.readline()
        if not header:
            return
        request = json.loads(header)
        data = _read_exactly(requests, int(request["size"]))
        # SIGALRM ends this process if the server, which kills it at the limit, is gone meanwhile.
        _alarm(float(request.get("seconds") or 0) + ALARM_GRACE)
        file_kind = request.get("file_kind")
        if isinstance(file_kind, str):
            answer = read(data, file_kind, str(request.get("name")))
        else:
            answer = parse(data, request.get("content_type"), str(request.get("name")))
        _alarm(0)
        del data
        answers.write(json.dumps(answer).encode() + b"\n")
        answers.flush()


def _alarm(seconds: float) -> None:
    if hasattr(signal, "setitimer"):  # not on Windows: there the server's kill is the only bound
        signal.setitimer(signal.ITIMER_REAL, seconds)


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise SystemExit(0)  # the server went away mid-request
    return data


def parse(data: bytes, content_type: str | None, name: str) -> dict[str, Any]:
    """The answer for one fetched document: its text, or why it cannot be read."""
    return _answer(lambda: extract_text(data, content_type, name), name)


def read(data: bytes, file_kind: str, name: str) -> dict[str, Any]:
    """The answer for one corpus file: its structured text and its own title ("" if none)."""
    return _answer(lambda: ("text/plain", *read_file(data, file_kind, name)), name)


def _answer(reading: Callable[[], tuple[str, str, str]], name: str) -> dict[str, Any]:
    try:
        kind, title, text = reading()
        return {"status": "ok", "kind": kind, "title": title, "text": text}
    except SourceError as err:
        return {"status": "error", "error": str(err)}
    except MemoryError:
        why = "it needs more memory than a document may use: built to exhaust memory, or far too large"
    except RecursionError:
        why = "it is nested too deeply"
    # Third-party parsers given hostile bytes can raise any exception type (pypdf alone raises a
    # dozen kinds); each means "this document cannot be read", and is reported with its reason.
    except Exception as exc:
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    return {"status": "error", "error": f"{name!r} could not be parsed ({why}). Try another copy."}


def limit_memory(memory_mb: int) -> None:
    """Cap the address space at what this process maps now plus ``memory_mb``."""
    try:
        import resource

        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError):
        return  # no RLIMIT_AS here, or no way to know the baseline: the time limit still holds
    limit = mapped + memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


if __name__ == "__main__":
    main()

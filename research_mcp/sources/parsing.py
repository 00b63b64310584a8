"""Document parsing (HTML and PDF to text) in worker processes, under a time and a memory limit.

pypdf, trafilatura and lxml run on bytes chosen by whoever wrote the page or the file. Such a
document can make them raise any exception type (pypdf alone raises NotImplementedError,
AttributeError, OverflowError, RecursionError ... on malformed files), spin for minutes (one 10 MB
content stream, 340,000 nested ``<span>``), or allocate gigabytes. Parsed in the server's own
process, one such document would hold the GIL from every other tool call and could take the
process down. So each document is parsed in a worker process (``parse_worker.py``):

- a wall-clock limit: the caller waits ``timeout`` seconds for the answer, then kills the worker
  (SIGKILL) and raises SourceError; the worker also arms an alarm a little later than that for
  itself, so it cannot outlive a server killed mid-document by more than the limit;
- a memory limit: the worker caps its own address space (``RLIMIT_AS``) at what it maps idle plus
  ``memory_mb``, so an allocation past it fails there (a MemoryError, or the worker dies);
- every failure (any exception a parser raises, the memory limit, a crash, garbage on the pipe)
  arrives as a SourceError naming the document and the reason, never as a bare exception.

Workers are reused: up to ``max_workers`` live at once and idle ones wait for the next document,
so the common case costs a pipe round trip, not a process start (about half a second, the parsers'
imports). A worker idle for ``idle_seconds`` (a minute) is stopped, so a server that indexed a
folder of HTML or PDF and now waits for its host does not keep the parsers' memory. The pipe carries the document's bytes one way and one JSON line back, never pickles, so
a worker subverted by a document cannot run code in the server. A worker's stdout is that pipe,
its stderr the server's stderr; it ignores SIGINT (the server decides what a Ctrl-C stops). The
memory limit needs ``RLIMIT_AS`` and ``/proc`` (Linux); elsewhere (macOS ignores the limit, Windows
has none) only the time limit holds.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, cast

from research_mcp.core.errors import SourceError
from research_mcp.sources.text import DocumentType

__all__ = ["DEFAULT_MEMORY_MB", "DocumentParser"]

DEFAULT_MEMORY_MB = 256
_STOP_GRACE = 2.0
#: Seconds a new worker may take to import the parsers and say it is ready (half a second when idle).
_START_TIMEOUT = 60.0
_READY = b"ready\n"
#: Seconds an idle worker is kept for the next document before it is stopped.
IDLE_WORKER_SECONDS = 60.0


class DocumentParser:
    """Extracts text from documents in reusable worker processes, each bounded in time and memory.

    Thread-safe: corpus indexing and page fetches (in worker threads) share one parser; at most
    ``max_workers`` documents are parsed at once and the others wait their turn (a wait that is not
    counted in a document's time limit).
    """

    def __init__(
        self,
        *,
        timeout: float,
        memory_mb: int | None = DEFAULT_MEMORY_MB,
        max_workers: int = 2,
        idle_seconds: float = IDLE_WORKER_SECONDS,
    ) -> None:
        if timeout <= 0 or max_workers < 1 or idle_seconds <= 0:
            raise ValueError("timeout and idle_seconds must be positive and max_workers at least 1")
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.idle_seconds = idle_seconds
        self._slots = threading.BoundedSemaphore(max_workers)
        self._idle: list[tuple[_Worker, float]] = []  # each with when it became idle, newest last
        self._reaper: threading.Timer | None = None
        self._lock = threading.Lock()
        self._closed = False

    def extract(
        self, data: bytes, content_type_header: str | None, name: str, *, timeout: float | None = None
    ) -> tuple[DocumentType, str, str]:
        """``extract_text(data, content_type_header, name)`` in a worker; SourceError on any failure.

        ``timeout`` (seconds, default the parser's) bounds the parsing; starting a worker, when none
        is idle, is not counted (it is the server's cost, not the document's) but has its own bound.
        """
        answer = self._ask(data, {"content_type": content_type_header}, name, timeout)
        if answer.get("status") == "ok":
            kind, title, text = answer["kind"], answer["title"], answer["text"]
            if kind in ("text/html", "application/pdf", "text/plain") and isinstance(title, str):
                return cast(DocumentType, kind), title, str(text)
        raise SourceError(str(answer.get("error") or f"{name!r} could not be parsed; try another copy."))

    def read_file(
        self, data: bytes, kind: str, name: str, *, timeout: float | None = None
    ) -> tuple[str, str]:
        """``readers.read_file(data, kind, name)`` in a worker: a corpus file's ``(title, text)``, the
        title "" when it names none; SourceError on any failure, a stall or a memory blow-up included."""
        answer = self._ask(data, {"file_kind": kind}, name, timeout)
        if answer.get("status") == "ok" and isinstance(answer.get("title"), str):
            return answer["title"], str(answer["text"])
        raise SourceError(str(answer.get("error") or f"{name!r} could not be read; try another copy."))

    def _ask(
        self, data: bytes, what: dict[str, str | None], name: str, timeout: float | None
    ) -> dict[str, Any]:
        """A worker's answer for one document, within ``timeout`` (default the parser's) seconds."""
        limit = self.timeout if timeout is None else timeout
        with self._slots:
            worker = self._take()
            try:
                worker.wait_ready()
                answer = worker.run(data, what, name, time.monotonic() + limit)
            except _WorkerLost as lost:
                worker.kill()
                raise SourceError(self._lost_message(name, lost, limit)) from None
            except BaseException:  # interrupted while waiting: the worker's state is unknown
                worker.kill()
                raise
            self._give_back(worker)
        return answer

    def close(self) -> None:
        """Stop every idle worker (one in use stops when its document is done)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            if self._reaper is not None:
                self._reaper.cancel()
                self._reaper = None
        for worker, _ in idle:
            worker.stop()

    def __enter__(self) -> DocumentParser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise SourceError("The document parser is shut down: the server is stopping.")
            while self._idle:
                worker, _ = self._idle.pop()  # the most recently used: the others may age out
                if worker.alive():
                    return worker
                worker.kill()
        return _Worker(self.memory_mb)

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append((worker, time.monotonic()))
                self._schedule_reaping(self.idle_seconds)
                return
        worker.stop()

    def _schedule_reaping(self, delay: float) -> None:
        """Look for workers idle too long in ``delay`` seconds, unless a look is already due; lock held."""
        if self._reaper is None:
            self._reaper = threading.Timer(delay, self._reap)
            self._reaper.daemon = True
            self._reaper.start()

    def _reap(self) -> None:
        """Stop the workers idle for ``idle_seconds``; look again when the next one would be."""
        with self._lock:
            self._reaper = None
            now = time.monotonic()
            stale = [worker for worker, since in self._idle if now - since >= self.idle_seconds]
            self._idle = [(worker, since) for worker, since in self._idle if now - since < self.idle_seconds]
            if self._idle and not self._closed:
                self._schedule_reaping(min(since for _, since in self._idle) + self.idle_seconds - now)
        for worker in stale:
            worker.stop()

    def _lost_message(self, name: str, lost: _WorkerLost, limit: float) -> str:
        if lost.starting:
            return f"{name!r} was not parsed: the parser process did not start ({lost.reason}). Try again."
        if lost.timed_out:
            return (
                f"{name!r} took longer than {round(limit, 1):g} s to parse and was stopped (a document built to "
                f"stall the parser, or far too large). Try another source."
            )
        memory = f" or needed more than its {self.memory_mb} MB of memory" if self.memory_mb else ""
        return (
            f"{name!r} could not be parsed: the parser crashed{memory} ({lost.reason}). "
            f"The file may be damaged or built to exhaust memory; try another copy."
        )


class _WorkerLost(Exception):
    def __init__(self, reason: str, *, timed_out: bool, starting: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out
        self.starting = starting


class _Worker:
    """One worker process (``python -m research_mcp.sources.parse_worker``) and its pipes."""

    def __init__(self, memory_mb: int | None) -> None:
        # The worker imports this package from where the server found it, however it was started.
        package_home = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_home, env.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "research_mcp.sources.parse_worker", str(memory_mb or 0)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # the server's stderr: the worker's own warnings go to the log
            close_fds=True,
            env=env,
        )
        self._ready = False
        # A thread reads the answers, so waiting for one with a time limit works on every platform
        # (select() on pipes does not on Windows).
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(
            target=self._read_answers,
            args=(self._process.stdout, self._lines),
            name=f"parse-worker-{self._process.pid}",
            daemon=True,
        ).start()

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    def wait_ready(self) -> None:
        """Wait (within its own bound) for a new worker to have imported the parsers."""
        if self._ready:
            return
        try:
            line = self._read_line(time.monotonic() + _START_TIMEOUT)
        except _WorkerLost as lost:
            raise _WorkerLost(lost.reason, timed_out=False, starting=True) from None
        if line != _READY:
            raise _WorkerLost("it did not say it was ready", timed_out=False, starting=True)
        self._ready = True

    def run(self, data: bytes, what: dict[str, str | None], name: str, deadline: float) -> dict[str, Any]:
        request = {
            "name": name,
            **what,
            "size": len(data),
            "seconds": max(0.0, deadline - time.monotonic()),
        }
        stdin = cast(IO[bytes], self._process.stdin)
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._lost() from None
        line = self._read_line(deadline)
        try:
            answer = json.loads(line)
        except ValueError:
            raise _WorkerLost("it answered something that is not JSON", timed_out=False) from None
        if not isinstance(answer, dict):
            raise _WorkerLost("it answered something that is not an object", timed_out=False)
        return answer

    def _read_line(self, deadline: float) -> bytes:
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise _WorkerLost("no answer in time", timed_out=True) from None
        if not line:
            raise self._lost()
        return line

    @staticmethod
    def _read_answers(stdout: IO[bytes], lines: queue.Queue[bytes]) -> None:
        """The worker's answers, line by line, until its stdout closes (then an empty line)."""
        with contextlib.suppress(OSError, ValueError):  # the pipe closed under us: the worker is gone
            for line in iter(stdout.readline, b""):
                lines.put(line)
        lines.put(b"")

    def _lost(self) -> _WorkerLost:
        try:
            code = self._process.wait(_STOP_GRACE)
        except subprocess.TimeoutExpired:
            return _WorkerLost("it closed its pipe", timed_out=False)
        if code < 0:
            return _WorkerLost(f"killed by signal {-code}", timed_out=False)
        return _WorkerLost(f"exit status {code}", timed_out=False)

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._close_pipes()

    def stop(self) -> None:
        """End the worker by closing its input; kill it if it does not go."""
        self._close_pipes()
        try:
            self._process.wait(_STOP_GRACE)
        except subprocess.TimeoutExpired:
            self.kill()

    def _close_pipes(self) -> None:
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a broken pipe to a dead worker: nothing to flush
                    pipe.close()

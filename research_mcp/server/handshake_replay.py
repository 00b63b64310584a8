"""A host answered at once: the handshake of an earlier start, replayed while the server loads.

Before the mcp SDK can answer anything, `research-mcp serve` spends about 1.5 s on 2 cores importing
(the SDK's own import, its protocol types, is half of that) and starting. Hosts give a server 5-60 s,
but they list its tools at start-up and a slow `initialize` is what users see. So `serve` on stdio
runs the SDK behind two pipes, with a small front on the real stdin and stdout that needs only the
standard library:

- The first time a client connects, every message passes through and the front *learns*: it keeps
  the SDK's answers to `initialize` and `tools/list`, keyed by the client's exact request, in
  `handshake.json` in the data folder, under a fingerprint of the code and configuration (every
  file of this package, the installed distributions, the Python version, a digest of the
  research-mcp, Anthropic, Tavily and Qdrant environment variables).
- On a later start with the same fingerprint, the same client's `initialize` and `tools/list` are
  answered from that file at once. The `initialize` still goes to the SDK (its session must see the
  client's capabilities); the SDK's own answer is dropped, after a check that it equals the one
  replayed. If it ever differs, the file is deleted and a warning logged, so the next start learns
  again. Every other request waits for the SDK, as it would have.

Nothing is replayed for a client, a configuration or code not seen before; the answers replayed are
the SDK's own, byte for byte. The file holds server answers only (tool definitions, instructions),
never a request's or the environment's values.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["REPLAY_FILE", "Front", "fingerprint", "serve_stdio"]

REPLAY_FILE = "handshake.json"
#: Clients remembered per fingerprint (a host and its variants; the oldest are forgotten first).
MAX_CLIENTS = 8
#: Host messages inspected before the front stops looking: the handshake comes first.
WATCHED = 8
#: Written by the front itself to its own pipe once the server has stopped: not JSON, never sent.
_END = b"\x00research-mcp: the server has stopped\n"
_ENV_PREFIXES = ("RESEARCH_MCP_", "ANTHROPIC_", "TAVILY_", "QDRANT_")


def fingerprint() -> str:
    """A digest of what the SDK's answers depend on: this package's files, the installed
    distributions, the Python version and the configuration (hashed; no value is kept)."""
    digest = hashlib.sha256(sys.version.encode())
    package = Path(__file__).resolve().parents[1]
    for folder, dirs, files in sorted(os.walk(package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".md", ".json", ".html", ".js", ".css", ".onnx", ".txt")):
                stat = os.stat(os.path.join(folder, name))
                digest.update(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    for entry in sys.path:  # the installed distributions, with their versions (x-1.2.dist-info)
        with contextlib.suppress(OSError):
            digest.update(
                "\n".join(sorted(n for n in os.listdir(entry) if n.endswith(".dist-info"))).encode()
            )
    for name in sorted(os.environ):
        if name.startswith(_ENV_PREFIXES):
            digest.update(f"{name}={os.environ[name]}".encode())
    return digest.hexdigest()


def _key(method: str, params: Any) -> str:
    return hashlib.sha256(f"{method} {json.dumps(params, sort_keys=True)}".encode()).hexdigest()


class Front:
    """The front between the host's stdio and the SDK's pipes: what is replayed, learned and dropped.

    ``to_host`` writes one line to the host; ``to_server`` one line to the SDK. :meth:`from_host`
    and :meth:`from_server` are called with each line, from two threads."""

    def __init__(
        self,
        path: Path,
        print_: str,
        to_host: Callable[[bytes], None],
        to_server: Callable[[bytes], None],
        log: Callable[[str], None],
    ) -> None:
        self.path, self.print_, self._to_host, self._to_server, self._log = (
            path,
            print_,
            to_host,
            to_server,
            log,
        )
        self._lock = threading.Lock()
        self.answers: dict[str, Any] = self._load()
        self._session: str | None = None  # the key of this session's initialize
        self._learning: dict[Any, str] = {}  # request id -> key, answers to keep
        self._replayed: dict[Any, Any] = {}  # request id -> the result replayed, the SDK's to drop
        self._seen = 0
        self.replayed = 0  # answers sent from the file, this session

    def _load(self) -> dict[str, Any]:
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(saved, dict) or saved.get("fingerprint") != self.print_:
            return {}
        answers = saved.get("answers")
        return answers if isinstance(answers, dict) else {}

    def _save(self) -> None:
        keep = dict(list(self.answers.items())[-2 * MAX_CLIENTS :])
        text = json.dumps({"fingerprint": self.print_, "answers": keep})
        partial = self.path.with_suffix(f".{os.getpid()}.partial")  # two servers may share a folder
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, self.path)

    def from_host(self, line: bytes) -> None:
        """A line from the host: answered now from the file, or passed on to the SDK (or both)."""
        message = self._watch(line)
        if message is not None:
            method, ident = message.get("method"), message.get("id")
            key = None
            if method == "initialize":
                key = self._session = _key("initialize", message.get("params"))
            elif method == "tools/list" and self._session is not None:
                key = _key(f"{self._session} tools/list", message.get("params"))
            if key is not None and ident is not None:
                with self._lock:
                    known = self.answers.get(key)
                    if known is None:
                        self._learning[ident] = key
                    elif method == "initialize":
                        self._replayed[ident] = known
                if known is not None:
                    self.replayed += 1
                    self._to_host(_response(ident, known))
                    if method == "initialize":
                        self._log(
                            "research-mcp: answered initialize as an earlier start did for this client "
                            f"({self.path.name}); the server is still loading"
                        )
                    if method == "tools/list":
                        return  # the SDK need not list its tools again: the host has them
        self._to_server(line)

    def _watch(self, line: bytes) -> dict[str, Any] | None:
        if self._seen >= WATCHED:
            return None
        self._seen += 1
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def from_server(self, line: bytes) -> None:
        """A line from the SDK: to the host, unless it answers a request already answered."""
        with self._lock:
            watching = bool(self._learning or self._replayed)
        if watching:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            is_answer = isinstance(message, dict) and "id" in message and "method" not in message
            if is_answer and self._check(message):
                return
        self._to_host(line)

    def _check(self, message: dict[str, Any]) -> bool:
        """Learn or check the SDK's answer; whether it is the duplicate of a replayed one."""
        ident = message["id"]
        with self._lock:
            key = self._learning.pop(ident, None)
            replayed = self._replayed.pop(ident, _NOTHING)
            if key is not None and "result" in message:
                self.answers.pop(key, None)
                self.answers[key] = message["result"]
                self._save()
        if replayed is _NOTHING:
            return False
        if message.get("result") != replayed:
            self._log(
                f"research-mcp: the server's initialize answer differs from the one replayed from {self.path}; "
                "deleted it, so the next start learns the handshake again"
            )
            with self._lock:
                self.answers.clear()
            with contextlib.suppress(OSError):
                self.path.unlink()
        return True


_NOTHING = object()


def _response(ident: Any, result: Any) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}, separators=(",", ":")) + "\n"
    ).encode()


def serve_stdio(home: Path, start_server: Callable[[], None]) -> None:
    """Run ``start_server`` (which serves MCP on fds 0 and 1, e.g. the SDK's stdio transport) behind
    pipes, with a :class:`Front` on the real stdin and stdout. Returns when the server stops."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    host_in: BinaryIO = os.fdopen(wire_in, "rb", buffering=65536)
    host_out: BinaryIO = os.fdopen(wire_out, "wb", closefd=False)
    server_in_r, server_in_w = os.pipe()
    server_out_r, server_out_w = os.pipe()
    os.dup2(server_in_r, 0)
    os.dup2(server_out_w, 1)
    os.close(server_in_r)
    os.close(server_out_w)
    to_server = os.fdopen(server_in_w, "wb")
    wire = threading.Lock()

    def to_host(line: bytes) -> None:
        with wire:
            host_out.write(line)
            host_out.flush()

    def to_sdk(line: bytes) -> None:
        to_server.write(line)
        to_server.flush()

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    front = Front(home / REPLAY_FILE, fingerprint(), to_host, to_sdk, log)

    def read_host() -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in host_in:
                front.from_host(line)
        with contextlib.suppress(OSError):
            to_server.close()  # the host is gone: the SDK reads end of file and stops

    def read_server() -> None:
        with os.fdopen(server_out_r, "rb") as server_out:
            for line in server_out:
                if line == _END:
                    return
                with contextlib.suppress(OSError):
                    front.from_server(line)

    threading.Thread(target=read_host, name="host stdin", daemon=True).start()
    pump = threading.Thread(target=read_server, name="server stdout")
    pump.start()
    try:
        start_server()
    finally:
        sys.stdout.flush()
        os.write(1, _END)  # fd 1 is the server's pipe again once the SDK has let it go
        pump.join()
        os.dup2(wire_out, 1)

"""A small HTTP(S) server on 127.0.0.1 for fetch tests: static routes, redirects, hand-written responders.

It runs in a thread; every handler thread is joined on exit, and handlers that stream forever
stop when the client goes away or the server stops.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

Responder = Callable[["_Handler"], None]


class LoopbackServer:
    """`with LoopbackServer() as server:` serves the registered routes on 127.0.0.1:<free port>."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.server_names: list[str | None] = []  # SNI names TLS clients sent
        self.routes: dict[str, Responder] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, headers) in order received
        self.stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    def url(self, path: str = "/") -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{path}"

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def serve(
        self,
        path: str,
        body: bytes,
        content_type: str | None = "text/html; charset=utf-8",
        *,
        status: int = 200,
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Answer `path` with a complete response."""

        def respond(handler: _Handler) -> None:
            handler.send_response(status)
            if content_type is not None:
                handler.send_header("Content-Type", content_type)
            for name, value in headers:
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

        self.routes[path] = respond

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.serve(path, b"", None, status=status, headers=[("Location", location)])

    def respond(self, path: str, responder: Responder) -> None:
        """Answer `path` with a hand-written responder (for streams that never end)."""
        self.routes[path] = responder

    def __enter__(self) -> LoopbackServer:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        if self.tls is not None:
            self.tls.sni_callback = lambda _socket, name, _context: self.server_names.append(name)
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None and self._thread is not None
        self.stopping.set()
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()  # joins the handler threads


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # joined on close, so no test leaves a thread writing behind it
    owner: LoopbackServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5  # no socket operation of a handler blocks longer than this

    def do_GET(self) -> None:
        owner = self.server.owner
        owner.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        responder = owner.routes.get(self.path)
        try:
            if responder is None:
                self.send_error(404)
            else:
                responder(self)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True  # the client went away, as fetch tests make it do

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output quiet

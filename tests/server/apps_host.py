"""A test MCP Apps host on loopback, for the browser tests of the run view.

Two origins, as real hosts keep the view apart from themselves: the host page (127.0.0.1) and the view
(127.0.0.2), which is served with the Content-Security-Policy a host builds from the resource's
`_meta.ui.csp` (or none at all, to show the document's own). The host page proxies the view's
`tools/call` to a REAL research-mcp server through a real MCP client session (`mcp.Client` on the
in-memory transport, in a blocking portal's event loop), refusing tools not visible to apps.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal
from mcp import Client

from research_mcp.server.view import VIEW_URI

HOST_PAGE = (Path(__file__).parent / "apps_host.html").read_bytes()


def host_csp(ui_csp: dict[str, list[str]]) -> str:
    """The policy a host derives from `_meta.ui.csp` (the Apps spec's default, widened only by the
    domains the resource declares)."""
    connect = " ".join(ui_csp.get("connectDomains", [])) or "'none'"
    resources = " ".join(ui_csp.get("resourceDomains", []))
    return (
        "default-src 'none'; "
        f"script-src 'self' 'unsafe-inline' {resources}; style-src 'self' 'unsafe-inline' {resources}; "
        f"img-src 'self' data: {resources}; font-src 'self' {resources}; media-src 'self' data: {resources}; "
        f"connect-src {connect}; frame-src 'none'; object-src 'none'; base-uri 'self'"
    )


@dataclass
class AppsHost:
    portal: BlockingPortal
    client: Client
    apply_csp: bool = True
    tool_call: dict[str, Any] = field(default_factory=dict)  # the model's call the view is attached to
    calls: list[dict[str, Any]] = field(default_factory=list)  # the view's tools/call, in order
    outside_hits: list[str] = field(default_factory=list)  # requests that reached the "outside" server
    view_html: str = ""
    view_csp: str = ""
    app_tools: set[str] = field(default_factory=set)

    def load(self) -> None:
        """Read the view and the tools as a host does: resources/read, tools/list."""
        read = self.portal.call(self.client.read_resource, VIEW_URI)
        content = read.contents[0]
        self.view_html = content.text  # type: ignore[union-attr]
        self.view_csp = host_csp((content.meta or {}).get("ui", {}).get("csp", {}))
        tools = self.portal.call(self.client.list_tools).tools
        self.app_tools = {
            tool.name
            for tool in tools
            if "app" in ((tool.meta or {}).get("ui", {}).get("visibility", ["app"]))
        }

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls.append({"name": name, "arguments": arguments})
        if name not in self.app_tools:
            return {"error": {"code": -32602, "message": f"tool {name} is not visible to apps"}}
        result = self.portal.call(self.client.call_tool, name, arguments)
        return {"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)}

    def view_calls(self, name: str) -> int:
        return sum(1 for call in self.calls if call["name"] == name)


def _handler(host: AppsHost, role: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, body: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if role == "outside":
                host.outside_hits.append(self.path)
                self._send(b"{}", "application/json", {"Access-Control-Allow-Origin": "*"})
            elif role == "view":
                csp = {"Content-Security-Policy": host.view_csp} if host.apply_csp else {}
                self._send(host.view_html.encode(), "text/html; charset=utf-8", csp)
            elif self.path.startswith("/tool-call"):
                self._send(json.dumps(host.tool_call).encode(), "application/json")
            else:
                self._send(HOST_PAGE, "text/html; charset=utf-8")

        def do_POST(self) -> None:
            if role == "outside":
                host.outside_hits.append(self.path)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            answer = host.call_tool(body.get("name", ""), body.get("arguments") or {})
            self._send(json.dumps(answer).encode(), "application/json")

    return Handler


@contextmanager
def serve(host: AppsHost) -> Iterator[dict[str, str]]:
    """The host, view and outside servers; their base URLs by role."""
    servers = {
        "host": ThreadingHTTPServer(("127.0.0.1", 0), _handler(host, "host")),
        "view": ThreadingHTTPServer(("127.0.0.2", 0), _handler(host, "view")),
        "outside": ThreadingHTTPServer(("127.0.0.3", 0), _handler(host, "outside")),
    }
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers.values()]
    for thread in threads:
        thread.start()
    try:
        yield {role: f"http://{s.server_address[0]}:{s.server_address[1]}" for role, s in servers.items()}
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()

"""A loopback Qdrant server for the ``QDRANT_URL`` path: the REST endpoints qdrant-client calls for
the knowledge index, answered by a real Qdrant Edge engine in a temporary folder.

No Qdrant server binary can be installed here (it ships neither on PyPI nor in Debian), so this
stands in for one at the HTTP boundary: qdrant-client builds and parses real requests and
responses, and the points it stores are searched by a real engine, so the server path answers
what the embedded one would.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from research_mcp.storage.edge import EdgeEngine

__all__ = ["fake_qdrant_server"]

COLLECTION = re.compile(r"^/collections/([^/?]+)(/[^?]*)?")


class _Handler(BaseHTTPRequestHandler):
    engine: EdgeEngine
    lock: threading.Lock
    requests: list[str]

    def do_GET(self) -> None:
        self._answer("GET")

    def do_PUT(self) -> None:
        self._answer("PUT")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_DELETE(self) -> None:
        self._answer("DELETE")

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        path = self.path.split("?", 1)[0]
        self.requests.append(f"{method} {path}")
        with self.lock:
            if path == "/collections":
                self._send({"collections": [{"name": name} for name in self.engine.collections()]})
                return
            match = COLLECTION.match(path)
            if match is None:
                self._send({"error": "not found"}, status=404)
                return
            self._collection(method, match.group(1), match.group(2) or "", body)

    def _collection(self, method: str, name: str, rest: str, body: Any) -> None:
        engine = self.engine
        operation = {"operation_id": 0, "status": "completed"}
        if (method, rest) == ("GET", "/exists"):
            self._send({"exists": engine.dimension(name) is not None})
        elif (method, rest) == ("GET", ""):
            dim = engine.dimension(name)
            if dim is None:
                self._send({"error": f"Collection `{name}` doesn't exist!"}, status=404)
            else:
                self._send(_collection_info(dim, engine.count(name)))
        elif (method, rest) == ("PUT", ""):
            engine.create(name, body["vectors"]["size"], body.get("metadata") or {})
            self._send(True)
        elif (method, rest) == ("DELETE", ""):
            engine.drop(name)
            self._send(True)
        elif (method, rest) == ("PUT", "/points"):
            points = [
                (p["id"], np.asarray(p["vector"], dtype=np.float32), p.get("payload") or {})
                for p in body["points"]
            ]
            engine.upsert(name, points)
            self._send(operation)
        elif (method, rest) == ("POST", "/points/query"):
            where = {c["key"]: c["match"]["value"] for c in ((body.get("filter") or {}).get("must") or [])}
            query = body["query"]["nearest"] if isinstance(body["query"], dict) else body["query"]
            hits = engine.query(
                name,
                np.asarray(query, dtype=np.float32),
                limit=body.get("limit", 10),
                min_score=body.get("score_threshold") or 0.0,
                where=where or None,
            )
            self._send(
                {"points": [{"id": h.id, "version": 0, "score": h.score, "payload": h.payload} for h in hits]}
            )
        elif (method, rest) == ("POST", "/points/delete"):
            engine.delete(name, body["points"])
            self._send(operation)
        elif (method, rest) == ("POST", "/points/count"):
            self._send({"count": engine.count(name)})
        elif (method, rest) == ("POST", "/points/scroll"):
            ids, following = engine.id_page(name, body.get("offset"), body.get("limit", 10))
            self._send({"points": [{"id": i, "payload": None} for i in ids], "next_page_offset": following})
        elif (method, rest) == ("POST", "/points"):
            wanted = body.get("with_payload")
            if isinstance(wanted, list) and len(wanted) == 1:  # one payload key, as held_values asks
                values = engine.held_values(name, body["ids"], wanted[0])
                self._send([{"id": i, "payload": {wanted[0]: values[i]}} for i in sorted(values)])
            else:
                self._send([{"id": i, "payload": None} for i in sorted(engine.held(name, body["ids"]))])
        else:
            self._send({"error": f"{method} {rest} is not served by this fake"}, status=404)

    def _send(self, result: Any, status: int = 200) -> None:
        envelope = {"result": result, "status": "ok", "time": 0.0} if status == 200 else {"status": result}
        data = json.dumps(envelope).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _collection_info(dim: int, points: int) -> dict[str, Any]:
    return {
        "status": "green",
        "optimizer_status": "ok",
        "segments_count": 1,
        "points_count": points,
        "indexed_vectors_count": points,
        "payload_schema": {},
        "config": {
            "params": {"vectors": {"size": dim, "distance": "Cosine"}},
            "hnsw_config": {"m": 16, "ef_construct": 100, "full_scan_threshold": 10000},
            "optimizer_config": {"default_segment_number": 0, "flush_interval_sec": 5},
        },
    }


@contextmanager
def fake_qdrant_server() -> Iterator[tuple[str, list[str]]]:
    """A server on a loopback port: its URL, and the requests it answered (``"PUT /collections/x"``)."""
    engine = EdgeEngine(None)
    requests: list[str] = []
    handler = type("Handler", (_Handler,), {"engine": engine, "lock": threading.Lock(), "requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        engine.close()

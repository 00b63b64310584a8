"""`serve --http` under a stream of requests: what its stderr holds (SECURITY.md quotes the figures).

Starts the installed `research-mcp serve --http` with a bearer token (so the log redaction is on),
sends REQUESTS requests without the token (each refused with 401) and one with it, then stops the
server and prints: stderr bytes, access lines, access lines per request, "Logging error" blocks and
tracebacks, and occurrences of the token. Loopback only.

Run alone: .venv/bin/python -m bench.http_log
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REQUESTS = 3500
TOKEN = "bench-token-0123456789abcdef0123456789"
SCRIPT = Path(sys.executable).parent / "research-mcp"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryFile() as stderr:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "RESEARCH_MCP_HOME": home,
            "RESEARCH_MCP_MODEL": "extractive",
            "RESEARCH_MCP_HTTP_TOKEN": TOKEN,
            "HF_HUB_OFFLINE": "1",
        }
        server = subprocess.Popen(
            [str(SCRIPT), "serve", "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
        )
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            with httpx.Client(timeout=10) as client:
                for _ in range(600):  # until it listens (at most a minute)
                    try:
                        client.get(url)
                        break
                    except httpx.TransportError:
                        time.sleep(0.1)
                started = time.perf_counter()
                for number in range(REQUESTS):
                    client.post(f"{url}?n={number}", json=PING, headers=HEADERS)
                client.post(f"{url}?n=ok", json=PING, headers={**HEADERS, "Authorization": f"Bearer {TOKEN}"})
                elapsed = time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(timeout=30)
        stderr.seek(0)
        log = stderr.read().decode("utf-8", "replace")
    access = [line for line in log.splitlines() if "POST /mcp?n=" in line]
    print(f"{REQUESTS} requests without the token + 1 with it, in {elapsed:.1f} s")
    print(f"stderr: {len(log.encode()):,} bytes, {len(log.splitlines()):,} lines")
    print(f"access lines: {len(access):,} ({len(access) / (REQUESTS + 1):.2f} per request)")
    print(
        f"'Logging error' blocks: {log.count('--- Logging error ---')}; tracebacks: {log.count('Traceback')}"
    )
    print(f"token occurrences: {log.count(TOKEN)}")


if __name__ == "__main__":
    main()

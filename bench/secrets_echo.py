"""Secrets echoed by fake upstreams: where they end up (SECURITY.md quotes the counts).

One session (tests/secrets_harness.py): Tavily answers 401 and Claude answers 400 with bodies that
echo ANTHROPIC_API_KEY, TAVILY_API_KEY, QDRANT_API_KEY and RESEARCH_MCP_HTTP_TOKEN, and Claude writes
them into its answers; the host plans, executes, reads every view, extracts and scouts. Printed:
occurrences of any secret (whole, or its first 16 characters) in the store's files, the tool
results, the Markdown/HTML/JSON exports, the logs (DEBUG, every logger) and the request bodies sent
to the Messages API. Loopback only.

Run alone: .venv/bin/python -m bench.secrets_echo
"""

from __future__ import annotations

import io
import logging
import tempfile
from pathlib import Path

import anyio

from tests.secrets_harness import echo_secrets


async def main() -> None:
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with tempfile.TemporaryDirectory(prefix="research-mcp-secrets-") as tmp:
            report = await echo_secrets(Path(tmp), log.getvalue)
    finally:
        root.removeHandler(handler)
    print(
        f"secrets echoed by fake upstreams: {report.anthropic_requests} Messages API requests, "
        f"{report.tavily_requests} Tavily requests (all 401), run {report.run_status}; "
        f"{report.redactions} redactions in the tool results"
    )
    for sink, count in report.found.items():
        print(f"  secrets found in {sink}: {count}")
    print(f"  total: {sum(report.found.values())} (log text searched: {len(log.getvalue()):,} characters)")


if __name__ == "__main__":
    anyio.run(main)

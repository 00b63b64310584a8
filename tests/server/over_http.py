"""The server's streamable HTTP app served in the test process, on a loopback port."""

from __future__ import annotations

import functools
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer

from research_mcp.core.config import Settings
from research_mcp.server.http import build_app, parse_bind


@asynccontextmanager
async def served_over_http(server: MCPServer[Any]) -> AsyncIterator[str]:
    """The server's streamable HTTP app (`serve --http`'s, guards included) served by uvicorn in this
    process on a loopback port: the URL of its endpoint."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        port = listening.getsockname()[1]
        app = build_app(Settings(), parse_bind(f"127.0.0.1:{port}"), server=server)
        config = uvicorn.Config(app, lifespan="on", log_config=None, access_log=False, ws="none")
        served = uvicorn.Server(config)
        async with anyio.create_task_group() as group:
            group.start_soon(functools.partial(served.serve, sockets=[listening]))
            with anyio.fail_after(30):
                while not served.started:
                    await anyio.sleep(0.01)  # uvicorn offers no event for "listening"
            try:
                yield f"http://127.0.0.1:{port}/mcp"
            finally:
                served.should_exit = True

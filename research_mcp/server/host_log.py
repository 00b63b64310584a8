"""MCP logging for clients whose protocol has `logging/setLevel` (2025-11-25 and earlier).

Such a client is told the server has the `logging` capability; once it sets a level, the lines
the server logs at that level or above (a source not read, a run ended partial, an upstream
failing) reach it as `notifications/message`, redacted as the stderr log is. Lines the server does
not log at all (below INFO under `research-mcp serve`, DEBUG with `-v`) are not sent either.
2026-07-28 dropped `logging/setLevel`: a client of that version gets -32601 for it, as before.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
import weakref
from typing import Any, get_args

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import INVALID_PARAMS, LoggingLevel
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["HostLog"]

LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
# The syslog levels of MCP as Python's: notice between INFO and WARNING, the top three CRITICAL.
PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": 25,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def mcp_level(levelno: int) -> LoggingLevel:
    """The MCP level of a Python log record."""
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= PYTHON_LEVELS["notice"]:
        return "notice"
    return "info" if levelno >= logging.INFO else "debug"


class HostLog(logging.Handler):
    """A log handler that forwards records to the clients that set a level, and the server
    middleware that declares the capability and serves `logging/setLevel`."""

    def __init__(self) -> None:
        super().__init__()
        # Per connection (a session object is made per request, so it cannot be the key): the
        # level the client set, the session to send on, and the event loop that serves it.
        self.clients: weakref.WeakKeyDictionary[Any, tuple[int, ServerSession, asyncio.AbstractEventLoop]] = (
            weakref.WeakKeyDictionary()
        )
        self.sending: set[asyncio.Task[None]] = set()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        if ctx.method == "logging/setLevel":
            return self._set_level(ctx)
        result = await call_next(ctx)
        if (
            ctx.method == "initialize"
            and isinstance(result, dict)
            and result.get("protocolVersion") not in MODERN_PROTOCOL_VERSIONS
        ):
            result.setdefault("capabilities", {})["logging"] = {}
        return result

    def _set_level(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        level = (ctx.params or {}).get("level")
        if level not in PYTHON_LEVELS:
            raise MCPError(
                code=INVALID_PARAMS, message=f"Invalid level {level!r}: give one of {', '.join(LEVELS)}."
            )
        # The SDK keeps the connection private; a session is only a per-request view of it.
        connection = getattr(ctx.session, "_connection", ctx.session)
        self.clients[connection] = (PYTHON_LEVELS[level], ctx.session, asyncio.get_running_loop())
        return {}

    def emit(self, record: logging.LogRecord) -> None:
        for connection, (level, session, loop) in list(self.clients.items()):
            if record.levelno < level:
                continue
            try:
                loop.call_soon_threadsafe(self._send, connection, session, record)
            except RuntimeError:  # the loop has closed: so has the connection
                self.clients.pop(connection, None)

    def _send(self, connection: Any, session: ServerSession, record: logging.LogRecord) -> None:
        task = asyncio.get_running_loop().create_task(self._notify(connection, session, record))
        self.sending.add(task)
        task.add_done_callback(self.sending.discard)

    async def _notify(self, connection: Any, session: ServerSession, record: logging.LogRecord) -> None:
        try:
            with warnings.catch_warnings():  # deprecated at 2026-07-28, which this client does not speak
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.send_log_message(
                    mcp_level(record.levelno), record.getMessage(), logger=record.name
                )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, MCPError, OSError):
            self.clients.pop(connection, None)  # the client has gone (logging that here would loop)

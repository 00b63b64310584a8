"""A small Chrome DevTools Protocol client over --remote-debugging-pipe: Debian's chromium, driven from
the tests with no browser-automation dependency (no websocket library, no driver download).

Chromium reads commands from fd 3 and writes answers and events to fd 4, each a JSON object ended by
a NUL byte. `bash` puts the two pipe ends on those numbers, so nothing runs in the child before exec.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class BrowserError(RuntimeError):
    pass


def chromium_path() -> str | None:
    return shutil.which("chromium")


def _high(fd: int) -> int:
    """`fd` moved to a number above 9, so that putting the pipe ends on 3 and 4 overwrites neither."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless chromium with a fresh profile; `send` a command, `wait_event` for an event."""

    def __init__(self, profile: Path) -> None:
        command_read, self._command_write = (_high(fd) for fd in os.pipe())
        self._answer_read, answer_write = (_high(fd) for fd in os.pipe())
        self.process = subprocess.Popen(
            [
                "bash",  # dash takes only one-digit descriptors in a redirection
                "-c",
                f'exec "$0" "$@" 3<&{command_read} 4>&{answer_write}',
                chromium_path() or "chromium",
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(command_read, answer_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(command_read)
        os.close(answer_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):  # OSError: it has already gone
            self.send("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._command_write)
        os.close(self._answer_read)

    def _read(self, deadline: float) -> dict[str, Any] | None:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._answer_read], [], [], left)
            if ready:
                chunk = os.read(self._answer_read, 1 << 16)
                if not chunk:
                    raise BrowserError("chromium closed the debugging pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)  # type: ignore[no-any-return]

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 20,
    ) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._command_write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer is None:
                raise BrowserError(f"no answer to {method} in {timeout} s")
            if answer.get("id") == ident:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})  # type: ignore[no-any-return]
            self.events.append(answer)

    def wait_event(
        self, method: str, match: Any = None, timeout: float = 20, since: int = 0
    ) -> dict[str, Any]:
        """The first event `method` (seen before, from the `since`-th event on, or arriving within
        `timeout`) whose params pass `match`."""
        deadline = time.monotonic() + timeout
        seen = since
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and (match is None or match(event.get("params", {}))):
                    return event
            seen = len(self.events)
            answer = self._read(deadline)
            if answer is None:
                raise BrowserError(f"no {method} event in {timeout} s")
            self.events.append(answer)

    def evaluate(self, session: str, expression: str, timeout: float = 20) -> Any:
        """The value of a JavaScript expression (awaited if a promise) in the target of `session`."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=session,
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, session: str, expression: str, timeout: float = 20) -> Any:
        """Evaluate `expression` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(session, expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"still falsy after {timeout} s: {expression}")
            time.sleep(0.1)

    def press(self, session: str, key: str, code: int) -> None:
        """A real key press (down, then up) sent to the page's focused element."""
        text = "\r" if key == "Enter" else ""
        for kind in ("keyDown", "keyUp"):
            params = {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code}
            if kind == "keyDown" and text:
                params["text"] = text
            self.send("Input.dispatchKeyEvent", params, session=session)

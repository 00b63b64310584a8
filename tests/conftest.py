"""Test-wide guards: no network beyond loopback, no real keys, a fresh data folder per test."""

from __future__ import annotations

import inspect
import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm.fake_anthropic import FakeMessagesAPI

SCRUBBED = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "TAVILY_API_KEY",
    "TAVILY_API_BASE_URL",
    "QDRANT_URL",
    "QDRANT_API_KEY",
    "RESEARCH_MCP_MODEL",
    "RESEARCH_MCP_CORPUS",
    "RESEARCH_MCP_FETCH_ALLOW",
    "RESEARCH_MCP_ROLE_MODELS",
)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """Mark coroutine tests for anyio before they are generated, so parametrize keeps its cases."""
    if name.startswith("test") and inspect.iscoroutinefunction(obj):
        pytest.mark.anyio(obj)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _is_loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host == "localhost"
    return True  # unix sockets and socketpairs


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a non-loopback address fails the test loudly."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: object) -> None:
        if not _is_loopback(address):
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    def guarded_connect_ex(self: socket.socket, address: object) -> int:
        if not _is_loopback(address):
            raise RuntimeError(f"test tried to reach the network: {address!r}")
        return real_connect_ex(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


@pytest.fixture(autouse=True)
def research_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data folder, and no real credentials, for every test."""
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("RESEARCH_MCP_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # The optimized embedding model a first session saves (llm/saved_model.py): not the user's cache.
    monkeypatch.setenv("RESEARCH_MCP_CACHE_DIR", str(tmp_path / "cache"))
    yield home


@pytest.fixture
def anthropic_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMessagesAPI]:
    """The loopback fake of the Messages API, with the server's Anthropic backend pointed at it."""
    with FakeMessagesAPI() as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        yield api

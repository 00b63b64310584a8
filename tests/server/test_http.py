"""`research-mcp serve --http`: the installed script over streamable HTTP, with its three guards.

Loopback unless a token is set; the token on every request when it is; Host and Origin headers
checked against DNS rebinding. The servers are real subprocesses started through the console script,
talked to by a real MCP client and by raw HTTP requests.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from research_mcp.core.config import Settings
from research_mcp.server.http import BindAddress, parse_bind, refusal
from tests.handshake import INITIALIZE

SCRIPT = Path(sys.executable).parent / "research-mcp"
TOKEN = "correct-horse-battery-staple-0123456789"
TOOLS = ["execute_plan", "extract_source", "plan_research", "report_results", "scout_sources"]
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
REEF = (
    "The Great Barrier Reef is the largest coral reef system in the world. "
    "It is located in the Coral Sea off the coast of Queensland, Australia."
)


@pytest.fixture(autouse=True)
def no_http_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RESEARCH_MCP_HTTP_TOKEN", "RESEARCH_MCP_HTTP_TOKENS", "RESEARCH_MCP_HTTP_ALLOWED_HOSTS"):
        monkeypatch.delenv(name, raising=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """What the child gets: a data folder, the extractive backend, and nothing from this shell."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "RESEARCH_MCP_HOME": str(home),
        "RESEARCH_MCP_MODEL": "extractive",
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",  # anything written to stdout shows at once
        "PYTHONPATH": str(Path(__file__).parents[2]),  # the code of this checkout, not the installed one
        **extra,
    }


@dataclass
class ServerProcess:
    """`research-mcp serve --http ADDRESS` running, with its stderr collected line by line."""

    process: subprocess.Popen[bytes]
    stdout: Path
    port: int
    lines: list[str] = field(default_factory=list)
    listening: threading.Event = field(default_factory=threading.Event)
    written: threading.Condition = field(default_factory=threading.Condition)
    reader: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self.read_stderr, daemon=True)
        self.reader.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def read_stderr(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace")
            with self.written:
                self.lines.append(line)
                self.written.notify_all()
            if "Uvicorn running on" in line:
                self.listening.set()
        self.listening.set()  # exited: the waiter looks at the return code

    def wait_for(self, text: str, count: int, timeout: float = 30) -> None:
        """Until ``count`` lines of stderr hold ``text``."""
        with self.written:
            written = self.written.wait_for(
                lambda: sum(text in line for line in self.lines) >= count, timeout
            )
        assert written, self.stderr

    def stop(self) -> int:
        self.process.terminate()
        code = self.process.wait(timeout=30)
        self.reader.join(timeout=30)
        assert self.process.stderr is not None
        self.process.stderr.close()
        return code


def start_server(address: str, home: Path, port: int, **env: str) -> ServerProcess:
    stdout = home.parent / f"stdout-{port}"
    with stdout.open("wb") as sink:
        process = subprocess.Popen(
            [str(SCRIPT), "serve", "--http", address],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.PIPE,
            env=server_env(home, **env),
        )
    server = ServerProcess(process, stdout, port)
    if not server.listening.wait(timeout=60) or process.poll() is not None:
        server.stop()
        pytest.fail(f"the server did not start:\n{server.stderr}")
    return server


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("loopback") / "home"
    port = free_port()
    server = start_server(f"127.0.0.1:{port}", home, port)
    yield server
    assert server.stop() in (0, -signal.SIGTERM), server.stderr  # uvicorn re-raises the signal it handled
    assert "Application shutdown complete" in server.stderr
    assert server.stdout.read_bytes() == b""


@pytest.fixture(scope="module")
def with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Bound to every interface (allowed because a token is set), reached here through 127.0.0.1."""
    home = tmp_path_factory.mktemp("token") / "home"
    port = free_port()
    server = start_server(
        f"0.0.0.0:{port}",
        home,
        port,
        RESEARCH_MCP_HTTP_TOKEN=TOKEN,
        RESEARCH_MCP_HTTP_ALLOWED_HOSTS="research.example.org",
    )
    yield server
    assert server.stop() in (0, -signal.SIGTERM), server.stderr  # uvicorn re-raises the signal it handled
    assert "Application shutdown complete" in server.stderr
    assert server.stdout.read_bytes() == b""
    assert TOKEN not in server.stderr


@asynccontextmanager
async def authorized_client(url: str, token: str) -> AsyncIterator[Client]:
    """An MCP client whose every request carries the token (the SDK leaves a given HTTP client open)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def test_an_mcp_client_lists_the_tools_and_pulls_a_result_over_http(loopback: ServerProcess) -> None:
    async with Client(loopback.url) as client:
        assert sorted(tool.name for tool in (await client.list_tools()).tools) == TOOLS
        extraction = await client.call_tool(
            "extract_source", {"source": REEF, "questions": ["Where is the reef?"]}
        )
        assert not extraction.is_error, extraction.content
        assert extraction.structured_content is not None
        facts = await client.call_tool(
            "report_results", {"id": extraction.structured_content["id"], "view": "facts"}
        )
        assert not facts.is_error, facts.content
        assert "Coral Sea" in str(facts.structured_content)
        missing = await client.call_tool("report_results", {"id": "run_000000000000"})
        assert missing.is_error
    assert loopback.stdout.read_bytes() == b""
    assert f"http://127.0.0.1:{loopback.port}/mcp" in loopback.stderr


def test_a_request_naming_another_host_is_refused_against_dns_rebinding(loopback: ServerProcess) -> None:
    headers = {**MCP_HEADERS, "Host": "evil.example"}
    response = httpx.post(loopback.url, json=INITIALIZE, headers=headers)
    assert response.status_code == 421
    headers = {**MCP_HEADERS, "Host": f"evil.example:{loopback.port}"}
    assert httpx.post(loopback.url, json=INITIALIZE, headers=headers).status_code == 421


def test_a_request_from_a_foreign_origin_is_refused_and_a_local_origin_is_served(
    loopback: ServerProcess,
) -> None:
    foreign = httpx.post(
        loopback.url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    lookalike = {**MCP_HEADERS, "Origin": f"http://127.0.0.1.evil.example:{loopback.port}"}
    assert httpx.post(loopback.url, json=INITIALIZE, headers=lookalike).status_code == 403
    local = {**MCP_HEADERS, "Origin": f"http://localhost:{loopback.port}"}
    assert httpx.post(loopback.url, json=INITIALIZE, headers=local).status_code == 200


def test_without_the_token_a_request_gets_401_with_a_bearer_challenge(with_token: ServerProcess) -> None:
    response = httpx.post(with_token.url, json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert httpx.get(with_token.url).status_code == 401


@pytest.mark.parametrize(
    "authorization",
    [f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN, "Bearer"],
    ids=["short", "long", "basic", "bare", "empty"],
)
def test_a_wrong_token_gets_401(with_token: ServerProcess, authorization: str) -> None:
    headers = {**MCP_HEADERS, "Authorization": authorization}
    response = httpx.post(with_token.url, json=INITIALIZE, headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_with_the_right_token_an_mcp_client_lists_the_tools(with_token: ServerProcess) -> None:
    async with authorized_client(with_token.url, TOKEN) as client:
        assert sorted(tool.name for tool in (await client.list_tools()).tools) == TOOLS
    assert with_token.stdout.read_bytes() == b""


def test_each_request_refused_or_served_writes_one_access_line_and_no_traceback(
    with_token: ServerProcess,
) -> None:
    for probe in range(5):
        assert httpx.post(f"{with_token.url}?probe={probe}", json=INITIALIZE).status_code == 401
    authorized = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
    assert httpx.post(f"{with_token.url}?probe=ok", json=INITIALIZE, headers=authorized).status_code == 200
    with_token.wait_for('"POST /mcp?probe=ok HTTP/1.1" 200', 1)
    for probe in range(5):
        with_token.wait_for(f'"POST /mcp?probe={probe} HTTP/1.1" 401', 1)
    probes = [line for line in with_token.lines if "?probe=" in line]
    assert len(probes) == 6, probes  # one access line per request: who called, what, and the answer
    assert all(line.startswith("INFO:") and "127.0.0.1:" in line for line in probes), probes
    assert "Logging error" not in with_token.stderr and "Traceback" not in with_token.stderr


def test_with_the_token_host_checks_still_apply_and_allowed_hosts_extend_them(
    with_token: ServerProcess,
) -> None:
    authorized = {**MCP_HEADERS, "Authorization": f"bearer {TOKEN}"}  # the scheme is case-insensitive
    evil = httpx.post(with_token.url, json=INITIALIZE, headers={**authorized, "Host": "evil.example"})
    assert evil.status_code == 421
    proxied = {**authorized, "Host": "research.example.org", "Origin": "https://research.example.org"}
    assert httpx.post(with_token.url, json=INITIALIZE, headers=proxied).status_code == 200


def test_serving_beyond_loopback_without_a_token_exits_2_saying_how_to_set_one(tmp_path: Path) -> None:
    port = free_port()
    result = subprocess.run(
        [str(SCRIPT), "serve", "--http", f"0.0.0.0:{port}"],
        env=server_env(tmp_path / "home"),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == b""
    message = result.stderr.decode()
    assert "without a token" in message
    assert "export RESEARCH_MCP_HTTP_TOKEN=" in message
    assert "Uvicorn" not in message
    assert not (tmp_path / "home").exists()  # refused before the data folder is touched


# Every spelling of an address beyond this machine, without a token, is refused.
REFUSED = [
    "0.0.0.0:8000",
    "0:8000",  # inet_aton: 0.0.0.0
    "0.0:8000",
    "0x0:8000",
    "[::]:8000",
    "[0:0:0:0:0:0:0:0]:8000",
    "[::ffff:0.0.0.0]:8000",
    "192.168.1.10:8000",
    "10.0.0.1:8000",
    "3232235777:8000",  # 192.168.1.1 as one number
    "[::ffff:192.168.1.1]:8000",
    "[2001:db8::1]:8000",
    "[fe80::1%eth0]:8000",
    "example.org:8000",
    "localhost.localdomain:8000",
    "localhost.evil.example:8000",
    "127.0.0.1.nip.io:8000",
]

# Loopback spellings are served, on the address they were judged to be.
ACCEPTED = {
    "8000": "127.0.0.1",
    "127.0.0.1:8000": "127.0.0.1",
    "localhost:8000": "127.0.0.1",
    "LOCALHOST:8000": "127.0.0.1",
    "localhost.:8000": "127.0.0.1",
    "[::1]:8000": "::1",
    "[0:0:0:0:0:0:0:1]:8000": "::1",
    "[::ffff:127.0.0.1]:8000": "127.0.0.1",
    "127.0.0.2:8000": "127.0.0.2",
    "127.255.255.254:8000": "127.255.255.254",
    "127.1:8000": "127.0.0.1",
    "0x7f.1:8000": "127.0.0.1",
    "2130706433:8000": "127.0.0.1",
    "0177.0.0.1:8000": "127.0.0.1",
}

MALFORMED = ["::1:8000", "[::1]", "[::1]8000", "host", ":8000", "127.0.0.1:0", "127.0.0.1:65536"]
MALFORMED += ["127.0.0.1:http", "my host:80", "[]:80", "-8000", "exa_mple.org:80"]


@pytest.mark.parametrize("address", REFUSED)
def test_an_address_beyond_loopback_is_refused_without_a_token(address: str) -> None:
    bind = parse_bind(address)
    assert not bind.loopback
    problem = refusal(Settings(), bind)
    assert problem is not None and "RESEARCH_MCP_HTTP_TOKEN" in problem
    assert refusal(Settings(RESEARCH_MCP_HTTP_TOKEN=TOKEN), bind) is None  # type: ignore[call-arg]


@pytest.mark.parametrize("address", sorted(ACCEPTED))
def test_a_loopback_address_is_served_without_a_token_on_the_address_judged(address: str) -> None:
    bind = parse_bind(address)
    assert bind == BindAddress(ACCEPTED[address], 8000, loopback=True)
    assert refusal(Settings(), bind) is None


@pytest.mark.parametrize("address", MALFORMED)
def test_a_malformed_address_is_a_usage_error(address: str) -> None:
    with pytest.raises(ValueError, match=r"host|port|IPv6|address"):
        parse_bind(address)


def test_a_short_token_or_a_proxied_public_name_without_a_token_is_refused() -> None:
    local = parse_bind("8000")
    short: dict[str, Any] = {"RESEARCH_MCP_HTTP_TOKEN": "hunter2"}
    assert "at least 16" in (refusal(Settings(**short), local) or "")
    proxied: dict[str, Any] = {"RESEARCH_MCP_HTTP_ALLOWED_HOSTS": "research.example.org"}
    assert "research.example.org" in (refusal(Settings(**proxied), local) or "")
    loopback_only: dict[str, Any] = {"RESEARCH_MCP_HTTP_ALLOWED_HOSTS": "localhost:8443,[::1]"}
    assert refusal(Settings(**loopback_only), local) is None


def test_an_empty_token_counts_as_no_token() -> None:
    settings = Settings(RESEARCH_MCP_HTTP_TOKEN="  ")  # type: ignore[call-arg]
    assert settings.http_token is None
    assert refusal(settings, parse_bind("0.0.0.0:8000")) is not None


async def test_a_token_per_user_lets_each_user_in_as_themselves_and_no_one_else() -> None:
    from starlette.responses import PlainTextResponse

    from research_mcp.server.http import BearerTokenMiddleware

    async def whoami(scope: Any, receive: Any, send: Any) -> None:
        await PlainTextResponse(scope["user"].access_token.client_id)(scope, receive, send)

    tokens = {"alice": TOKEN, "bob": TOKEN[::-1]}
    app = BearerTokenMiddleware(whoami, tokens)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        for user, token in tokens.items():
            answer = await http.get("/mcp", headers={"Authorization": f"Bearer {token}"})
            assert (answer.status_code, answer.text) == (200, user)
        assert (await http.get("/mcp", headers={"Authorization": f"Bearer {TOKEN}x"})).status_code == 401


def test_tokens_per_user_are_name_token_pairs_each_long_enough() -> None:
    users = Settings(RESEARCH_MCP_HTTP_TOKENS=f"alice={TOKEN}, bob={TOKEN[::-1]}")  # type: ignore[call-arg]
    assert {name: token.get_secret_value() for name, token in users.http_tokens.items()} == {
        "alice": TOKEN,
        "bob": TOKEN[::-1],
    }
    remote = parse_bind("0.0.0.0:8000")
    assert refusal(users, remote) is None
    short = Settings(RESEARCH_MCP_HTTP_TOKENS=f"alice={TOKEN},bob=short")  # type: ignore[call-arg]
    assert "the token of 'bob' has 5 characters" in (refusal(short, remote) or "")
    for bad in ("alice", f"alice={TOKEN},alice={TOKEN[::-1]}", f"alice={TOKEN},bob={TOKEN}"):
        with pytest.raises(ValueError, match="RESEARCH_MCP_HTTP_TOKENS"):
            Settings(RESEARCH_MCP_HTTP_TOKENS=bad)  # type: ignore[call-arg]

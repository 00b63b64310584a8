"""`serve` answers a host it has met before at once: the handshake replayed while the server loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from research_mcp.server.handshake_replay import REPLAY_FILE, Front, fingerprint
from tests.handshake import INITIALIZED, LIST_TOOLS, initialize

SCRIPT = Path(sys.executable).with_name("research-mcp")
RESULT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s"}}
TOOLS = {"tools": [{"name": "plan_research", "inputSchema": {"type": "object"}}]}


def line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


class Wires:
    """What a front sent each way, and what it logged."""

    def __init__(self) -> None:
        self.host: list[dict[str, Any]] = []
        self.server: list[dict[str, Any]] = []
        self.log: list[str] = []

    def front(self, path: Path, print_: str = "code-1") -> Front:
        return Front(
            path,
            print_,
            lambda b: self.host.append(json.loads(b)),
            lambda b: self.server.append(json.loads(b)),
            self.log.append,
        )


def learn(path: Path, client: str = "host") -> None:
    """A first start: everything passes through, and the SDK's answers are kept."""
    wires = Wires()
    front = wires.front(path)
    front.from_host(line(initialize(client)))
    front.from_server(line({"jsonrpc": "2.0", "id": 1, "result": RESULT}))
    front.from_host(line(INITIALIZED))
    front.from_host(line(LIST_TOOLS))
    front.from_server(line({"jsonrpc": "2.0", "id": 2, "result": TOOLS}))
    assert [m.get("method") for m in wires.server] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]
    assert [m["id"] for m in wires.host] == [1, 2]
    assert front.replayed == 0


def test_a_first_start_passes_everything_through_and_keeps_the_servers_answers(tmp_path: Path) -> None:
    path = tmp_path / REPLAY_FILE
    learn(path)
    saved = json.loads(path.read_text())
    assert saved["fingerprint"] == "code-1"
    assert sorted(map(json.dumps, saved["answers"].values())) == sorted(map(json.dumps, [RESULT, TOOLS]))


def test_a_later_start_answers_initialize_and_tools_list_at_once_and_drops_the_sdks_duplicate(
    tmp_path: Path,
) -> None:
    path = tmp_path / REPLAY_FILE
    learn(path)
    wires = Wires()
    front = wires.front(path)
    front.from_host(line(initialize("host", ident=7)))
    assert wires.host == [{"jsonrpc": "2.0", "id": 7, "result": RESULT}]  # before the SDK said anything
    assert wires.server[0]["method"] == "initialize"  # the SDK's session still sees the client
    front.from_host(line(INITIALIZED))
    front.from_host(line({**LIST_TOOLS, "id": 8}))
    assert wires.host[-1] == {"jsonrpc": "2.0", "id": 8, "result": TOOLS}
    assert [m.get("method") for m in wires.server] == ["initialize", "notifications/initialized"]
    front.from_server(line({"jsonrpc": "2.0", "id": 7, "result": RESULT}))  # the SDK's own answer
    assert len(wires.host) == 2  # dropped: the host had it
    front.from_host(line({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "x"}}))
    front.from_server(line({"jsonrpc": "2.0", "id": 9, "result": {"content": []}}))
    assert wires.server[-1]["id"] == 9 and wires.host[-1]["id"] == 9
    assert front.replayed == 2 and any("answered initialize" in text for text in wires.log)


def test_another_client_or_other_code_is_not_answered_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / REPLAY_FILE
    learn(path, client="claude-ai")
    other_client = Wires()
    other_client.front(path).from_host(line(initialize("cursor")))
    other_code = Wires()
    other_code.front(path, print_="code-2").from_host(line(initialize("claude-ai")))
    for wires in (other_client, other_code):
        assert wires.host == []
        assert wires.server[0]["method"] == "initialize"


def test_an_sdk_answer_that_differs_from_the_replayed_one_deletes_the_file(tmp_path: Path) -> None:
    path = tmp_path / REPLAY_FILE
    learn(path)
    wires = Wires()
    front = wires.front(path)
    front.from_host(line(initialize("host")))
    changed = {**RESULT, "instructions": "new"}
    front.from_server(line({"jsonrpc": "2.0", "id": 1, "result": changed}))
    assert not path.exists()
    assert any("differs" in text for text in wires.log)
    again = Wires()
    again.front(path).from_host(line(initialize("host")))
    assert again.host == []


def test_the_fingerprint_follows_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    before = fingerprint()
    monkeypatch.setenv("RESEARCH_MCP_MODEL", "extractive")
    assert fingerprint() != before
    monkeypatch.setenv("UNRELATED_VARIABLE", "x")
    changed = fingerprint()
    monkeypatch.setenv("UNRELATED_VARIABLE", "y")
    assert fingerprint() == changed


def serve_once(home: Path, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """`research-mcp serve` given `messages` on stdin: its answers (one per request), then end of
    file once they are in (as a host closes it), and its log."""
    env = {"RESEARCH_MCP_HOME": str(home), "PATH": os.environ.get("PATH", ""), "HF_HUB_OFFLINE": "1"}
    requests = sum(1 for m in messages if "id" in m)
    log = home / "serve.log"
    with (
        log.open("wb") as errors,
        subprocess.Popen(
            [str(SCRIPT), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env
        ) as server,
    ):
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"".join(line(m) for m in messages))
        server.stdin.flush()
        answers = []
        while len(answers) < requests and (text := server.stdout.readline()):
            answers.append(json.loads(text))
        server.stdin.close()
        assert server.wait(timeout=90) == 0
    return answers, log.read_text()


async def test_the_installed_server_replays_a_clients_handshake_on_its_next_start(tmp_path: Path) -> None:
    missing = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
    missing["params"] = {"name": "report_results", "arguments": {"id": "run_000000000000"}}
    talk = [initialize("host"), INITIALIZED, LIST_TOOLS, missing]
    first, first_log = serve_once(tmp_path, talk)
    assert "answered initialize as an earlier start did" not in first_log
    assert (tmp_path / REPLAY_FILE).exists()

    second, second_log = serve_once(tmp_path, talk)
    assert "answered initialize as an earlier start did" in second_log
    assert [a["id"] for a in second] == [1, 2, 3]  # each answered once, the SDK's duplicate dropped
    assert second[:2] == first[:2]
    assert second[2]["result"]["isError"] and "No run with id" in json.dumps(second[2])

    # An MCP client library sees a normal server on a replayed start.
    params = StdioServerParameters(
        command=str(SCRIPT),
        args=["serve"],
        env={"RESEARCH_MCP_HOME": str(tmp_path / "client"), "PATH": os.environ.get("PATH", "")},
    )
    for _ in range(2):
        async with Client(params, mode="legacy") as client:
            assert len((await client.list_tools()).tools) == 5
            assert (await client.call_tool("report_results", {"id": "run_000000000000"})).is_error

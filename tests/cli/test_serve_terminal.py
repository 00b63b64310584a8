"""`research-mcp serve` (what `make run` starts) at a terminal: a person, not a host, is on stdin, so it
says on stderr what it waits for and how to connect a host, and stdout (the protocol channel) stays
empty. Started by a host (stdin a pipe), it says nothing of the kind."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.conftest import SCRIPT, cli, cli_env

NOTICE = "research-mcp is serving MCP on stdio: it waits for a host"
# SIGINT's default restored first: a suite started as a background job passes SIGINT on ignored.
WITH_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"


def read_stderr_until(process: subprocess.Popen[bytes], wanted: str, seconds: float) -> str:
    """Stderr as it arrives, until it holds `wanted`, the process ends or `seconds` pass."""
    assert process.stderr is not None
    said = b""
    deadline = time.monotonic() + seconds
    while wanted.encode() not in said and time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 0.5)
        if ready:
            chunk = os.read(process.stderr.fileno(), 65536)
            if not chunk:
                break
            said += chunk
    return said.decode("utf-8", "replace")


def serve_at_a_terminal(home: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`research-mcp serve` with a pseudo-terminal on stdin, stdout and stderr pipes; and the
    terminal's other end."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", WITH_SIGINT, str(SCRIPT), "serve"],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(home),
    )
    os.close(follower)
    return process, leader


def interrupt(process: subprocess.Popen[bytes], leader: int) -> tuple[bytes, str]:
    """Ctrl-C (SIGINT), then what the process wrote on stdout and stderr from then on."""
    try:
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        os.close(leader)
    return stdout, stderr.decode("utf-8", "replace")


def test_serve_at_a_terminal_says_what_it_waits_for_and_how_to_connect_on_stderr(tmp_path: Path) -> None:
    process, leader = serve_at_a_terminal(tmp_path / "home")
    said = read_stderr_until(process, "connect it with:", seconds=90)  # the notice, then the log line
    assert NOTICE in said, said
    # The line that connects this checkout, with this shell's settings (the host has none of them).
    assert re.search(
        rf"claude mcp add research-mcp -e .* -- {re.escape(str(SCRIPT.resolve()))} serve\n", said
    )
    assert "-e RESEARCH_MCP_MODEL=extractive" in said
    assert "Connect a host" in said and "Ctrl-C to stop" in said
    stdout, stderr = interrupt(process, leader)
    assert stdout == b""  # nothing but the protocol goes to stdout, and no host spoke
    assert process.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr


def test_ctrl_c_while_serve_still_loads_ends_it_with_no_traceback(tmp_path: Path) -> None:
    process, leader = serve_at_a_terminal(tmp_path / "home")
    assert NOTICE in read_stderr_until(process, "Ctrl-C to stop", seconds=90)  # said before loading
    stdout, stderr = interrupt(process, leader)
    assert stdout == b""
    assert process.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr, stderr


def test_serve_started_by_a_host_does_not_address_a_person(tmp_path: Path) -> None:
    done = cli("serve", env=cli_env(tmp_path / "home"))  # stdin closed: the host went away at once
    assert done.returncode == 0, done.stderr
    assert NOTICE not in done.stderr
    assert done.stdout == ""

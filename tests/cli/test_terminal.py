"""On a terminal: `run` draws its live view with rich on stderr, and stdout still carries the report alone."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from pathlib import Path

from tests.cli.conftest import QUESTION, SCRIPT, cli_env, write_corpus


def test_on_a_terminal_the_live_view_draws_the_plan_tree_on_stderr_and_stdout_is_the_report(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path / "notes")
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = cli_env(tmp_path / "home", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    screen: list[bytes] = []

    def read_terminal() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            screen.append(chunk)

    reader = threading.Thread(target=read_terminal)
    reader.start()
    try:
        done = subprocess.run(
            [str(SCRIPT), "run", QUESTION, "--corpus", str(corpus)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=90,
            check=False,
        )
    finally:
        os.close(follower)
        reader.join(timeout=10)
        os.close(leader)
    drawn = b"".join(screen).decode("utf-8", "replace")

    assert done.returncode == 0, drawn
    assert done.stdout.startswith(f"# {QUESTION}\n") and "## Sources" in done.stdout
    assert "\x1b[" in drawn  # drawn, not printed line by line
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn)
    assert f"research: {QUESTION}" in text
    assert "✓ executor" in text and "✓ leaf" in text
    assert "2/2 nodes · 3 sources read" in text

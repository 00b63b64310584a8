"""`research-mcp run` on a terminal shows the plan and starts the run on the person's yes; `--yes` and
a stdin that is not a terminal start it unasked (the other CLI tests run with stdin closed)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import threading
from pathlib import Path

from tests.cli.conftest import QUESTION, SCRIPT, cli_env, write_corpus

PROMPT = b"Start this research run?"


def run_on_a_terminal(
    tmp_path: Path, *args: str, answer: bytes
) -> tuple[subprocess.CompletedProcess[str], str]:
    """`research-mcp run` with stdin and stderr on a pseudo-terminal, answering its question."""
    corpus = write_corpus(tmp_path / "notes")
    leader, follower = pty.openpty()
    screen: list[bytes] = []

    def converse() -> None:
        answered = False
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            screen.append(chunk)
            if not answered and PROMPT in b"".join(screen):
                os.write(leader, answer)
                answered = True

    talker = threading.Thread(target=converse)
    talker.start()
    try:
        done = subprocess.run(
            [str(SCRIPT), "run", QUESTION, "--corpus", str(corpus), *args],
            env=cli_env(tmp_path / "home", TERM="dumb"),
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=90,
            check=False,
        )
    finally:
        os.close(follower)
        talker.join(timeout=10)
        os.close(leader)
    return done, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(screen).decode("utf-8", "replace"))


def test_on_a_terminal_no_at_the_prompt_starts_nothing(tmp_path: Path) -> None:
    done, screen = run_on_a_terminal(tmp_path, answer=b"n\n")
    assert PROMPT.decode() in screen and "leaves" in screen and "estimate:" in screen
    assert done.returncode == 1 and done.stdout == ""
    assert "not started: the run was declined" in screen


def test_on_a_terminal_yes_at_the_prompt_runs_and_prints_the_report(tmp_path: Path) -> None:
    done, screen = run_on_a_terminal(tmp_path, answer=b"y\n")
    assert PROMPT.decode() in screen
    assert done.returncode == 0, screen
    assert done.stdout.startswith(f"# {QUESTION}\n")


def test_yes_skips_the_prompt_on_a_terminal(tmp_path: Path) -> None:
    done, screen = run_on_a_terminal(tmp_path, "--yes", answer=b"n\n")
    assert PROMPT.decode() not in screen
    assert done.returncode == 0 and done.stdout.startswith(f"# {QUESTION}\n")

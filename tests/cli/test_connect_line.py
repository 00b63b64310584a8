"""`doctor` prints the connect command with the settings the user has: a host starts the server
without the user's shell, so a corpus set there must travel in the command (secrets by reference)."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.cli.conftest import cli, cli_env, write_corpus


def test_doctor_prints_a_connect_line_carrying_the_corpus_and_no_secret(tmp_path: Path) -> None:
    notes = write_corpus(tmp_path / "my notes")
    home = tmp_path / "home"
    env = cli_env(home, RESEARCH_MCP_CORPUS=str(notes), TAVILY_API_KEY="tvly-not-for-printing")
    done = cli("doctor", env=env)
    line = next(line for line in done.stdout.splitlines() if "claude mcp add" in line)
    words = shlex.split(line.split(": ", 1)[1].replace('"$TAVILY_API_KEY"', "TAVILY_REF"))
    assert f"RESEARCH_MCP_CORPUS={notes}" in words and f"RESEARCH_MCP_HOME={home}" in words
    assert "tvly-not-for-printing" not in done.stdout
    assert "TAVILY_API_KEY=TAVILY_REF" in words  # passed on by reference, as the shell expands it
    assert words[-1] == "serve" and words[words.index("--") - 2] == "-e"

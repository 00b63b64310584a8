"""Every snippet in the README is exercised: commands exist, host configs parse and start the server."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from research_mcp.cli import main

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.S)


def test_the_readme_make_targets_exist_in_the_makefile() -> None:
    makefile = (Path(__file__).parents[1] / "Makefile").read_text(encoding="utf-8")
    targets = {line.split(":")[0] for line in makefile.splitlines() if re.match(r"^[a-z]+:", line)}
    commands = [
        line.split("#")[0].split() for lang, body in BLOCKS if lang == "sh" for line in body.splitlines()
    ]
    used = {words[1] for words in commands if words[:1] == ["make"]}
    assert used == {"run", "test"} and used <= targets


def test_every_research_mcp_command_in_the_readme_is_a_real_command() -> None:
    commands = [
        shlex.split(line.split("#")[0])
        for lang, body in BLOCKS
        if lang == "sh"
        for line in body.splitlines()
        if line.startswith("research-mcp")
    ]
    assert commands
    for words in commands:
        assert words[1] in main.commands, words


def test_the_host_config_snippets_run_the_serve_command() -> None:
    configs = [json.loads(body) for lang, body in BLOCKS if lang == "json"]
    assert len(configs) == 2
    for config in configs:
        (server,) = (config.get("mcpServers") or config["servers"]).values()
        assert server["command"].endswith("/.venv/bin/research-mcp")
        assert server["args"] == ["serve"]
    claude_code = next(body for lang, body in BLOCKS if lang == "sh" and "claude mcp add" in body)
    assert claude_code.split("--", 1)[1].split() == ["/path/to/research-mcp/.venv/bin/research-mcp", "serve"]


def test_doctor_says_which_backend_is_chosen_and_why() -> None:
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "no API key set" in result.output
    assert "RESEARCH_MCP_CORPUS" in result.output

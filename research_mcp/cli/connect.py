"""How to connect a host to this very server: the `claude mcp add` line `serve` tells a person at a
terminal, its log line gives and `doctor` prints. Standard library only: the console script says it
before the server loads."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["SETTINGS_PREFIXES", "claude_add_command", "terminal_notice"]

#: The environment a server takes its settings from (config.py), carried into the connect line.
SETTINGS_PREFIXES = ("RESEARCH_MCP_", "TAVILY_", "ANTHROPIC_")
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


def claude_add_command(environ: Mapping[str, str] | None = None) -> str:
    """The line that adds this very server to Claude Code: the absolute path of the running script,
    with the settings this shell has (`-e NAME=value` each: the host starts the server without this
    shell's environment, so a corpus set here would be missing there). A secret is passed by
    reference (`"$TAVILY_API_KEY"`), never printed."""
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else Path("research-mcp")
    command = str(script) if script.name == "research-mcp" and script.exists() else "research-mcp"
    env = os.environ if environ is None else environ
    settings = [
        f'-e {name}="${name}"' if _SECRET.search(name) else f"-e {shlex.quote(f'{name}={value}')}"
        for name, value in sorted(env.items())
        if name.startswith(SETTINGS_PREFIXES) and value
    ]
    return f"claude mcp add research-mcp {' '.join([*settings, '--'])} {command} serve"


def terminal_notice() -> str:
    """What `serve` on stdio tells a person who started it at a terminal: what it waits for and how
    to connect a host. For stderr: stdout is the protocol channel."""
    return (
        "research-mcp is serving MCP on stdio: it waits for a host to send protocol messages on stdin,\n"
        "so there is nothing to type here. A host starts the server itself; to connect Claude Code:\n"
        f"  {claude_add_command()}\n"
        'Claude Desktop, VS Code, Cursor: README.md, "Connect a host". Ctrl-C to stop.'
    )

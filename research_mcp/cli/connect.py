"""How to connect a host to this very server, as `serve` tells a person at a terminal. Standard
library only: the console script says it before the server loads (`doctor` and the serve log line
print the same command, with the shell's settings, once loaded)."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["claude_add_command", "terminal_notice"]


def claude_add_command() -> str:
    """The line that adds this very server to Claude Code: the absolute path of the running script."""
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else Path("research-mcp")
    command = str(script) if script.name == "research-mcp" and script.exists() else "research-mcp"
    return f"claude mcp add research-mcp -- {command} serve"


def terminal_notice() -> str:
    """What `serve` on stdio tells a person who started it at a terminal: what it waits for and how
    to connect a host. For stderr: stdout is the protocol channel."""
    return (
        "research-mcp is serving MCP on stdio: it waits for a host to send protocol messages on stdin,\n"
        "so there is nothing to type here. A host starts the server itself; to connect Claude Code:\n"
        f"  {claude_add_command()}\n"
        'Claude Desktop, VS Code, Cursor: README.md, "Connect a host". Ctrl-C to stop.'
    )

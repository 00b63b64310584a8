"""No answer and no log line echoes more than 80 characters of what a request gave (issue 46, item 7).

Before: `extract_source` with a 1.9 MB path answered a 1.9 MB error, a refused 1,819-character URL
and a 6,000-character handoff id in `resources/read` came back whole (the latter in `error.data`),
as did a 500-character unknown tool name in `error.data.name`; the log repeated each whole at INFO.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from research_mcp.core.errors import ECHO_LIMIT, MESSAGE_LIMIT
from research_mcp.core.printable import LOG_LIMIT
from research_mcp.server.app import create_server


class Lines(logging.Handler):
    """The server's log lines, formatted as a handler writes them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def log() -> Iterator[Lines]:
    handler, root = Lines(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


def longest_echo(text: str, given: str) -> int:
    """The characters of the longest run of `given`'s repeated two-character unit that `text` holds
    (each input here ends in one unit repeated)."""
    unit = given[-2:]
    runs = re.findall(f"(?:{re.escape(unit)})+", text)
    return max((len(run) for run in runs), default=0)


PATH = "/" + "ZQ" * 950_000
URL = "http://127.0.0.1/" + "ab" * 900
ID = "h_" + "cd" * 3_000
TOOL = "ef" * 250


async def test_a_refused_path_or_address_is_quoted_in_at_most_80_characters_and_so_is_the_log(
    log: Lines,
) -> None:
    async with Client(create_server()) as client:
        results = [
            await client.call_tool("extract_source", {"source": given, "questions": ["What is it?"]})
            for given in (PATH, URL)
        ]

    for result, given in zip(results, (PATH, URL), strict=True):
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error and len(text) <= MESSAGE_LIMIT
        assert 0 < longest_echo(text, given) <= ECHO_LIMIT, text
    logged = [line for line in log.lines if "ZQZQ" in line or "abab" in line]
    assert logged  # the failures are logged, with what was given cut short
    assert all(len(line) <= LOG_LIMIT and longest_echo(line, PATH) <= ECHO_LIMIT for line in logged)
    assert all(longest_echo(line, URL) <= ECHO_LIMIT for line in logged)


async def test_an_unknown_resource_or_tool_is_echoed_in_at_most_80_characters_message_and_data(
    log: Lines,
) -> None:
    errors: list[MCPError] = []
    async with Client(create_server()) as client:
        for uri in (
            f"research://handoffs/{ID}",
            f"research://runs/run_{ID}/report.md",
            f"research://nothing/{ID}",
        ):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            errors.append(raised.value)
        with pytest.raises(MCPError) as raised:
            await client.call_tool(TOOL, {})
        errors.append(raised.value)

    for error in errors:
        said = json.dumps(error.error.model_dump(), ensure_ascii=False)
        assert longest_echo(said, ID) <= ECHO_LIMIT and longest_echo(said, TOOL) <= ECHO_LIMIT, said
        assert len(said) < 600, said
    assert errors[-1].error.data == {"name": TOOL[: ECHO_LIMIT - 1] + "…"}
    assert all(longest_echo(line, ID) <= ECHO_LIMIT for line in log.lines)


@pytest.mark.parametrize(
    "command",
    [["show", "run_" + "ab" * 2_500], ["export", "h_" + "ab" * 2_500], ["index", "/" + "ab" * 3_000]],
    ids=["show", "export", "index"],
)
def test_the_command_line_quotes_at_most_80_characters_of_an_argument_it_refuses(command: list[str]) -> None:
    from click.testing import CliRunner

    from research_mcp.cli.main import main

    result = CliRunner().invoke(main, command)

    assert result.exit_code != 0
    assert 0 < longest_echo(result.output, command[-1]) <= ECHO_LIMIT, result.output

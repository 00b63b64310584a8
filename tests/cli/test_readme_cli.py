"""The command-line page the README links (docs/cli.md): every command, option and value it shows is
real, and the exit codes it documents are the ones the commands use."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click

from research_mcp.cli import main as cli

ROOT = Path(__file__).parents[2]
SECTION = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def snippet_commands() -> list[list[str]]:
    blocks = re.findall(r"```sh\n(.*?)```", SECTION, re.S)
    return [
        shlex.split(line.split("  #")[0])
        for body in blocks
        for line in body.splitlines()
        if line.startswith("research-mcp ")
    ]


def test_the_command_line_section_shows_every_command_for_people() -> None:
    shown = {words[1] for words in snippet_commands()}
    assert shown == set(cli.main.commands)


def test_every_option_and_choice_in_the_command_line_snippets_exists() -> None:
    for words in snippet_commands():
        command = cli.main.commands[words[1]]
        options = {
            opt: param for param in command.params for opt in param.opts if isinstance(param, click.Option)
        }
        for index, word in enumerate(words[2:], start=2):
            if not word.startswith("-"):
                continue
            assert word in options, (words, word)
            param = options[word]
            if isinstance(param.type, click.Choice):
                assert words[index + 1] in param.type.choices, (words, word)


def test_the_documented_run_options_and_views_match_the_commands() -> None:
    every_option = {"--help"} | {
        opt for command in cli.main.commands.values() for param in command.params for opt in param.opts
    }
    for option in re.findall(r"`(--[a-z-]+)", SECTION):
        assert option in every_option, option
    model = next(p for p in cli.main.commands["run"].params if p.name == "model")
    assert isinstance(model.type, click.Choice)
    assert "--model " + "|".join(model.type.choices) in SECTION
    views = "summary, report, sources, facts, confidence, gaps, followups, tree"
    assert views in SECTION and set(views.split(", ")) <= set(cli.VIEWS)


def test_the_exit_code_table_documents_ok_error_usage_and_interrupted() -> None:
    codes = re.findall(r"^\| (\d+) \|", SECTION, re.M)
    assert codes == ["0", "1", "2", "130"]
    assert cli.INTERRUPTED == 130
    assert click.ClickException.exit_code == 1 and click.UsageError.exit_code == 2

"""Every snippet in the README, and in the pages it links for each host's files, remote use and every
setting (docs/hosts.md, docs/http.md, docs/configuration.md), is exercised: commands exist, host
configs parse and start the server, the HTTP snippets connect to a real `serve --http` with the token
they carry; and every relative link of the README and docs/ resolves."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pydantic import AliasChoices

from research_mcp.cli.main import main
from research_mcp.core.config import Settings
from research_mcp.server.http import parse_bind, refusal
from tests.server.test_http import free_port, start_server

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
HOSTS_PAGE = (ROOT / "docs" / "hosts.md").read_text(encoding="utf-8")
HTTP_PAGE = (ROOT / "docs" / "http.md").read_text(encoding="utf-8")
CONFIGURATION_PAGE = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.S)
PLACEHOLDER = "/path/to/research-mcp"  # the checkout, in every snippet
SCRIPT = "/.venv/bin/research-mcp"
# The script the snippets name, in whatever virtualenv runs these tests (not necessarily .venv here).
INSTALLED = Path(sys.executable).parent / "research-mcp"
TOOLS = ["execute_plan", "extract_source", "plan_research", "report_results", "scout_sources"]


@pytest.fixture(autouse=True)
def no_http_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RESEARCH_MCP_HTTP_TOKEN", "RESEARCH_MCP_HTTP_ALLOWED_HOSTS"):
        monkeypatch.delenv(name, raising=False)


def section(title: str, text: str = README) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def labelled_json(text: str) -> dict[str, str]:
    """Each JSON block of a section under the **Host.** label that precedes it."""
    found: dict[str, str] = {}
    for match in re.finditer(r"```json\n(.*?)```", text, re.S):
        label = re.findall(r"\*\*([^*]+?)\.?\*\*", text[: match.start()])[-1]
        key = label if label not in found else f"{label} .mcp.json"
        found[key] = match.group(1)
    return found


# The README's snippets, and the project `.mcp.json` for Claude Code that docs/hosts.md shows.
HOST_CONFIGS = labelled_json(section("Connect a host")) | labelled_json(
    section("Where each host keeps its configuration", HOSTS_PAGE)
)


# A setting read from the environment outside Settings, before it loads (the console script's).
READ_DIRECTLY = re.compile(r'environ(?:\.get\(|\[)"(RESEARCH_MCP_\w+)"|"(RESEARCH_MCP_\w+)" in os\.environ')


def known_settings() -> set[str]:
    """Every setting the server reads: Settings' names, and those the package reads directly."""
    names = {
        name
        for source in (ROOT / "research_mcp").rglob("*.py")
        for match in READ_DIRECTLY.finditer(source.read_text(encoding="utf-8"))
        for name in match.groups()
        if name
    }
    for field in Settings.model_fields.values():
        alias = field.validation_alias
        if isinstance(alias, str):
            names.add(alias)
        elif isinstance(alias, AliasChoices):
            names.update(choice for choice in alias.choices if isinstance(choice, str))
    return names


def real_command(command: str) -> Path:
    """The script the snippet names (the checkout's .venv), as installed in the running virtualenv."""
    assert command.startswith(PLACEHOLDER) and command.endswith(SCRIPT), command
    assert os.access(INSTALLED, os.X_OK), f"{INSTALLED} is missing: run `make install`"
    return INSTALLED


def expand(value: str, replacements: dict[str, str]) -> str:
    """Fill the host's own placeholders (${workspaceFolder}, ${input:id}, ${VAR}) as the host would."""
    for placeholder, actual in replacements.items():
        value = value.replace(placeholder, actual)
    value = re.sub(r"\$\{input:([\w-]+)\}", r"test-\1", value)
    value = re.sub(r"\$\{(\w+)\}", r"test-\1", value)
    assert "${" not in value, value
    return value


def shell_lines(text: str, start: str) -> list[list[str]]:
    return [
        shlex.split(line.split(" #")[0])
        for body in blocks(text, "sh")
        for line in body.splitlines()
        if line.startswith(start)
    ]


def test_the_readme_make_targets_exist_in_the_makefile() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = {line.split(":")[0] for line in makefile.splitlines() if re.match(r"^[a-z]+:", line)}
    commands = [
        line.split("#")[0].split() for lang, body in BLOCKS if lang == "sh" for line in body.splitlines()
    ]
    used = {words[1] for words in commands if words[:1] == ["make"]}
    assert used == {"install", "run", "test"} and used <= targets


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


def test_every_host_config_parses_and_runs_the_venv_script_with_serve() -> None:
    assert set(HOST_CONFIGS) == {"Claude Desktop", "Claude Code", "VS Code", "Cursor"}
    for label, body in HOST_CONFIGS.items():
        config = json.loads(body)
        servers = config.get("mcpServers") or config["servers"]
        assert list(servers) == ["research-mcp"], label
        server = servers["research-mcp"]
        assert server.get("type", "stdio") == "stdio", label
        assert server["command"].endswith(SCRIPT), label
        assert server["args"][:1] == ["serve"], label
        assert set(server.get("env", {})) <= known_settings(), label


@pytest.mark.parametrize("label", sorted(HOST_CONFIGS))
async def test_each_host_config_starts_the_server_and_lists_the_five_tools(
    label: str, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "reef.md").write_text("# Reef\n\nThe Great Barrier Reef lies in the Coral Sea.\n")
    (tmp_path / "docs").mkdir()
    server = json.loads(HOST_CONFIGS[label])
    server = (server.get("mcpServers") or server["servers"])["research-mcp"]
    replacements = {"/path/to/your/notes": str(notes), "${workspaceFolder}": str(tmp_path)}
    env = {name: expand(value, replacements) for name, value in server.get("env", {}).items()}
    params = StdioServerParameters(
        command=str(real_command(server["command"])),
        args=server["args"],
        env={
            **env,
            "RESEARCH_MCP_HOME": str(tmp_path / "home"),
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),  # this checkout's code, whichever checkout the venv was made in
            "HF_HUB_OFFLINE": "1",
        },
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            assert sorted(tool.name for tool in (await client.list_tools()).tools) == TOOLS


def test_the_claude_code_lines_add_a_real_serve_invocation() -> None:
    lines = shell_lines(section("Connect a host"), "claude mcp add")
    assert len(lines) == 2
    for words in lines:
        split = words.index("--")
        assert words[split - 1] == "research-mcp"  # the server's name, after every option
        command, *args = words[split + 1 :]
        real_command(command)
        assert args == ["serve"]
        main.commands["serve"].make_context("serve", args[1:])
        settings = {value.split("=", 1)[0] for flag, value in itertools.pairwise(words) if flag == "--env"}
        assert settings <= known_settings()


def test_the_inspector_line_starts_the_real_command_with_known_settings() -> None:
    (words,) = shell_lines(section("Connect a host"), "npx")
    assert words[:2] == ["npx", "@modelcontextprotocol/inspector"]
    rest = words[2:]
    settings = set()
    while rest[0] == "-e":
        settings.add(rest[1].split("=", 1)[0])
        rest = rest[2:]
    command, *args = rest
    real_command(command)
    assert args == ["serve"]
    assert settings and settings <= known_settings()


def exported_settings() -> dict[str, str]:
    """The `export` lines of the HTTP section, run by a shell as written: what the server is given."""
    exports = [line for body in blocks(HTTP_PAGE, "sh") for line in body.splitlines()]
    script = "\n".join(line for line in exports if line.startswith("export "))
    names = re.findall(r"^export (\w+)=", script, re.M)
    shown = subprocess.run(
        ["bash", "-c", script + "\n" + "".join(f'printf "%s\\n" "${name}"\n' for name in names)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.splitlines()
    return dict(zip(names, shown, strict=True))


def test_the_http_serve_lines_bind_loopback_alone_and_everywhere_only_with_the_exported_token() -> None:
    lines = shell_lines(HTTP_PAGE, "research-mcp serve")
    binds = []
    for words in lines:
        context = main.commands["serve"].make_context("serve", words[2:])
        binds.append(parse_bind(context.params["http_address"]))
    loopback, everywhere = binds
    assert loopback.loopback and refusal(Settings(), loopback) is None
    assert not everywhere.loopback and refusal(Settings(), everywhere) is not None
    exported = exported_settings()
    assert len(exported["RESEARCH_MCP_HTTP_TOKEN"]) >= 32
    settings: dict[str, Any] = dict(exported)
    assert refusal(Settings(**settings), everywhere) is None


def http_snippets(token: str) -> dict[str, tuple[str, dict[str, str]]]:
    """The URL and headers each HTTP client snippet gives, with the token filled in."""
    text = HTTP_PAGE
    (claude,) = shell_lines(text, "claude mcp add")
    assert claude[claude.index("--transport") + 1] == "http"
    header = claude[claude.index("--header") + 1].replace("$RESEARCH_MCP_HTTP_TOKEN", token)
    name, _, value = header.partition(": ")
    (vscode,) = (json.loads(body) for body in blocks(text, "json"))
    server = vscode["servers"]["research-mcp"]
    assert server["type"] == "http"
    (prompt,) = vscode["inputs"]
    headers = {key: v.replace(f"${{input:{prompt['id']}}}", token) for key, v in server["headers"].items()}
    return {"Claude Code": (claude[-1], {name: value}), "VS Code": (server["url"], headers)}


async def test_the_http_client_snippets_reach_the_server_the_http_section_starts(tmp_path: Path) -> None:
    exported = exported_settings()
    (_, everywhere) = shell_lines(HTTP_PAGE, "research-mcp serve")
    port = free_port()
    address = everywhere[-1].replace(":8000", f":{port}")
    server = start_server(address, tmp_path / "home", port, **exported)
    try:
        for label, (url, headers) in http_snippets(exported["RESEARCH_MCP_HTTP_TOKEN"]).items():
            parts = urlsplit(url)
            assert parts.path == "/mcp" and parts.port == 8000, label
            local = urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}"))
            # Connect here, but name the host as the snippet does: the server must accept that name.
            sent = {**headers, "Host": f"{parts.hostname}:{port}"}
            with anyio.fail_after(60):
                async with (
                    httpx2.AsyncClient(headers=sent) as http,
                    Client(streamable_http_client(local, http_client=http)) as client,
                ):
                    assert sorted(tool.name for tool in (await client.list_tools()).tools) == TOOLS, label
    finally:
        server.stop()
    assert "research.example.org" in server.stderr  # the log says which Host names are accepted


def table_settings(text: str) -> set[str]:
    """The settings a Markdown table names: the upper-case names in backquotes of its rows."""
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split(" | ")[0])}


def test_the_configuration_page_lists_every_setting_the_server_reads() -> None:
    table = table_settings(CONFIGURATION_PAGE)
    assert table == known_settings()
    assert {"RESEARCH_MCP_HTTP_TOKEN", "RESEARCH_MCP_HTTP_ALLOWED_HOSTS"} <= table


def test_the_readme_settings_are_real_and_link_the_whole_list() -> None:
    text = section("Settings that matter")
    table = table_settings(text)
    assert {"RESEARCH_MCP_CORPUS", "ANTHROPIC_API_KEY", "TAVILY_API_KEY", "RESEARCH_MCP_MODEL"} <= table
    assert table <= known_settings()
    assert "(docs/configuration.md)" in text


def test_the_readme_links_the_store_format_doc() -> None:
    links = re.findall(r"\]\(([^)]+)\)", section("Documentation"))
    assert "docs/STORE.md" in links and (ROOT / "docs" / "STORE.md").exists()


def test_the_readme_is_read_in_one_sitting() -> None:
    assert len(README.encode("utf-8")) <= 12_000


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {anchor(heading) for heading in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize(
    "page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
)
def test_every_relative_link_resolves_to_a_file_and_heading(page: str) -> None:
    source = ROOT / page
    text = re.sub(r"```.*?```", "", source.read_text(encoding="utf-8"), flags=re.S)
    links = [link for link in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", link)]
    broken = []
    for link in links:
        path, _, fragment = link.partition("#")
        target = (source.parent / path).resolve() if path else source
        if not target.exists() or (fragment and fragment not in anchors(target)):
            broken.append(link)
    assert broken == []
    if page == "README.md":  # every page in docs/ the README leads to
        assert {link.split("#")[0] for link in links if link.startswith("docs/")} >= {
            f"docs/{name}"
            for name in ("how-it-works.md", "backends.md", "sources.md", "knowledge-base.md", "http.md")
        }


def test_doctor_says_which_backend_is_chosen_and_why() -> None:
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 1, result.output  # no corpus and no web search: a problem, named
    assert "problem: nothing to search" in result.output
    assert "no API key set" in result.output
    assert "RESEARCH_MCP_CORPUS" in result.output

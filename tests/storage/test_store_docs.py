"""docs/STORE.md is the store's open-format description: it names exactly the tables and columns a
fresh store has, and its example queries and export commands work on a store a real run filled."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.server.app import create_server
from research_mcp.storage.models import Run, RunEvent, RunNode, StoredPlan
from research_mcp.storage.outputs import (
    OUTPUTS,
    Handoff,
    StoredCuration,
    StoredExtraction,
    StoredPlanning,
    StoredSynthesis,
)
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished

DOC = (Path(__file__).parents[2] / "docs" / "STORE.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
REEF = (
    "The Great Barrier Reef is the largest coral reef system in the world. "
    "It is located in the Coral Sea off the coast of Queensland, Australia. "
    "The reef is composed of over 2,900 individual reefs and 900 islands."
)


def documented_schema() -> dict[str, set[str]]:
    """Each `### `table`` section of the doc and the `column` names in the first cell of its table rows."""
    schema: dict[str, set[str]] = {}
    for table, body in re.findall(r"^### `(\w+)`\n(.*?)(?=^#{2,3} |\Z)", DOC, re.M | re.S):
        schema[table] = set(re.findall(r"^\| `(\w+)` \|", body, re.M))
    return schema


def actual_schema(db: sqlite3.Connection) -> dict[str, set[str]]:
    """Tables and virtual tables a user sees; SQLite's own and FTS5's shadow tables left out."""
    tables = [
        name
        for schema, name, kind, *_ in db.execute("PRAGMA table_list")
        if schema == "main" and kind in ("table", "virtual") and not name.startswith("sqlite_")
    ]
    return {name: {row[1] for row in db.execute(f"PRAGMA table_info({name})")} for name in tables}


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_the_doc_names_every_table_and_column_of_a_fresh_store_and_nothing_else(tmp_path: Path) -> None:
    store = Store(tmp_path / "research.db")
    try:
        actual = actual_schema(store.db.conn)
    finally:
        store.close()
    documented = documented_schema()
    assert "facts" in documented and "canonical_id" in documented["facts"]  # the parser reads the doc
    assert documented == actual


@pytest.fixture
async def filled_store(research_home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store holding one finished run of the extractive backend, with facts, sources and events."""
    monkeypatch.setenv("RESEARCH_MCP_MODEL", "extractive")
    tree = {
        "root": {
            "kind": "executor",
            "title": "reef",
            "children": [
                {"kind": "leaf", "title": "reef", "questions": ["Where is the reef?"], "sources": [REEF]}
            ],
        }
    }
    async with Client(create_server(Settings())) as client:
        plan = await client.call_tool(
            "plan_research", {"query": "Where is the reef?", "suggested_plan": tree}
        )
        assert plan.structured_content is not None, plan.content
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 50}
            ),
        )
        assert run.structured_content is not None and run.structured_content["status"] == "done", run.content
        return str(run.structured_content["id"])


async def test_every_example_query_runs_and_finds_the_run_it_describes(
    filled_store: str, research_home: Path
) -> None:
    queries = blocks("sql")
    assert len(queries) >= 3
    with sqlite3.connect(f"file:{research_home / 'research.db'}?mode=ro", uri=True) as db:
        for query in queries:
            params = {"run_id": filled_store} if ":run_id" in query else {}
            rows = db.execute(query, params).fetchall()
            assert rows, query
        facts = db.execute(queries[1], {"run_id": filled_store}).fetchall()
        assert any("Coral Sea" in row[2] for row in facts)  # a verified quote, with its source
        assert db.execute(queries[0]).fetchone()[0] == filled_store


DEFAULT_DB = "~/.local/share/research-mcp/research.db"


async def test_the_export_and_backup_commands_work_on_a_filled_store(
    filled_store: str, research_home: Path
) -> None:
    lines = [line.split("#")[0].strip() for block in blocks("sh") for line in block.splitlines()]
    commands = [line for line in lines if line and not line.startswith("datasette")]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = 0
    for line in commands:
        command = line.replace("RUN_ID", filled_store).replace(DEFAULT_DB, str(research_home / "research.db"))
        if shutil.which(shlex.split(command)[0], path=env["PATH"]) is None:
            continue  # sqlite3 is SQLite's own shell, not part of research-mcp: run where it is installed
        result = subprocess.run(
            command, shell=True, cwd=research_home, env=env, capture_output=True, timeout=60
        )
        assert result.returncode == 0, (command, result.stderr)
        ran += 1
    assert ran >= 3
    assert (research_home / "facts.csv").read_text().startswith("id,run_id,handoff_id,source_id,statement")
    if shutil.which("sqlite3"):
        assert ran == len(commands)
        assert "CREATE TABLE" in (research_home / "research.sql").read_text()
        with sqlite3.connect(research_home / "research-copy.db") as copy:
            assert copy.execute("SELECT id FROM runs").fetchone()[0] == filled_store


def test_the_datasette_line_opens_the_default_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    (browse,) = [
        line for block in blocks("sh") for line in block.splitlines() if line.startswith("datasette")
    ]
    assert shlex.split(browse) == ["datasette", DEFAULT_DB]
    if sys.platform.startswith("linux"):
        default = Path(platformdirs.user_data_dir("research-mcp", appauthor=False)) / "research.db"
        assert Path(DEFAULT_DB).expanduser() == default


def documented_outputs() -> dict[str, set[str]]:
    """Each `### … (`Model`)` section of the outputs part of the doc and the keys its table lists."""
    part = DOC.split("## What a handoff's output holds, by role", 1)[1].split("\n## ", 1)[0]
    return {
        model: set(re.findall(r"^\| `(\w+)` \|", body, re.M))
        for model, body in re.findall(r"^### [^\n]*\(`(\w+)`\)\n(.*?)(?=^### |\Z)", part, re.M | re.S)
    }


def test_the_doc_names_every_key_of_each_roles_stored_output() -> None:
    documented = documented_outputs()
    common = {"cached", "cached_from"}  # described once, for every role
    assert documented == {
        model.__name__: set(model.model_fields) - common
        for model in (StoredPlanning, StoredExtraction, StoredSynthesis, StoredCuration)
    }
    assert all(common <= set(model.model_fields) for model in OUTPUTS.values())


def test_the_row_models_have_exactly_the_columns_of_their_tables() -> None:
    store = Store(":memory:")
    try:
        actual = actual_schema(store.db.conn)
    finally:
        store.close()
    for model, table in ((StoredPlan, "plans"), (Run, "runs"), (RunNode, "nodes"), (RunEvent, "events")):
        assert set(model.model_fields) == actual[table], model.__name__
    assert set(Handoff.model_fields) == actual["handoffs"]

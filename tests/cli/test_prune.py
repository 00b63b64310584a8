"""`research-mcp prune` at the terminal: by the retention setting, by id, and doctor's consistency check.

Each test works on its own copy of the module's finished run (`harbour`: one `research-mcp run`
over the notes), not on a run of its own."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from tests.cli.conftest import FinishedRun, cli, cli_env


def copy_of(harbour: FinishedRun, home: Path) -> dict[str, str]:
    """The environment of a data folder copied from the finished run's, over the same notes."""
    shutil.copytree(harbour.env["RESEARCH_MCP_HOME"], home)
    return cli_env(home, RESEARCH_MCP_CORPUS=str(harbour.corpus))


def test_prune_deletes_runs_past_the_retention_setting_and_doctor_finds_the_store_consistent(
    tmp_path: Path, harbour: FinishedRun
) -> None:
    env = copy_of(harbour, tmp_path / "home")
    [run_id] = [line.split()[0] for line in cli("runs", env=env).stdout.splitlines()[1:]]
    assert run_id == harbour.run_id

    unset = cli("prune", env=env)
    assert unset.returncode == 2 and "RESEARCH_MCP_RETENTION_DAYS" in unset.stderr
    kept = cli("prune", env={**env, "RESEARCH_MCP_RETENTION_DAYS": "30"})
    assert kept.stdout == "0 runs to prune\n"  # the run is minutes old, not a month
    retention = {**env, "RESEARCH_MCP_RETENTION_DAYS": "1e-9"}  # finished longer ago than 0.1 ms
    assert cli("prune", "--dry-run", env=retention).stdout == f"1 runs to prune: {run_id}\n"

    pruned = cli("prune", env=retention)

    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.startswith(f"{run_id}: ") and pruned.stdout.endswith("pruned 1 of 1 runs\n")
    assert cli("runs", "--json", env=env).stdout.strip() == "[]"
    doctor = cli("doctor", env=env)
    assert doctor.returncode == 0, doctor.stdout
    assert "consistency:  every reference in the store points at a row" in doctor.stdout


def test_doctor_names_a_dangling_reference_and_exits_1(tmp_path: Path, harbour: FinishedRun) -> None:
    env = copy_of(harbour, tmp_path / "home")
    with sqlite3.connect(tmp_path / "home" / "research.db") as db:  # an edit from outside
        db.execute("INSERT INTO events (run_id, kind, message, at) VALUES ('run_gone', 'x', 'x', 'now')")

    doctor = cli("doctor", env=env)

    assert doctor.returncode == 1
    assert "problem: the store holds 1 events of a run that is gone" in doctor.stdout
    refused = cli("prune", "run_000000000000", env=env)
    assert refused.returncode == 1 and "run_000000000000: not pruned: No run with id" in refused.stdout

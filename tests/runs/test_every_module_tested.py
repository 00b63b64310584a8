"""Every module of the run engine has a test that imports it (issue 28: tested module by module)."""

from __future__ import annotations

import re
from pathlib import Path

import research_mcp.runs

TESTS = Path(__file__).resolve().parents[1]


def test_every_runs_module_is_imported_by_a_test() -> None:
    package = Path(research_mcp.runs.__file__).parent
    modules = sorted(path.stem for path in package.glob("*.py") if path.stem != "__init__")
    imported = {
        match
        for path in TESTS.rglob("test_*.py")
        for match in re.findall(r"research_mcp\.runs\.(\w+) import", path.read_text(encoding="utf-8"))
    }
    assert [module for module in modules if module not in imported] == []

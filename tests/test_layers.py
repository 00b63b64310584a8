"""The store owns all SQL: no module outside research_mcp/storage/ writes SQL, reaches into the store's
database (`store.db`, `store.write()`), or calls its private helpers (`_one`, `_all`, `_lock`...)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "research_mcp"
STORAGE = PACKAGE / "storage"
SQL = re.compile(
    r"\b(SELECT\s.+\sFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b",
    re.S,
)
# What only the store's own modules may touch: its database and its write transaction.
STORE_INSIDES = {"db", "write", "conn"}
STORE_RECEIVER = re.compile(r"(^|_)store$")


def _receiver(node: ast.expr) -> str:
    """The name an attribute is read from: `store` in `store.db`, `_store` in `self._store.write`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _receiver(node.func)
    return ""


def store_violations(source: str) -> list[str]:
    """Where this module's code writes SQL or reaches past the store's public methods."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            receiver = _receiver(node.value)
            if node.attr in ("_one", "_all"):
                found.append(f"line {node.lineno}: .{node.attr}")
            elif STORE_RECEIVER.search(receiver) and (
                node.attr in STORE_INSIDES or node.attr.startswith("_")
            ):
                found.append(f"line {node.lineno}: {receiver}.{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            found.append(f"line {node.lineno}: SQL {node.value[:40]!r}")
    return found


def test_the_scan_finds_sql_and_each_way_past_the_stores_methods() -> None:
    code = """
rows = store._all("x")
row = deps.store._one("x")
with self._store.write() as conn:
    pass
store.db.query("x")
rc.deps.store._lock.acquire()
text = "SELECT id FROM runs WHERE id = ?"
f"UPDATE runs SET status = {status}"
"""
    assert len(store_violations(code)) == 7
    assert store_violations("store.get_run(run_id).status\nprint('select a source from the list')") == []


def test_no_module_outside_storage_writes_sql_or_touches_the_stores_insides() -> None:
    modules = [path for path in PACKAGE.rglob("*.py") if not path.is_relative_to(STORAGE)]
    assert len(modules) > 40
    violations = {
        str(path.relative_to(PACKAGE)): found
        for path in modules
        if (found := store_violations(path.read_text(encoding="utf-8")))
    }
    assert violations == {}

"""Fixtures of the source tests: a real SQLite store in a temp folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from research_mcp.storage.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "research.db")
    yield opened
    opened.close()

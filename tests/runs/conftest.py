"""The engine's unit tests share a store in the test's own data folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from research_mcp.core.config import Settings
from research_mcp.storage.store import Store


@pytest.fixture
def temp_store(research_home: Path) -> Iterator[Store]:
    store = Store(Settings().database_path)
    try:
        yield store
    finally:
        store.close()

"""A corpus folder for a test, and waiting until a server has finished indexing it in the background."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

STATUS = "research://corpus/status"


def notes_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notes: Mapping[str, str]) -> Path:
    """A folder of notes (file name -> text) that a server created in the test takes as its corpus."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    return folder


async def corpus_status(client: Client) -> dict[str, Any]:
    result = await client.read_resource(STATUS)
    return dict(json.loads(result.contents[0].text))  # type: ignore[union-attr]


async def wait_until_indexed(client: Client, timeout: float = 300) -> dict[str, Any]:
    """The corpus status once the background pass has ended (ready, stopped or failed); the bound
    is generous because several test processes may share two cores."""
    with anyio.fail_after(timeout):
        while True:
            status = await corpus_status(client)
            if status["phase"] in ("ready", "stopped", "failed", "not_configured"):
                return status
            await anyio.sleep(0.05)

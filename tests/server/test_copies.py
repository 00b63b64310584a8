"""Copies count once through the tools: the scout lists a copied document as one cluster (the
knowledge base's count of independent sources: tests/knowledge/test_dedup.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed

_FILLER = " ".join(
    f"Kelp note {n}: the forest canopy shades the floor and the holdfast grips rock number {n}."
    for n in range(40)
)
_KELP = f"Giant kelp can grow up to 60 centimetres in a single day. {_FILLER}"
NOTES = {
    "kelp growth.txt": _KELP,
    "kelp growth copy.txt": _KELP,  # a byte-identical copy under another name
    "reef survey.txt": "Coral reefs cover less than one percent of the ocean floor. " * 3,
}


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def test_the_scout_lists_a_copy_as_one_cluster_with_the_document_it_copies(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        scouted = await client.call_tool("scout_sources", {"topic": "how fast does giant kelp grow"})
        sources = await client.call_tool(
            "report_results", {"id": scouted.structured_content["id"], "view": "sources"}
        )
    lines = [line for line in sources.structured_content["text"].splitlines() if "kelp growth" in line]
    assert len(lines) == 1, lines  # one source for the two files
    assert "copies, one source with it: <corpus:" in lines[0]

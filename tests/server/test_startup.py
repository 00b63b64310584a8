"""First contact over stdio: the server answers at once and indexes its corpus in the background.

A host gives a server a few seconds (MCP Inspector 15 s, some agent frameworks 5 s) to answer
`initialize`, whatever indexing the corpus takes. Here indexing is held after a set number of
documents (tests/gate.py: the test decides, not the machine's speed), and the installed
`research-mcp serve` must answer meanwhile, then report what its searches could see.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from mcp import Client

from research_mcp.core.config import Settings
from tests.gate import ReadGate
from tests.server.indexing import corpus_status
from tests.server.test_stdio import script, server_params

__all__ = ["script", "write_notes"]

HELD_AFTER = 40
TOPICS = ["glacier retreat", "kelp forests", "river deltas", "desert dunes", "coral spawning"]


def write_notes(folder: Path, count: int) -> Path:
    """`count` short Markdown notes, each different, one chunk each."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        (folder / f"note-{i:05d}.md").write_text(
            f"# Field note {i} on {topic}\n\nObservation {i}: the {topic} survey at site {i * 7 % 101} "
            f"recorded {i % 13 + 2} changes since the previous visit, measured over {i % 9 + 1} days. "
            f"The team compared it with sites {i % 17} and {i % 23}, and noted weather, access and "
            f"equipment. Follow-up {i % 5} is planned for the next season.\n",
            encoding="utf-8",
        )
    return folder


async def test_serve_answers_before_indexing_ends_and_a_search_says_how_much_it_covered(
    script: Path, tmp_path: Path
) -> None:
    notes = write_notes(tmp_path / "notes", 300)
    gate = ReadGate(tmp_path / "gate")  # indexing is held after 40 notes until the test lets it go
    params = server_params(
        Settings().home,
        RESEARCH_MCP_CORPUS=str(notes),
        RESEARCH_MCP_MODEL="extractive",
        **gate.env(reads=HELD_AFTER),
    )
    async with Client(params, mode="legacy") as client:  # returns once `initialize` is answered
        try:
            tools = (await client.list_tools()).tools
            at_start = await corpus_status(client)
            await gate.wait_held()  # 40 notes read, the 41st held
            # Two files are read at once: the 40th may still be on its way to the store.
            with anyio.fail_after(60):
                while (await corpus_status(client))["documents_indexed"] < HELD_AFTER:
                    await anyio.sleep(0.05)
            scouted = await client.call_tool("scout_sources", {"topic": "glacier retreat survey"})
            later = await corpus_status(client)
        finally:
            gate.open()  # the server, closed, stops its pass

    assert len(tools) == 5
    assert at_start["phase"] in ("waiting", "scanning", "reading")  # answered while still indexing
    assert (later["phase"], later["documents_indexed"], later["documents_total"]) == (
        "reading",
        HELD_AFTER,
        300,
    )
    assert not scouted.is_error, scouted.content
    covered = scouted.structured_content["metrics"]["corpus"]
    assert re.fullmatch(rf"{HELD_AFTER} of 300 documents indexed( \(about .+ left\))?", covered), covered
    assert any(
        f"{HELD_AFTER} of 300 documents indexed" in line for line in scouted.structured_content["summary"]
    )

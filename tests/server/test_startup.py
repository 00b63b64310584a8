"""First contact over stdio: the server answers at once and indexes its corpus in the background.

A host gives a server a few seconds (MCP Inspector 15 s, some agent frameworks 5 s) to answer
`initialize`. Here the corpus is large enough that indexing it takes far longer than that, and
the installed `research-mcp serve` must answer first, then report what its searches could see.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from mcp import Client

from research_mcp.config import Settings
from tests.server.indexing import corpus_status
from tests.server.test_stdio import script, server_params

__all__ = ["script", "write_notes"]

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
    notes = write_notes(tmp_path / "notes", 2000)
    params = server_params(Settings().home, RESEARCH_MCP_CORPUS=str(notes), RESEARCH_MCP_MODEL="extractive")
    async with Client(params, mode="legacy") as client:  # returns once `initialize` is answered
        tools = (await client.list_tools()).tools
        at_start = await corpus_status(client)
        with anyio.fail_after(60):  # the scan of the folders (stat only) ends; reading begins
            while (await corpus_status(client))["phase"] in ("waiting", "scanning"):
                await anyio.sleep(0.05)
        scouted = await client.call_tool("scout_sources", {"topic": "glacier retreat survey"})
        later = await corpus_status(client)

    assert len(tools) == 5
    assert at_start["phase"] in ("waiting", "scanning", "reading")  # answered while still indexing
    assert later["phase"] != "ready"
    assert not scouted.is_error, scouted.content
    covered = scouted.structured_content["metrics"]["corpus"]
    match = re.fullmatch(r"([\d,]+) of 2,000 documents indexed.*", covered)
    assert match is not None, covered
    assert int(match.group(1).replace(",", "")) < 2000
    assert any("of 2,000 documents indexed" in line for line in scouted.structured_content["summary"])

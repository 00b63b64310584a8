"""The user's own documents through the tools: the scout finds them, extractors read them by id."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import anyio
import pytest
from mcp import Client

from research_mcp.server.app import create_server
from research_mcp.sources.library import SourceLibrary
from tests.server.indexing import corpus_status, notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    "kelp forests.md": "# Kelp forests\n\nKelp forests grow in cold, nutrient-rich coastal waters. "
    "Giant kelp can grow up to 60 centimetres in a single day. Sea otters protect kelp by eating urchins.\n",
    "coral reefs.txt": "Coral reefs cover less than one percent of the ocean floor. "
    "They support about a quarter of all marine species.\n",
    "deserts.html": "<html><head><title>Deserts</title></head><body><p>Deserts receive less than "
    "250 millimetres of rain a year.</p></body></html>",
}


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def test_a_no_key_user_researches_their_own_notes_and_gets_a_cited_report(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        assert (await wait_until_indexed(client))["line"] == "corpus: 3 documents indexed"
        scouted = await client.call_tool("scout_sources", {"topic": "how fast does giant kelp grow"})
        assert "Kelp forests" in scouted.structured_content["summary"][1]
        ranked = await client.call_tool(
            "report_results", {"id": scouted.structured_content["id"], "view": "sources"}
        )
        assert ranked.structured_content["text"].splitlines()[0].split("<")[1].startswith("corpus:")

        plan = await client.call_tool("plan_research", {"query": "How fast does giant kelp grow?"})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == "done"
        report = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "report"}
        )
        sources = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "sources"}
        )
    # The passage saying it, quoted on a line that cites its fact.
    [line] = [
        line
        for line in report.structured_content["text"].splitlines()
        if "60 centimetres in a single day" in line
    ]
    assert re.search(r"\[F\d+\]", line), line
    metadata = json.loads(report.structured_content["text"].split("metadata: ", 1)[1])
    assert metadata["searches"] >= 1 and metadata["sources_read"] >= 1  # the leaf searched the corpus
    assert "Kelp forests (kelp forests.md) <corpus:" in sources.structured_content["text"]


async def test_extract_source_reads_a_corpus_document_by_id(corpus: Path) -> None:
    async with Client(create_server()) as client:
        await wait_until_indexed(client)
        # Files are read two at once and numbered as they are stored: the note's id is looked up.
        scouted = await client.call_tool("scout_sources", {"topic": "coral reefs ocean floor"})
        sources = await client.call_tool(
            "report_results", {"id": scouted.structured_content["id"], "view": "sources"}
        )
        found = re.search(r"coral reefs[^<\n]*<(corpus:\d+)>", sources.structured_content["text"])
        assert found is not None, sources.structured_content["text"]
        result = await client.call_tool(
            "extract_source",
            {"source": found.group(1), "questions": ["What share of the ocean floor do reefs cover?"]},
        )
        facts = await client.call_tool(
            "report_results", {"id": result.structured_content["id"], "view": "facts"}
        )
    assert not result.is_error, result.content
    text = facts.structured_content["text"]
    assert "[verified]" in text


async def test_a_document_saved_while_the_server_runs_is_found_by_the_next_rescan(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_CORPUS_RESCAN", "0.2")
    async with Client(create_server(), mode="legacy") as client:
        assert (await wait_until_indexed(client))["line"] == "corpus: 3 documents indexed"
        (corpus / "tundra.md").write_text(
            "# Tundra\n\nPermafrost underlies most of the Arctic tundra and thaws a little each summer.\n",
            encoding="utf-8",
        )
        with anyio.fail_after(60):
            while (await corpus_status(client))["documents_indexed"] < 4:
                await anyio.sleep(0.1)
        scouted = await client.call_tool("scout_sources", {"topic": "permafrost in the Arctic tundra"})
        assert "Tundra" in scouted.structured_content["summary"][1]
        # Rescans that find nothing new keep the corpus ready: a search never says it saw only part.
        for _ in range(10):
            status = await corpus_status(client)
            assert status["phase"] == "ready", status
            await anyio.sleep(0.05)
        assert "indexed so far" not in json.dumps(scouted.structured_content)


async def test_a_file_name_that_is_not_utf8_leaves_the_served_corpus_indexing_to_the_end(
    corpus: Path,
) -> None:
    (corpus / os.fsdecode(b"m\xe9moire.md")).write_text("# Memoire\n\nHerons nest in April.\n")
    async with Client(create_server(), mode="legacy") as client:
        status = await wait_until_indexed(client)
    assert (status["phase"], status["error"], status["documents_indexed"]) == ("ready", None, 4)


async def test_extract_source_reads_a_corpus_file_by_a_path_relative_to_the_corpus_folder(
    corpus: Path,
) -> None:
    (corpus / "reefs").mkdir()
    (corpus / "reefs" / "atolls.md").write_text("# Atolls\n\nAn atoll is a ring of coral around a lagoon.\n")
    async with Client(create_server()) as client:
        await wait_until_indexed(client)
        asked = {  # one path under the 20 characters of a text; each asked what it says
            "reefs/atolls.md": "What is an atoll?",
            "coral reefs.txt": "How much of the ocean floor do coral reefs cover?",
        }
        results = [
            await client.call_tool("extract_source", {"source": source, "questions": [question]})
            for source, question in asked.items()
        ]
        facts = [
            await client.call_tool("report_results", {"id": r.structured_content["id"], "view": "facts"})
            for r in results
        ]
    assert not any(r.is_error for r in results), [r.content for r in results]
    assert "ring of coral around a lagoon" in facts[0].structured_content["text"]
    assert "one percent of the ocean floor" in facts[1].structured_content["text"]


async def test_a_corpus_still_indexing_is_named_once_in_a_runs_gaps_with_the_latest_count(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each leaf's search sees how much of the corpus is indexed at that moment; the run's gaps say it
    once, with the most documents any search saw (as each leaf's report had said it)."""
    seen = iter(range(1_000, 1_000_000, 7))

    def coverage(library: SourceLibrary) -> str:
        return f"corpus: {next(seen):,} of 2,536 documents indexed (about 1 s left)"

    plan = [
        {"parent": None, "kind": "executor", "title": "ocean life"},
        {"parent": 0, "kind": "leaf", "title": "kelp", "questions": ["How fast does giant kelp grow?"]},
        {
            "parent": 0,
            "kind": "leaf",
            "title": "reefs",
            "questions": ["How much ocean floor do reefs cover?"],
        },
    ]
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        monkeypatch.setattr(SourceLibrary, "corpus_coverage", coverage)
        planned = await client.call_tool("plan_research", {"query": "ocean life", "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
            ),
        )
        gaps = await client.call_tool("report_results", {"id": run.structured_content["id"], "view": "gaps"})
    said = [line for line in gaps.structured_content["text"].splitlines() if "indexed so far" in line]
    assert len(said) == 1, gaps.structured_content["text"]
    counts = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) of 2,536", said[0])]
    assert counts and counts[0] >= 1_007  # not the first search's: a later one's


async def test_a_corpus_path_whose_name_is_too_long_for_the_file_system_says_so(corpus: Path) -> None:
    """Issue 46: a name over 255 bytes answered a bare "Error executing tool" (ENAMETOOLONG, with a
    traceback in the log)."""
    async with Client(create_server()) as client:
        await wait_until_indexed(client)
        results = [
            await client.call_tool("extract_source", {"source": str(path), "questions": ["What?"]})
            # 304 bytes; 130 characters but 263 bytes in UTF-8
            for path in (corpus / ("n" * 300 + ".md"), corpus / ("\u00e9" * 130 + ".txt"))
        ]
    for result in results:
        text = result.content[0].text  # type: ignore[union-attr]
        assert (
            result.is_error and "cannot be read (File name too long)" in text and "corpus folders" in text
        ), text

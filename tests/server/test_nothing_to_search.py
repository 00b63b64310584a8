"""When there is nothing to search, or nothing relevant, the tools say so and how to fix it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.server.app import create_server
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished

REPO = Path(__file__).resolve().parents[2]
QUESTION = "What does the notes folder say about harbour ferries?"


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository's own documentation as the corpus: the folder a new user first tried."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("SECURITY.md", "docs/ARCHITECTURE.md"):
        shutil.copy(REPO / name, folder / Path(name).name)
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    return folder


async def test_scout_says_nothing_relevant_rather_than_ranking_unrelated_documents(docs: Path) -> None:
    async with Client(create_server(model=ExtractiveModel())) as client:
        await wait_until_indexed(client)
        zebras = await client.call_tool("scout_sources", {"topic": "zebra migration in the Serengeti"})
        citations = await client.call_tool("scout_sources", {"topic": "how are citations checked"})

    assert zebras.structured_content["metrics"]["ranked"] == 0
    assert zebras.structured_content["summary"][1].startswith(
        "nothing relevant found: no relevant sources found in a corpus of 2 documents; "
        "add documents on it to RESEARCH_MCP_CORPUS"
    )
    assert citations.structured_content["metrics"]["ranked"] >= 1  # the floor keeps what is relevant


async def test_a_run_with_nothing_to_search_ends_no_sources_saying_how_to_add_some() -> None:
    plan = {
        "root": {
            "kind": "executor",
            "title": "ferries",
            "children": [{"kind": "leaf", "title": "ferries", "questions": [QUESTION]}],
        }
    }
    async with Client(create_server(model=ExtractiveModel())) as client:
        planned = await client.call_tool("plan_research", {"query": QUESTION, "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )

    assert run.structured_content["status"] == "no_sources"
    assert run.structured_content["summary"][0] == (
        "no sources to search: set RESEARCH_MCP_CORPUS (folders of your documents) or "
        "TAVILY_API_KEY (web search), or give each plan leaf its sources"
    )


async def test_a_run_whose_searches_find_nothing_relevant_ends_no_sources(docs: Path) -> None:
    plan = {
        "root": {
            "kind": "executor",
            "title": "zebras",
            "children": [
                {"kind": "leaf", "title": "zebras", "questions": ["When do zebras migrate in the Serengeti?"]}
            ],
        }
    }
    async with Client(create_server(model=ExtractiveModel())) as client:
        await wait_until_indexed(client)
        planned = await client.call_tool(
            "plan_research", {"query": "zebra migration", "suggested_plan": plan}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )

    assert run.structured_content["status"] == "no_sources"
    assert "no relevant sources found in a corpus of 2 documents" in run.structured_content["summary"][0]


async def test_extract_source_reads_a_local_path_inside_the_corpus_as_that_document(docs: Path) -> None:
    question = {"questions": ["How do I report a vulnerability?"]}
    async with Client(create_server(model=ExtractiveModel())) as client:
        await wait_until_indexed(client)
        by_path = await client.call_tool("extract_source", {"source": str(docs / "SECURITY.md"), **question})
        by_url = await client.call_tool(
            "extract_source", {"source": (docs / "SECURITY.md").as_uri(), **question}
        )

    for result in (by_path, by_url):
        assert not result.is_error, result.content
        assert result.structured_content["summary"][0].endswith(": Security")  # S<id>: the document's title
    assert by_path.structured_content["summary"][0] == by_url.structured_content["summary"][0]  # one source


@pytest.mark.parametrize("as_url", [False, True])
async def test_extract_source_refuses_a_local_path_outside_the_corpus(
    docs: Path, tmp_path: Path, as_url: bool
) -> None:
    secret = tmp_path / "GPL-3.txt"
    secret.write_text("GNU GENERAL PUBLIC LICENSE. Version 3, 29 June 2007.\n", encoding="utf-8")
    source = secret.as_uri() if as_url else str(secret)
    async with Client(create_server(model=ExtractiveModel())) as client:
        result = await client.call_tool("extract_source", {"source": source, "questions": ["Which version?"]})

    assert result.is_error
    assert "is outside the corpus folders" in result.content[0].text


async def test_extract_source_refuses_a_local_path_when_no_corpus_is_configured(tmp_path: Path) -> None:
    path = tmp_path / "GPL-3.txt"
    path.write_text("GNU GENERAL PUBLIC LICENSE. Version 3, 29 June 2007.\n", encoding="utf-8")
    async with Client(create_server(model=ExtractiveModel())) as client:
        result = await client.call_tool(
            "extract_source", {"source": str(path), "questions": ["Which version?"]}
        )

    assert result.is_error
    assert "local files are read only from the corpus folders" in result.content[0].text

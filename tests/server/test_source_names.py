"""Sources a person can open: every view names a document by its own title and its path under the
corpus folder, an XHTML page (asciidoc's, with an XML declaration) by its <title> too."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

XHTML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" '
    '"http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">'
    "<head><title>kelpfaq(7)</title></head><body><h2>SYNOPSIS</h2><p>kelpfaq</p><h2>DESCRIPTION</h2>"
    "<p>Giant kelp can grow up to 60 centimetres in a single day in cold coastal waters.</p></body></html>"
)


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, {"kelpfaq.html": XHTML})


async def test_a_source_is_named_by_its_own_title_and_its_path(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        plan = await client.call_tool("plan_research", {"query": "How fast does giant kelp grow?"})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        sources = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "sources"}
        )
    assert "S1 kelpfaq(7) (kelpfaq.html) <corpus:1>" in sources.structured_content["text"]

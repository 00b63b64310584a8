"""Confidence a person can read: one plain sentence in every view, no rule names or code paths;
the reasons rule by rule stay in the structured content."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from research_mcp.server.app import create_server
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    "kelp survey.md": "# Kelp survey\n\nGiant kelp grows up to 61 centimetres per day in summer.\n",
    "kelp field notes.md": "# Field notes\n\nGiant kelp grows up to 30 centimetres per day in summer.\n",
}
CODE_WORDS = re.compile(r"\.py\b|roles/|Capped at|by code|\(keep\)|question\(s\)|strong from|mean \d")


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def test_confidence_is_one_plain_sentence_and_the_reasons_stay_structured(corpus: Path) -> None:
    async with Client(create_server(), mode="legacy") as client:
        await wait_until_indexed(client)
        plan = await client.call_tool(
            "plan_research", {"query": "How fast does giant kelp grow per day, and where does it grow?"}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        run_id = run.structured_content["id"]
        views = {
            view: (await client.call_tool("report_results", {"id": run_id, "view": view})).structured_content[
                "text"
            ]
            for view in ("confidence", "summary", "report", "tree")
        }
        root = re.search(r"^- n \w+: .*\[done (h_\w+)\]", views["tree"], flags=re.MULTILINE)
        assert root is not None, views["tree"]
        handoff = await client.call_tool(
            "report_results", {"id": root.group(1), "view": "handoff", "max_tokens": 20000}
        )
    sentence = views["confidence"].split(": ", 1)[1]
    assert not CODE_WORDS.search(sentence), sentence
    assert sentence.count(". ") == 0 and sentence.endswith(".")  # one sentence
    assert "so confidence is" in sentence and "disagree" in sentence, sentence
    assert not CODE_WORDS.search(views["summary"].splitlines()[0]), views["summary"]
    # The reasons rule by rule are kept for programs, in the structured output.
    assert '"confidence_reasons": [' in handoff.structured_content["text"]

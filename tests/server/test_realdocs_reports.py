"""What a person reads after a no-model run over real documents (tests/fixtures/realdocs, laid out
as a Debian system lays them out): sources named by their path under the corpus folder, `<` shown
as `<` and still inert, one heading per question in the HTML export, follow-ups that are questions."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from mcp import Client

from research_mcp.answering.questions import reads_as_question
from research_mcp.cli.exports import render_html
from research_mcp.core.config import Settings
from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.reports import report_markdown, safe_markdown
from research_mcp.roles.synthesis_report import NOT_ANSWERED_HERE, NOT_ESTABLISHED_HERE
from research_mcp.run_document import run_document
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.indexing import wait_until_indexed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realdocs"
LAYOUT = {
    "fstab.5.txt": "man/fstab.5.txt",
    "deb-conffiles.5.txt": "man/deb-conffiles.5.txt",
    "Apache-2.0": "licenses/Apache-2.0",
    "zlib1g.copyright": "doc/zlib1g/copyright",
    "adduser.conf.5.txt": "man/adduser.conf.5.txt",
}


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "share"
    for name, place in LAYOUT.items():
        (root / place).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / name, root / place)
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(root))
    return root


async def research(question: str) -> dict[str, Any]:
    async with Client(create_server(model=ExtractiveModel())) as client:
        await wait_until_indexed(client)
        plan = await client.call_tool("plan_research", {"query": question})
        run = await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 55}
        )
        while run.structured_content["status"] in ("pending", "running"):
            run = await client.call_tool(
                "execute_plan", {"run_id": run.structured_content["id"], "wait_seconds": 55}
            )
        sources = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "sources"}
        )
    store = Store(Settings().database_path)
    run_id = run.structured_content["id"]
    return {
        "document": run_document(store, run_id),
        "markdown": report_markdown(store, run_id),
        "sources_view": sources.structured_content["text"],
    }


async def test_sources_show_their_path_under_the_corpus_folder(corpus: Path) -> None:
    got = await research("What does the zlib licence require of altered source versions?")
    names = {source.name for source in got["document"].sources}
    assert "doc/zlib1g/copyright" in names
    assert "doc/zlib1g/copyright" in got["sources_view"] and "doc/zlib1g/copyright" in got["markdown"]


async def test_the_html_export_has_one_heading_per_question_and_followups_are_questions(
    corpus: Path,
) -> None:
    question = "What does the sixth field of fstab (fs_passno) determine?"
    got = await research(question)
    page = render_html(got["document"])
    headings = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", page)
    assert sum(question.rstrip("?") in heading for heading in headings) == 1, headings
    assert all(reads_as_question(item) for item in got["document"].suggested_followups)


def test_markdown_shows_angle_brackets_as_written_and_never_as_html() -> None:
    # fstab(5): "For NFS mounts, this field is <host>:<dir>", and a hostile quote beside it.
    text = safe_markdown("For NFS mounts, this field is <host>:<dir>; x < 3. <img src=x onerror=alert(1)>")
    assert "&lt;" not in text
    inline = MarkdownIt("commonmark").parseInline(text)[0].children or []
    assert [token.type for token in inline] == ["text"]  # no html_inline, no autolink
    shown = "".join(token.content for token in inline)
    assert shown == "For NFS mounts, this field is <host>:<dir>; x < 3. <img src=x onerror=alert(1)>"


async def test_a_no_model_plan_estimates_seconds_and_no_tokens(corpus: Path) -> None:
    async with Client(create_server(model=ExtractiveModel())) as client:
        await wait_until_indexed(client)
        plan = await client.call_tool("plan_research", {"query": "What does the zlib licence require?"})

    metrics = plan.structured_content["metrics"]
    assert metrics["est_tokens"] == 0 and metrics["est_cost_usd"] == 0
    assert metrics["est_wall_s"] >= 0.5 * metrics["est_calls"] / 4  # measured seconds, not 0
    assert metrics["est_wall_s"] > 0
    (line,) = [item for item in plan.structured_content["summary"] if item.startswith("estimate:")]
    assert "0 tokens" in line and line.endswith(" s")


def timed_calls(store: Store, role: str, seconds: float, count: int, *, cached: bool = False) -> None:
    """`count` finished no-model calls of `role` that took `seconds` each."""
    for _ in range(count):
        handoff = store.start_handoff(role=role, input={}, backend="extractive")
        with store.write() as conn:
            conn.execute(
                "UPDATE handoffs SET status = 'done', output = ?, started_at = ?, finished_at = ? WHERE id = ?",
                (
                    json.dumps({"cached": cached}),
                    "2026-11-26T10:00:00+00:00",
                    f"2026-11-26T10:00:{seconds:02.0f}+00:00",
                    handoff,
                ),
            )


async def test_a_no_model_plan_is_estimated_at_this_machines_measured_pace(corpus: Path) -> None:
    # Real documents take seconds an extraction here, not the 0.5 s of HotpotQA's paragraphs.
    store = Store(Settings().database_path)
    async with Client(create_server(model=ExtractiveModel())) as client:
        await wait_until_indexed(client)
        query = {"query": "What does the zlib licence require?"}
        typical = (await client.call_tool("plan_research", query)).structured_content["metrics"]
        timed_calls(store, "extractor", 12, 6)
        timed_calls(store, "extractor", 0, 20, cached=True)  # reused outputs took no time: not a pace
        timed_calls(store, "synthesizer", 2, 6)
        paced = (await client.call_tool("plan_research", query)).structured_content["metrics"]
    assert store.seconds_per_call("extractive") == {"extractor": 12.0, "synthesizer": 2.0}
    assert typical["est_calls"] == paced["est_calls"]
    # One leaf reading three sources, then two more on its second hop, then its synthesis and the root's.
    assert paced["est_wall_s"] >= 12 * 2 + 2 * 2 > typical["est_wall_s"]


async def test_a_question_on_what_no_document_mentions_says_so(corpus: Path) -> None:
    """The folders share "default", "filesystems" and "fstab" with the question, and the fstab
    page's fields answer something; none of them says "umask": the report says that, and is low
    (the evidence rules judge it so; the never-mentioned note alone caps at medium)."""
    got = await research("What is the default umask of the filesystems listed in fstab?")
    document = got["document"]

    assert document.confidence.level == "low", document.confidence.reasoning
    assert any("No document of the corpus mentions 'umask'" in gap for gap in document.gaps)
    assert "No document of the corpus mentions 'umask'" in got["markdown"]


async def test_a_part_no_document_can_answer_is_marked_in_the_report_and_the_answered_part_is_not(
    corpus: Path,
) -> None:
    """The report lists the closest lines under every part; under the part whose word no document
    holds, it says first that they are not its answer."""
    got = await research("What does the sixth field of fstab determine, and what is the default umask?")
    markdown = got["markdown"]

    umask = markdown.split("## What is the default umask", 1)[1].split("\n## ", 1)[0]
    sixth = markdown.split("## What does the sixth field of fstab determine", 1)[1].split("\n## ", 1)[0]
    assert NOT_ANSWERED_HERE in umask
    assert NOT_ANSWERED_HERE not in sixth and "fsck" in sixth


async def test_a_part_whose_lines_answer_something_else_is_marked_as_leads(corpus: Path) -> None:
    """Every word of "Who maintains the zlib Debian package?" is in the folder, but no line of it
    says who maintains zlib's package: the lines listed under that part are marked as leads (the run
    found it not established), the fstab part's answer is not."""
    got = await research(
        "Who maintains the zlib Debian package, and what does the sixth field of fstab determine?"
    )
    markdown = got["markdown"]

    who = markdown.split("## Who maintains the zlib Debian package", 1)[1].split("\n## ", 1)[0]
    sixth = markdown.split("## What does the sixth field of fstab determine", 1)[1].split("\n## ", 1)[0]
    assert NOT_ESTABLISHED_HERE in who
    assert "fsck" in sixth  # the passage answering it is quoted (how sure, the ranker's calibration says)


async def test_a_line_an_earlier_question_stored_answers_a_later_one_as_it_would_in_a_new_home(
    corpus: Path,
) -> None:
    # The zlib licence's "Altered source versions must be plainly marked as such" is stored by the
    # first question; the second finds it again. Its report reads the line as scored for its own
    # question (was: as the first question's, "best evidence 0.00", and low while its part said medium).
    await research("What does the zlib licence require of altered source versions?")
    later = await research("Must altered source versions of zlib be plainly marked as such?")

    document = later["document"]
    assert any("plainly marked" in fact.quote for fact in document.facts if fact.verified)
    assert "best evidence per question 0.00" not in document.confidence.reasoning


async def test_a_line_two_files_share_is_read_as_found_in_both_whichever_stored_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # zstd's copyright file quotes zlib's licence. Stored first from zstd's file, the line found again
    # in zlib's is merged into that fact; a report on zlib's licence reads it as found in both files
    # (was: as zstd's alone, and low: "no verified fact ... mentions what it names (zlib)").
    root = tmp_path / "share"
    (root / "doc" / "libzstd1").mkdir(parents=True)
    shutil.copy(FIXTURES / "libzstd1.copyright", root / "doc" / "libzstd1" / "copyright")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(root))
    await research("What does the licence of libzstd1 say about the origin of the software?")
    (root / "doc" / "zlib1g").mkdir(parents=True)
    shutil.copy(FIXTURES / "zlib1g.copyright", root / "doc" / "zlib1g" / "copyright")

    later = await research("What does the zlib licence say about the origin of the software?")

    document = later["document"]
    shared = [fact for fact in document.facts if fact.verified and "must not be misrepresented" in fact.quote]
    assert shared


async def test_a_two_part_question_each_part_answered_in_its_own_words_is_not_capped_low(
    corpus: Path,
) -> None:
    """adduser.conf(5) answers both parts in lines that do not say "adduser" (its title does): the
    phase covering every part takes each part as its evidence rules judged it, not by whether one
    line repeats every word of the part (was: both parts uncovered, and the run capped low)."""
    got = await research(
        "In which directory does adduser create new home directories, and which login shell does adduser "
        "give new users?"
    )
    document = got["document"]

    quotes = " ".join(fact.quote for fact in document.facts if fact.verified)
    assert "/home" in quotes and "/bin/bash" in quotes

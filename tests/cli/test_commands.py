"""run, runs, show and export through the installed script, against one real run over a corpus of notes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.cli.conftest import HOSTILE_TITLE, NOTES, QUESTION, FinishedRun, cli, cli_env
from tests.sources import hostile

ANSI = re.compile(r"\x1b\[")


def test_run_prints_the_report_alone_on_stdout_so_it_can_be_redirected(harbour: FinishedRun) -> None:
    report = harbour.stdout
    assert report.startswith(f"# {QUESTION}\n")
    assert re.search(r"\[F\d+\]", report)
    assert "## Sources" in report
    assert "citations verified" in report
    for chatter in ("planning", "running", "research-mcp:", "INFO"):
        assert chatter not in report


def test_run_progress_off_a_terminal_is_plain_lines_naming_each_node_and_the_totals(
    harbour: FinishedRun,
) -> None:
    progress = harbour.stderr
    assert not ANSI.search(progress)
    assert f"planning: {QUESTION}" in progress
    assert re.search(r"\] done +executor n: ", progress)
    assert re.search(r"\] done +leaf n\.1: ", progress)
    final = progress.strip().splitlines()[-1]
    totals = re.search(
        r"done: 2/2 nodes, 3 sources read, facts (\d+)/(\d+) verified, 0 tokens, \$0\.0000, ", final
    )
    assert totals and totals.group(1) == totals.group(2) != "0"


def test_runs_lists_the_run_newest_first_as_a_plain_table(harbour: FinishedRun) -> None:
    listed = cli("runs", env=harbour.env)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == [
        "id",
        "status",
        "query",
        "backend",
        "nodes",
        "cost",
        "tokens",
        "elapsed",
        "created",
    ]
    cells = re.split(r"\s{2,}", row)
    assert cells[:7] == [harbour.run_id, "done", QUESTION, "extractive", "2/2", "$0.0000", "0"]
    assert header.index("query") == row.index(QUESTION)  # aligned columns
    assert not ANSI.search(listed.stdout)


def test_runs_json_gives_each_run_with_its_counts(harbour: FinishedRun) -> None:
    listed = cli("runs", "--json", "--limit", "5", env=harbour.env)
    (run,) = json.loads(listed.stdout)
    assert {key: run[key] for key in ("id", "status", "query", "backend", "nodes_done", "nodes_total")} == {
        "id": harbour.run_id,
        "status": "done",
        "query": QUESTION,
        "backend": "extractive",
        "nodes_done": 2,
        "nodes_total": 2,
    }
    assert run["tokens"] == 0 and run["cost_usd"] == 0 and run["elapsed_s"] > 0


def test_show_sources_lists_the_corpus_notes(harbour: FinishedRun) -> None:
    shown = cli("show", harbour.run_id, "--view", "sources", env=harbour.env)
    assert shown.returncode == 0, shown.stderr
    titles = [text.splitlines()[0].removeprefix("# ") for text in NOTES.values()]
    for title in titles:
        assert title in shown.stdout


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        ("summary", "confidence:"),
        ("report", "metadata:"),
        ("facts", "[verified]"),
        # Three notes each bearing on a part of the answer, none likely to hold it whole: low.
        ("confidence", "low: "),
        # The harbour notes never say "people": the gap says so (and caps nothing but "high").
        ("gaps", "No document of the corpus mentions 'people'"),
        ("followups", ""),
        ("tree", "n.1 leaf"),
    ],
)
def test_show_gives_every_view_of_a_finished_run(harbour: FinishedRun, view: str, expected: str) -> None:
    shown = cli("show", harbour.run_id, "--view", view, env=harbour.env)
    assert shown.returncode == 0, shown.stderr
    assert expected in shown.stdout and shown.stdout.strip()


def test_show_refuses_an_unknown_view_as_a_usage_error(harbour: FinishedRun) -> None:
    shown = cli("show", harbour.run_id, "--view", "everything", env=harbour.env)
    assert shown.returncode == 2
    assert "'everything' is not one of" in shown.stderr


UNKNOWN = "run_000000000000"


@pytest.mark.parametrize(
    "args",
    [
        ("show", UNKNOWN),
        ("show", "nonsense"),
        ("export", UNKNOWN, "--format", "html"),
        ("run", "--resume", UNKNOWN),
    ],
)
def test_an_unknown_id_exits_1_with_one_line_saying_what_to_do(
    harbour: FinishedRun, args: tuple[str, ...]
) -> None:
    result = cli(*args, env=harbour.env)
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    ident = "nonsense" if "nonsense" in args else UNKNOWN
    assert line.startswith("Error: no ") and f"with id {ident!r};" in line
    assert line.endswith("list the runs and their ids with: research-mcp runs")


def test_export_md_is_the_report_that_run_printed(harbour: FinishedRun) -> None:
    exported = cli("export", harbour.run_id, "--format", "md", env=harbour.env)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == harbour.stdout


def test_export_json_holds_findings_facts_with_checked_quotes_sources_and_the_plan_tree(
    harbour: FinishedRun,
) -> None:
    exported = cli("export", harbour.run_id, "--format", "json", env=harbour.env)
    assert exported.returncode == 0, exported.stderr
    document = json.loads(exported.stdout)
    assert set(document) == {
        "run",
        "findings",
        "sources",
        "confidence",
        "gaps",
        "metadata",
        "suggested_followups",
        "facts",
        "plan",
    }
    assert document["run"]["query"] == QUESTION and document["run"]["status"] == "done"
    facts = {fact["id"]: fact for fact in document["facts"]}
    cited = set(re.findall(r"\[(F\d+)\]", document["findings"]))
    assert cited and cited <= set(facts)
    sources = {source["id"]: source for source in document["sources"]}
    corpus = " ".join(NOTES.values())
    for fact in facts.values():
        assert fact["verified"] is True
        assert fact["quote"] in corpus
        assert fact["source_id"] in sources
    assert {source["title"] for source in sources.values()} >= {
        "Harbour bridge",
        "Harbour tunnel",
        HOSTILE_TITLE,
    }
    assert all(source["location"].startswith(str(harbour.corpus)) for source in sources.values())
    (plan,) = document["plan"]
    assert plan["root"]["state"] == "done" and plan["root"]["children"][0]["state"] == "done"
    assert document["metadata"]["citations_verified"] == len(cited)


def test_export_html_to_a_file_escapes_untrusted_titles(harbour: FinishedRun, tmp_path: object) -> None:
    from pathlib import Path

    target = Path(str(tmp_path)) / "report.html"
    exported = cli("export", harbour.run_id, "--format", "html", "-o", str(target), env=harbour.env)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == ""
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Ferry timetable" in page
    assert "<script" not in page.lower()


def test_run_needs_a_question_or_a_run_to_resume(harbour: FinishedRun) -> None:
    neither = cli("run", env=harbour.env)
    both = cli("run", QUESTION, "--resume", harbour.run_id, env=harbour.env)
    assert neither.returncode == both.returncode == 2
    assert "give a question, or --resume RUN_ID" in neither.stderr


def test_resuming_a_finished_run_prints_its_report_again(harbour: FinishedRun) -> None:
    again = cli("run", "--resume", harbour.run_id, env=harbour.env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == harbour.stdout


def test_a_run_over_its_source_budget_reports_on_the_sources_it_read_and_names_the_rest(
    harbour: FinishedRun, tmp_path: Path
) -> None:
    env = {**harbour.env, "RESEARCH_MCP_HOME": str(tmp_path / "home")}
    capped = cli("run", QUESTION, "--corpus", str(harbour.corpus), "--max-sources", "1", env=env)
    assert capped.returncode == 0, capped.stderr
    assert "the budget ran out; the report below is partial" in capped.stderr
    listed = json.loads(cli("runs", "--json", env=env).stdout)
    assert [run["status"] for run in listed] == ["budget_exhausted"]
    # The one source read is extracted and synthesized (it was paid for); the two others are named.
    assert capped.stdout.startswith(f"# {QUESTION}")
    assert len(re.findall(r"\[F\d+\]", capped.stdout)) >= 1
    skipped = set(
        re.findall(r"Source not read: (corpus:\d+): the run's budget of 1 sources was reached", capped.stdout)
    )
    assert len(skipped) == 2, capped.stdout
    gaps = capped.stdout.split("## Gaps", 1)[1].split("## Sources", 1)[0]
    assert all(gaps.count(ref) == 1 for ref in skipped), gaps  # each named once, not once per level


def test_index_skips_a_fifo_a_malformed_pdf_and_a_stalling_pdf_naming_each_and_indexes_the_rest(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "bridge.md").write_text(NOTES["bridge.md"])
    os.mkfifo(folder / "pipe.txt")
    (folder / "broken.pdf").write_bytes(hostile.unknown_filter_pdf())
    (folder / "stall.pdf").write_bytes(hostile.huge_stream_pdf(10))
    env = cli_env(tmp_path / "home", RESEARCH_MCP_SOURCE_TIMEOUT="2", QDRANT_URL="http://127.0.0.1:9")

    done = cli("index", str(folder), env=env, timeout=60)  # a FIFO read would hang; a stall, run minutes

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{folder}: 1 added, 0 updated, 0 unchanged, 0 removed;")
    skipped = sorted(line for line in done.stderr.splitlines() if line.startswith("skipped: "))
    assert skipped == [
        "skipped: broken.pdf: 'broken.pdf' could not be parsed (NotImplementedError: Unsupported filter "
        "/BogusDecode). Try another copy.",
        "skipped: pipe.txt: a FIFO (named pipe), not a regular file; skipped",
        "skipped: stall.pdf: 'stall.pdf' took longer than 2 s to parse and was stopped (a document built "
        "to stall the parser, or far too large). Try another source.",
    ]

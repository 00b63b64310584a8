"""The multi-corpus answer table scores what it says: BM25's baseline, retrieval and selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import corpora
from bench.answer_table import Outcome, Question, Row, score
from bench.bm25_baseline import BM25, Chunk, chunk_text, holds, joined, read_corpus

FSTAB = (
    "The sixth field (fs_passno).\n\n"
    "This field is used by fsck(8) to determine the order in which filesystem checks are done at "
    "boot time. The root filesystem should be specified with a fs_passno of 1.\n"
)
HOSTS = (
    "The hosts file.\n\nThis manual page describes the format of the /etc/hosts file, a simple text file.\n"
)
SHELLS = "The shells file.\n\n/etc/shells is a text file which contains the full pathnames of valid login shells.\n"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    (folder / "man").mkdir(parents=True)
    (folder / "man" / "fstab.5.txt").write_text(FSTAB + ("Filler paragraph about mounts.\n\n" * 60))
    (folder / "man" / "hosts.5.txt").write_text(HOSTS)
    (folder / "man" / "shells.5.txt").write_text(SHELLS)
    (folder / "page.html").write_text(
        "<html><head><title>Page</title></head><body><p>Visible <b>words</b> here.</p></body></html>"
    )
    return folder


def test_bm25_ranks_the_one_chunk_holding_the_answer_first(corpus: Path) -> None:
    index = BM25.of_texts(read_corpus(corpus))
    hits = index.search("Which value of fs_passno does the root filesystem get?", limit=10)
    assert hits[0].path == "man/fstab.5.txt"
    assert holds(hits[0].text, [["fs_passno of 1"]])
    assert sum(holds(chunk.text, [["fs_passno of 1"]]) for chunk in index.chunks) == 1
    assert index.search("zebra quantum", limit=10) == []


def test_html_is_read_as_its_visible_text(corpus: Path) -> None:
    texts = read_corpus(corpus)
    assert "Visible words here." in texts["page.html"]
    assert "<b>" not in texts["page.html"]


def test_chunks_keep_paragraphs_whole_and_within_the_size() -> None:
    paragraphs = [f"Paragraph {n} " + "word " * 40 for n in range(30)]
    chunks = chunk_text("\n\n".join(paragraphs) + "\n\n" + "long " * 600, size=1000)
    assert all(len(chunk) <= 1000 for chunk in chunks)
    assert any(chunk.count("Paragraph") > 1 for chunk in chunks)
    assert all(p.strip() in "\n\n".join(chunks) for p in paragraphs)


def test_joined_cuts_to_a_byte_budget_without_splitting_a_character() -> None:
    chunks = [Chunk("a", "naïve " * 10), Chunk("b", "second chunk")]
    assert joined(chunks, 7) == "naïve "
    assert joined(chunks).endswith("\n\nsecond chunk")


def _bm25() -> BM25:
    return BM25([Chunk("man/fstab.5.txt", FSTAB), Chunk("man/hosts.5.txt", HOSTS)])


def test_selection_and_retrieval_are_scored_from_the_report_and_the_sources_read() -> None:
    question = Question(
        "q1", "dev", "Which fs_passno for root?", [["fs_passno of 1", "passno 1"]], ["man/fstab.5.txt"]
    )
    row = Row()
    found = score(
        row,
        question,
        Outcome("done", "medium", "- root: a fs_passno  of\n1 [F2]", ["man/fstab.5.txt"], 2.0),
        _bm25(),
    )
    assert found["retrieved"] and found["selected"] and found["bm25"]["top5"]
    missed = score(
        row, question, Outcome("done", "high", "- the hosts file [F1]", ["man/hosts.5.txt"], 4.0), _bm25()
    )
    assert not missed["retrieved"] and not missed["selected"]
    read_not_quoted = score(
        row, question, Outcome("done", "low", "- fsck [F1]", ["man/fstab.5.txt"], 3.0), _bm25()
    )
    assert read_not_quoted["retrieved"] and not read_not_quoted["selected"]
    assert (row.answerable, row.retrieved, row.selected, row.selected_retrieved) == (3, 2, 1, 1)
    assert (row.overconfident, row.answered_low) == (1, 0)
    assert row.cells()[1:4] == ["0.67", "0.33", "0.50"]
    assert row.cells()[-1] == "3.0"


def test_a_two_part_answer_needs_both_parts_and_the_bm25_budget_is_the_reports_bytes() -> None:
    question = Question(
        "q2",
        "dev",
        "fs_passno root and fsck order?",
        [["fs_passno of 1"], ["order in which"]],
        ["man/fstab.5.txt"],
    )
    row = Row()
    half = score(row, question, Outcome("done", "low", "a fs_passno of 1", ["man/fstab.5.txt"], 1.0), _bm25())
    assert (
        not half["selected"] and half["bm25"]["top5"] and not half["bm25"]["bytes"]
    )  # 16 bytes hold neither
    assert row.answered_low == 0


def test_unanswerable_questions_count_honest_when_low_or_no_sources() -> None:
    row = Row()
    unanswerable = Question("q3", "heldout", "Which port does the daemon use?", [], [])
    for status, level in (("no_sources", "low"), ("done", "low"), ("done", "medium")):
        score(row, unanswerable, Outcome(status, level, "", [], 1.0), _bm25())
    assert (row.unanswerable, row.honest, row.answerable) == (3, 2, 0)
    assert row.cells()[10] == "2/3"


def test_a_corpus_is_copied_without_a_duplicate_symlink_and_a_missing_one_names_apt_get(
    tmp_path: Path,
) -> None:
    source = tmp_path / "doc"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_text("alpha")
    (source / "sub" / "b.html").write_text("<p>beta</p>")
    (source / "changelog.txt").write_text("history")
    (source / "index.txt").symlink_to("a.txt")
    spec = corpora.CorpusSpec(
        "tiny", "a test corpus", source, ("tiny-doc",), ("*.txt", "sub/*.html"), ("changelog*",)
    )
    folder = corpora.materialise(spec, tmp_path / "cache")
    assert sorted(
        p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.name.startswith(".")
    ) == ["a.txt", "sub", "sub/b.html"]
    assert not (folder / "a.txt").is_symlink()
    assert corpora.materialise(spec, tmp_path / "cache") == folder
    missing = corpora.CorpusSpec("gone", "absent", tmp_path / "nowhere", ("gone-doc",))
    with pytest.raises(corpora.CorpusMissing, match=r"apt-get install -y gone-doc"):
        corpora.materialise(missing, tmp_path / "cache")

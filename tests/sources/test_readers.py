"""Corpus files read with their structure kept, on short real excerpts (tests/fixtures/realdocs): the
passage a reader would quote (an option with its paragraph) comes out whole, under its heading, with
the markup gone; AsciiDoc includes are followed inside the corpus and nowhere else; every reader runs
in the parser's worker, under its limits, so a page built to stall one holds up nothing else."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from research_mcp.answering.passages import Passage, split_passages
from research_mcp.sources.corpus import Corpus
from research_mcp.sources.parsing import DocumentParser
from research_mcp.sources.readers import ASCIIDOC, READER_VERSION, read_file
from research_mcp.storage.store import Store

REALDOCS = Path(__file__).parents[1] / "fixtures" / "realdocs"
SOFT = "Does not touch the index file or the working tree at all (but resets the head to <commit>"


@pytest.fixture(scope="module")
def parser() -> Iterator[DocumentParser]:
    with DocumentParser(timeout=20) as parser:
        yield parser


def _item(text: str, term: str) -> tuple[Passage, str]:
    [passage] = [p for p in split_passages(text) if p.term == term]
    return passage, text[passage.start : passage.end]


def _stored(store: Store, folder: Path, parser: DocumentParser) -> dict[str, tuple[str, str]]:
    """Path -> (title, stored text) of every document indexed from ``folder``."""
    corpus = Corpus(store, [folder], parser=parser)
    report = corpus.index()
    assert not report.errors, report.errors
    return {
        row.path: (corpus.read(row.id).title, corpus.read(row.id).text)
        for row in corpus.known_files(corpus.roots[0])
    }


def test_git_resets_soft_option_is_one_passage_whose_term_is_soft_in_asciidoc_and_in_html() -> None:
    asciidoc = (REALDOCS / "git-doc" / "git-reset.txt").read_bytes()
    html = (REALDOCS / "git-doc" / "git-reset.html").read_bytes()
    for data, kind in ((asciidoc, ASCIIDOC), (html, ".html")):
        title, text = read_file(data, kind, "git-reset")
        assert title == "git-reset(1)"  # the page's own title, never "SYNOPSIS"
        soft, quoted = _item(text, "--soft")
        assert soft.kind == "definition"
        assert quoted.startswith("--soft\n") and SOFT in quoted
        assert (
            soft.heading.startswith("git-reset(1)")
            and "DESCRIPTION > git reset [<mode>] [<commit>]" in soft.heading
        )


def test_asciidoc_markup_is_gone_and_its_links_read_as_man_page_names() -> None:
    _, text = read_file((REALDOCS / "git-doc" / "git-reset.txt").read_bytes(), ASCIIDOC, "git-reset")
    assert "use git-restore(1) to check the contents out of the index" in text
    for markup in ("linkgit:", "[verse]", "::\n", "\n+\n", "`", "'git reset'"):
        assert markup not in text, markup
    assert "git reset [--soft | --mixed [-N] | --hard | --merge | --keep] [-q] [<commit>]" in text.split("\n")


def test_an_html_manual_page_loses_its_navigation_and_keeps_its_definitions() -> None:
    title, text = read_file((REALDOCS / "python-tty.html").read_bytes(), ".html", "tty.html")
    assert title == "tty — Terminal control functions — Python 3.11.2 documentation"
    setraw, quoted = _item(text, "tty.setraw(fd, when=termios.TCSAFLUSH)")
    assert "Change the mode of the file descriptor fd to raw." in quoted
    assert setraw.heading == "tty — Terminal control functions"
    for navigation in ("Previous topic", "Navigation", "Report a Bug", "Show Source", "¶"):
        assert navigation not in text, navigation


def test_a_man_pages_tagged_paragraphs_are_options_with_their_paragraph() -> None:
    _, text = read_file(gzip.decompress((REALDOCS / "vmstat.8.gz").read_bytes()), "", "vmstat.8")
    forks, quoted = _item(text, "-f, --forks")
    assert "The -f switch displays the number of forks since boot." in quoted
    assert forks.heading == "OPTIONS"
    assert "# OPTIONS" in text.split("\n")


def test_restructuredtext_titles_become_headings_and_roles_lose_their_markup() -> None:
    source = "Tides\n=====\n\nSpring tides\n------------\n\nSee :func:`tide.spring` and ``moon``.\n"
    assert read_file(source.encode(), ".rst", "tides.rst") == (
        "Tides",
        "# Tides\n\n## Spring tides\n\nSee tide.spring and moon.",
    )


def test_an_include_inside_the_corpus_is_followed_and_one_outside_it_is_not(
    store: Store, tmp_path: Path, parser: DocumentParser
) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(REALDOCS / "git-doc", folder)
    (tmp_path / "private.txt").write_text("The vault code is 7741.\n")
    (folder / "leaky.adoc").write_text("= Leaky\n\nBefore.\n\ninclude::../private.txt[]\n\nAfter.\n")
    (folder / "a.adoc").write_text("= A\n\nAlpha text.\n\ninclude::b.adoc[]\n")  # a cycle: a -> b -> a
    (folder / "b.adoc").write_text("Beta text.\n\ninclude::a.adoc[]\n")
    stored = _stored(store, folder, parser)
    merge = stored["git-merge.txt"][1]
    assert "include::" not in merge
    ort, quoted = _item(merge, "ort")
    assert "This is the default merge strategy when pulling or merging one branch." in quoted
    assert ort.heading == "git-merge(1) > MERGE STRATEGIES"
    assert stored["leaky.adoc"][1] == "# Leaky\n\nBefore.\n\nAfter."
    assert stored["a.adoc"][1] == "# A\n\nAlpha text.\n\nBeta text."  # b's include of a is a cycle


def test_documents_stored_by_older_readers_are_read_again_although_unchanged(
    store: Store, tmp_path: Path, parser: DocumentParser
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "vmstat.8.gz").write_bytes((REALDOCS / "vmstat.8.gz").read_bytes())
    corpus = Corpus(store, [folder], parser=parser)
    assert corpus.index().added == 1
    assert corpus.index().unchanged == 1
    with store.write() as conn:  # as an index made before this reader version left it
        conn.execute("UPDATE corpus_documents SET reader_version = ?, text = ?", (READER_VERSION - 1, ""))
    report = corpus.index()
    assert (report.updated, report.unchanged) == (1, 0)
    [row] = corpus.known_files(corpus.roots[0])
    assert "-f, --forks\n" in corpus.read(row.id).text


def test_the_quadratic_roff_page_indexes_beside_the_others(store: Store, tmp_path: Path) -> None:
    # The report's page: one line of 128,000 "\[" took minutes to read, each doubling four times as
    # long, and held the corpus at "reading 0/4". Read in linear time, it indexes well within the
    # parser's limit (this one, 20 s, a hundred times what it takes) beside the good notes.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "evil.5.gz").write_bytes(gzip.compress((".TH E 5\n" + "\\[" * 128_000 + "\n").encode()))
    (folder / "tides.md").write_text("# Tides\n\nSpring tides follow the new and the full moon.\n")
    with DocumentParser(timeout=20) as parser:
        stored = _stored(store, folder, parser)
    assert stored["evil.5.gz"][1] == "E(5)\n\n" + "[" * 128_000
    assert stored["tides.md"][0] == "Tides"


def test_a_roff_page_past_the_readers_memory_limit_is_reported_and_the_others_index(
    store: Store, tmp_path: Path
) -> None:
    # The roff reader runs in the worker, under its memory limit, like the PDF and HTML parsers: a
    # 9 MB page of escapes needs more than 32 MB to render, and fails there, named, alone.
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "huge.5.gz").write_bytes(gzip.compress((".TH E 5\n" + "\\(cq" * 2_250_000 + "\n").encode()))
    (folder / "tides.md").write_text("# Tides\n\nSpring tides follow the new and the full moon.\n")
    (folder / "vmstat.8.gz").write_bytes((REALDOCS / "vmstat.8.gz").read_bytes())
    with DocumentParser(timeout=60, memory_mb=32) as parser:
        corpus = Corpus(store, [folder], parser=parser)
        report = corpus.index()
    assert report.added == 2
    [error] = report.errors
    assert error.startswith("huge.5.gz: 'huge.5.gz' could not be parsed"), error
    assert "memory" in error

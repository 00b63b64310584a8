"""A PDF's pages read as a reader sees them (research_mcp/sources/pdf_layout.py), on short real excerpts
of Erlang/OTP's PDF manuals (tests/fixtures/realdocs/pdf): the running header and footer of every
page are gone, a paragraph's lines are one line, numbered titles are headings, and a titled item (a
function's signature, a report's name) is one passage with what it says, so that what is quoted is
what a person would quote, not a page's 1,200 characters cut anywhere."""

from __future__ import annotations

import re
from pathlib import Path

import pypdf

from research_mcp.answering.passages import Passage, split_passages
from research_mcp.sources.pdf_layout import lay_out_pdf
from research_mcp.sources.readers import read_file

PDFS = Path(__file__).parents[1] / "fixtures" / "realdocs" / "pdf"
SASL = PDFS / "sasl-4.2-pages-1-4.pdf"
GEN_EVENT = PDFS / "stdlib-gen_event.pdf"
FOOTER = "Ericsson AB. All Rights Reserved."


def _read(path: Path) -> str:
    return read_file(path.read_bytes(), ".pdf", path.name)[1]


def _holding(text: str, words: str) -> tuple[Passage, str]:
    at = text.index(words)
    [passage] = [p for p in split_passages(text) if p.start <= at < p.end]
    return passage, text[passage.start : passage.end]


def test_running_headers_footers_and_page_numbers_are_gone_and_no_word_else() -> None:
    raw = [page.extract_text() for page in pypdf.PdfReader(SASL).pages]
    assert all(FOOTER in page for page in raw)  # every page of the excerpt carries the footer
    text = _read(SASL)
    assert FOOTER not in text
    assert not re.search(r"^\s*\d+\s*$", text, re.MULTILINE)

    def words(said: str) -> list[str]:
        return [word for word in said.split() if word not in ("•", "-") and not set(word) <= {"#"}]

    # Every other word of the pages is kept, in order: only layout and page furniture change.
    body = [
        line
        for number, page in enumerate(raw)
        for at, line in enumerate(page.split("\n"))
        if FOOTER not in line and (number == 0 or at > 0)  # pages past the first open with their header
    ]
    assert words(text) == words("\n".join(body))


def test_a_paragraphs_printed_lines_are_one_line_and_numbered_titles_are_headings() -> None:
    text = _read(SASL)
    assert "\n### 1.2.2 Multi-File Error Report Logging\n" in text
    assert "\n## 1.2 SASL Error Logging\n" in text
    # Printed over two lines on the page, read as one sentence.
    assert "The logging is very fast, as each error message is written as a binary term." in text
    section, quoted = _holding(text, "The report browser is used to browse")
    assert section.kind == "section" and quoted.startswith("### 1.2.3 Report Browser\n")
    assert section.heading.endswith("1.2 SASL Error Logging > 1.2.3 Report Browser")


def test_a_short_title_opening_a_paragraph_is_a_term_with_its_body() -> None:
    text = _read(SASL)
    item, quoted = _holding(text, "Start the rb_server with function rb:start")
    assert item.kind == "definition" and item.term == "Starting Report Browser"
    assert quoted.startswith("Starting Report Browser\n    Start the rb_server")
    assert "1.2.3 Report Browser" in item.heading
    neighbours, _ = _holding(text, "Information about processes that are linked to the crashing")
    assert neighbours.term == "Neighbours"


def test_a_functions_signature_types_and_description_are_one_passage_under_its_module() -> None:
    text = _read(GEN_EVENT)
    assert "\n# gen_event\n" in text  # the reference page's running title, said once, as its heading
    assert sum(line.strip() == "gen_event" for line in text.split("\n")) == 0
    call, quoted = _holding(text, "Defaults to 5000")
    assert call.kind == "definition"
    assert call.term.startswith("call(EventMgrRef, Handler, Request) -> Result")
    assert call.heading.startswith("gen_event")
    assert "Timeout = int()>0 | infinity" in quoted and "Makes a synchronous call" in quoted
    assert "\n# Types:" not in text  # a line said on many pages inside them is no running title


def test_hyphenated_words_are_joined_and_running_headers_and_page_numbers_go() -> None:
    wide = "x" * 60
    pages = [
        f"Chapter One\n{wide} the imple-\nmentation is shown {wide} in 64-\nbit words.\n1",
        "Chapter One\nA second paragraph that is short.\n2",
        "Chapter One\nThe end.\n3",
    ]
    text = lay_out_pdf(pages)
    assert f"the implementation is shown {wide} in 64-bit words." in text
    assert "Chapter One" not in text  # a running header, never said inside a page
    assert "A second paragraph that is short." in text
    assert not re.search(r"^\d$", text, re.MULTILINE)

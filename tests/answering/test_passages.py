"""A document's stored text cut into the passages a reader would quote: definition items with their
term, headings with their first paragraph, table rows with their header, list items, code; each
verbatim text of the document, none longer than the maximum."""

from __future__ import annotations

from pathlib import Path

from research_mcp.answering.passages import PASSAGE_MAX_CHARS, Passage, document_kind, split_passages

REALDOCS = Path(__file__).parents[1] / "fixtures" / "realdocs"


def _quoted(text: str, passage: Passage) -> str:
    return text[passage.start : passage.end]


def _by_term(passages: list[Passage], term: str) -> Passage:
    (found,) = [p for p in passages if p.term == term]
    return found


def test_a_rendered_man_page_option_is_one_definition_passage_under_its_field() -> None:
    text = (REALDOCS / "fstab.5.txt").read_text(encoding="utf-8")
    passages = split_passages(text)
    noauto = _by_term(passages, "noauto")
    assert noauto.kind == "definition"
    assert _quoted(text, noauto).startswith("noauto\n")
    assert "do not mount when mount -a is given" in _quoted(text, noauto)
    assert noauto.heading == "The fourth field (fs_mntops)."
    # The field's further paragraphs stand under it; its first is its definition.
    field = _by_term(passages, "The fourth field (fs_mntops).")
    assert "describes the mount options" in _quoted(text, field)


def test_a_markdown_heading_with_its_first_paragraph_is_a_section_and_a_numbered_list_gives_items() -> None:
    text = (REALDOCS / "pip-python-option.md").read_text(encoding="utf-8")
    passages = split_passages(text)
    kinds = [p.kind for p in passages]
    assert kinds[0] == "section" and _quoted(text, passages[0]) == "# Managing a different Python interpreter"
    items = [_quoted(text, p) for p in passages if p.kind == "list_item"]
    assert items == ["1. The path to a Python executable.", "2. The path to a virtual environment."]
    code = [_quoted(text, p) for p in passages if p.kind == "code"]
    assert any("pip --python .venv install SomePackage" in block for block in code)
    assert all(p.heading == "Managing a different Python interpreter" for p in passages[1:])


def test_a_short_section_is_one_passage_from_its_heading_and_a_long_one_stays_in_pieces() -> None:
    text = (REALDOCS / "npm-config-logs.md").read_text(encoding="utf-8")
    passages = split_passages(text)
    # Each setting's entry is quoted whole: its name, its default and what it does, together.
    (logs_max,) = [p for p in passages if p.heading == "`logs-max`"]
    assert logs_max.kind == "section"
    quoted = _quoted(text, logs_max)
    assert quoted.startswith("#### `logs-max`") and "* Default: 10" in quoted
    assert quoted.endswith("If set to 0, no log files will be written for the current run.")
    assert len(passages) == 4
    # A longer section keeps its paragraphs apart: each is quoted on its own.
    paragraph = "The log directory fills up with one file a run, and old files are removed. " * 4
    long = f"# Logs\n\n{paragraph}\n\n{paragraph}\n\n{paragraph}\n"
    assert [p.kind for p in split_passages(long)] == ["section", "paragraph", "paragraph"]


def test_every_line_of_prose_lies_in_a_passage_and_each_passage_is_verbatim_text() -> None:
    for name in (
        "fstab.5.txt",
        "pip-python-option.md",
        "npm-config-logs.md",
        "hosts.5.txt",
        "git.changelog.Debian",
    ):
        text = (REALDOCS / name).read_text(encoding="utf-8")
        passages = split_passages(text)
        covered = bytearray(len(text))
        for passage in passages:
            assert 0 <= passage.start < passage.end <= len(text)
            assert not text[passage.start].isspace() and not text[passage.end - 1].isspace()
            covered[passage.start : passage.end] = b"\x01" * (passage.end - passage.start)
        uncovered = "".join(char for char, seen in zip(text, covered, strict=True) if not seen)
        assert not uncovered.strip(), (name, uncovered.strip()[:80])


def test_a_table_row_carries_its_header_and_a_rule_row_is_no_passage() -> None:
    text = "## Modes\n\n| mode | index | tree |\n|------|-------|------|\n| soft | kept | kept |\n| hard | reset | reset |\n"
    rows = [p for p in split_passages(text) if p.kind == "table_row"]
    assert [(_quoted(text, p), p.term) for p in rows] == [
        ("| mode | index | tree |", ""),
        ("| soft | kept | kept |", "mode | index | tree"),
        ("| hard | reset | reset |", "mode | index | tree"),
    ]
    assert {p.heading for p in rows} == {"Modes"}


def test_a_long_paragraph_is_cut_at_sentence_ends_each_piece_keeping_its_term() -> None:
    sentence = "Resets the index and the working tree to the named commit, whatever they held. "
    text = "--hard\n    " + sentence * 40 + "\n"
    pieces = split_passages(text)
    assert len(pieces) > 1
    assert all(p.term == "--hard" and p.kind == "definition" for p in pieces)
    assert all(p.end - p.start <= PASSAGE_MAX_CHARS for p in pieces)
    assert all(_quoted(text, p).endswith("held.") for p in pieces)
    assert _quoted(text, pieces[0]).startswith("--hard\n")


def test_an_unbroken_run_longer_than_the_maximum_is_still_cut() -> None:
    text = "x" * (PASSAGE_MAX_CHARS * 3 + 5)
    pieces = split_passages(text)
    assert [p.end - p.start for p in pieces] == [PASSAGE_MAX_CHARS] * 3 + [5]


def test_a_changelog_is_told_by_its_dated_entries_and_a_manual_is_not() -> None:
    assert document_kind((REALDOCS / "git.changelog.Debian").read_text(encoding="utf-8"), "x") == "changelog"
    for name in ("fstab.5.txt", "pip-python-option.md", "hosts.5.txt", "bash.copyright"):
        assert document_kind((REALDOCS / name).read_text(encoding="utf-8"), "changelog") == "document", name


def test_deep_nesting_still_names_only_the_innermost_headings() -> None:
    text = "".join(" " * depth + f"term{depth}\n" for depth in range(2000)) + " " * 2000 + "body\n"
    passages = split_passages(text)
    assert len(passages[-1].heading.split(" > ")) <= 6

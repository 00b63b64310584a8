"""A document's stored text cut into the passages a reader would quote, each verbatim text of it.

The readers (``structured.py``, ``roff.py``) store a document's structure in its text by one light,
Markdown-like convention, and this module reads it back; rendered text (``man`` output, plain text
files) follows the same shape and is read the same way:

- **heading**: a line ``# Title`` (one to six ``#``, a space, the title), or a line underlined by a
  line of ``=`` (level 1) or ``-`` (level 2);
- **paragraph**: lines between blank lines; a reader writes each paragraph on one line;
- **definition item**: its term on a line of its own (or up to three stacked term lines), then its
  paragraph on the next lines, indented deeper than the term, with no blank line between (``--soft``
  then ``    Does not touch the index file ...``). Further paragraphs indented deeper than the term
  belong to it too: they join its passage while it stays under the maximum, and name its term in
  their ``heading`` past it;
- **list item**: a line starting ``- ``, ``* ``, ``+ `` or ``1. ``, with its continuation lines;
- **table row**: a line ``a | b | c`` in a block of such lines; the first row is the header, a row
  of dashes under it is skipped;
- **code**: lines between two fences (```` ``` ````).

A :class:`Passage` is a definition item with its term and paragraph, a heading with its first
paragraph, or with all its blocks when they are short (``section``), a table row (its header in
``term``), a paragraph, a list item, or a piece of code; ``text[start:end]`` is the passage. One
longer than ``PASSAGE_MAX_CHARS`` is cut at sentence ends (words, failing those), each piece keeping
the heading and term. ``heading`` names the headings above a passage, outermost first, and the terms
of the definition items it sits in. One pass over the lines: linear in the text, whatever its nesting.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

__all__ = ["PASSAGE_MAX_CHARS", "Passage", "PassageKind", "document_kind", "split_passages"]

PassageKind = Literal["definition", "section", "paragraph", "list_item", "table_row", "code"]

#: A passage longer than this is cut at sentence ends.
PASSAGE_MAX_CHARS = 1200
#: A section (a heading and its blocks up to the next heading) up to this long is one passage.
SECTION_CHARS = 700
#: Headings and terms named in ``Passage.heading`` (the innermost ones), each cut to this many characters.
_HEADING_DEPTH = 6
_LABEL_CHARS = 200
#: Lines that can stack as the terms of one definition item, each at most this long.
_TERM_LINES = 3
_TERM_CHARS = 160

_ATX = re.compile(r"(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_UNDERLINE = re.compile(r"(=+|-+)[ \t]*$")
_LIST_MARK = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
_FENCE = re.compile(r"(```|~~~)")
_TABLE_RULE = re.compile(r"[\s|:+=-]*$")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    start: int  # offsets into the document's stored text: text[start:end] is the passage, verbatim
    end: int
    kind: PassageKind
    heading: str  # the headings above it, outermost first, joined with " > " ("" if none)
    term: str  # a definition's term (e.g. "--soft"), a table row's header cells; else ""


class _Line:
    """One line of the text, made when looked at from :class:`_LineTable` (so only offsets are kept)."""

    __slots__ = ("end", "indent", "start", "text")

    def __init__(self, start: int, end: int, indent: int, text: str) -> None:
        self.start = start
        self.end = end  # without the newline
        self.indent = indent
        self.text = text  # stripped


class _LineTable:
    """The lines of a text as four arrays of numbers, 32 bytes a line whatever it holds: a text of
    millions of short lines costs tens of megabytes here, not a few hundred as line objects would."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts = array("q")
        self._ends = array("q")
        self._indents = array("q")
        self._contents = array("q")  # where the line's text starts past its indent
        for line in _lines(text):
            self._starts.append(line.start)
            self._ends.append(line.end)
            self._indents.append(line.indent)
            self._contents.append(text.find(line.text[:1], line.start, line.end) if line.text else line.end)

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, i: int) -> _Line:
        end = self._ends[i]
        return _Line(self._starts[i], end, self._indents[i], self._text[self._contents[i] : end].rstrip())

    def span(self, first: int, stop: int) -> list[_Line]:
        return [self[i] for i in range(first, stop)]


class _Context:
    """The headings and enclosing definition terms above the current line."""

    def __init__(self) -> None:
        self.headings: list[tuple[int, str]] = []  # (level, title)
        self.terms: list[tuple[int, str]] = []  # (indent of the term, term)
        self._label: str | None = ""

    def heading(self, level: int, title: str) -> None:
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.headings.append((level, title[:_LABEL_CHARS]))
        self.terms.clear()
        self._label = None

    def enter(self, indent: int) -> None:
        """A block at ``indent``: definition items at that indent or deeper are closed."""
        while self.terms and self.terms[-1][0] >= indent:
            self.terms.pop()
            self._label = None

    def open_term(self, indent: int, term: str) -> None:
        self.terms.append((indent, term[:_LABEL_CHARS]))
        self._label = None

    @property
    def label(self) -> str:
        if self._label is None:
            names = [title for _, title in self.headings] + [term for _, term in self.terms]
            self._label = " > ".join(names[-_HEADING_DEPTH:])
        return self._label


def split_passages(text: str) -> list[Passage]:
    """The passages of ``text`` in order (see the module doc); every paragraph, item, row and piece of
    code is in one of them."""
    lines = _LineTable(text)
    out: list[Passage] = []
    context = _Context()
    pending_heading: _Line | None = None  # a heading whose first paragraph has not come yet
    sections: list[tuple[int, int]] = []  # each heading: its line's start, the passages before it
    open_item: int | None = None  # the term's indent of a definition passage further paragraphs may join
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.text:
            i += 1
            continue
        heading = _heading_at(lines, i)
        if heading is not None:
            level, title, i = heading
            if pending_heading is not None:
                out.append(Passage(pending_heading.start, pending_heading.end, "section", context.label, ""))
            sections.append((line.start, len(out)))
            context.heading(level, title)
            pending_heading, open_item = line, None
            continue
        context.enter(line.indent)
        if _FENCE.match(line.text):
            if pending_heading is not None:
                out.append(Passage(pending_heading.start, pending_heading.end, "section", context.label, ""))
            i = _code(text, lines, i, context, out)
            open_item = None
        else:
            stop = _block_end(lines, i)
            if open_item is not None and _continues(text, lines, i, stop, out, open_item):
                out[-1] = replace(out[-1], end=_trimmed_end(text, lines[stop - 1].end))
                i = stop
                continue
            before = len(out)
            _block(text, lines, i, stop, context, out, pending_heading)
            if pending_heading is not None and len(out) == before:
                out.append(Passage(pending_heading.start, pending_heading.end, "section", context.label, ""))
            i = stop
            open_item = _open_item(out, before, context)
        pending_heading = None
    if pending_heading is not None:
        out.append(Passage(pending_heading.start, pending_heading.end, "section", context.label, ""))
    return _whole_short_sections(out, sections)


def _whole_short_sections(out: list[Passage], sections: list[tuple[int, int]]) -> list[Passage]:
    """`out` with each short section (a heading, its paragraphs and list items up to the next heading,
    at most `SECTION_CHARS`) one passage, as a reader quotes a setting's entry (its name, "Default:
    10", what it does); definition items and table rows carry their term already."""
    merged = out[: sections[0][1]] if sections else list(out)
    ends = [first for _, first in sections[1:]] + ([len(out)] if sections else [])
    for (start, first), stop in zip(sections, ends, strict=True):
        members = out[first:stop]
        short = len(members) > 1 and members[-1].end - start <= SECTION_CHARS
        if short and all(p.kind in ("section", "paragraph", "list_item") for p in members):
            members = [Passage(start, members[-1].end, "section", members[0].heading, "")]
        merged += members
    return merged


def _open_item(out: list[Passage], before: int, context: _Context) -> int | None:
    """The term's indent when the block just read ended with a whole definition item (one passage,
    under the maximum): its further paragraphs may join it."""
    if len(out) <= before or out[-1].kind != "definition" or not context.terms:
        return None
    if len(out) - before > 1 and out[-2].kind == "definition" and out[-2].term == out[-1].term:
        return None  # cut in pieces already
    return context.terms[-1][0] if context.terms[-1][1] == out[-1].term else None


def _continues(text: str, lines: _LineTable, first: int, stop: int, out: list[Passage], indent: int) -> bool:
    """Whether the block ``lines[first:stop]`` is one more paragraph of the definition item that ends
    ``out`` (indented deeper than its term, no item, row or term of its own) and fits in it."""
    if (
        lines[first].indent <= indent
        or _trimmed_end(text, lines[stop - 1].end) - out[-1].start > PASSAGE_MAX_CHARS
    ):
        return False
    return not (
        _is_table(lines, first, stop)
        or _LIST_MARK.match(lines[first].text)
        or _term_lines(lines, first, stop)
    )


def _trimmed_end(text: str, end: int) -> int:
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def _lines(text: str) -> Iterator[_Line]:
    position = 0
    size = len(text)
    while position <= size:
        stop = text.find("\n", position)
        stop = size if stop < 0 else stop
        raw = text[position:stop]
        stripped = raw.lstrip(" \t")
        margin = len(raw) - len(stripped)
        indent = margin + 7 * raw.count("\t", 0, margin)  # a tab indents like eight spaces
        yield _Line(position, stop, indent, stripped.rstrip())
        position = stop + 1


def _heading_at(lines: _LineTable, i: int) -> tuple[int, str, int] | None:
    """``(level, title, next line)`` when line ``i`` starts a heading."""
    line = lines[i]
    if line.indent <= 3:
        atx = _ATX.match(line.text)
        if atx and atx.group(2):
            return len(atx.group(1)), " ".join(atx.group(2).split()), i + 1
    if i + 1 < len(lines) and line.indent <= 3 and len(line.text) <= _LABEL_CHARS:
        under = lines[i + 1]
        if (
            under.indent <= 3
            and len(under.text) >= 3
            and _UNDERLINE.match(under.text)
            and (i == 0 or not lines[i - 1].text)
        ):
            return (1 if under.text[0] == "=" else 2), line.text, i + 2
    return None


def _block_end(lines: _LineTable, first: int) -> int:
    """The line after the block starting at ``first``: a run of non-blank lines, up to a fence."""
    i = first + 1
    while i < len(lines) and lines[i].text and not _FENCE.match(lines[i].text):
        i += 1
    return i


def _block(
    text: str,
    lines: _LineTable,
    first: int,
    stop: int,
    context: _Context,
    out: list[Passage],
    after_heading: _Line | None,
) -> None:
    """The passages of the block ``lines[first:stop]``."""
    head = lines[first]
    if _is_table(lines, first, stop):
        _table(lines, first, stop, context, out)
        return
    if _LIST_MARK.match(head.text):
        _list_items(text, lines, first, stop, context, out)
        return
    terms = _term_lines(lines, first, stop)
    while terms:  # definition items, one after another within the block
        term = ", ".join(line.text for line in lines.span(first, first + terms))
        end = first + terms  # the body: the lines indented deeper than the term
        while end < stop and lines[end].indent > head.indent:
            end += 1
        _emit(text, head.start, lines[end - 1].end, "definition", context.label, term, out)
        context.open_term(head.indent, term)
        if end >= stop:
            return
        # Lines back at the term's indent: the rest of the block is read as a block of its own.
        first, head, after_heading = end, lines[end], None
        context.enter(head.indent)
        if _is_table(lines, first, stop) or _LIST_MARK.match(head.text):
            _block(text, lines, first, stop, context, out, None)
            return
        terms = _term_lines(lines, first, stop)
    start = after_heading.start if after_heading is not None else head.start
    _emit(
        text, start, lines[stop - 1].end, "section" if after_heading else "paragraph", context.label, "", out
    )


def _term_lines(lines: _LineTable, first: int, stop: int) -> int:
    """How many lines of the block are a definition's terms (0: the block is no definition item)."""
    indent = lines[first].indent
    for count in range(1, _TERM_LINES + 1):
        if first + count >= stop:
            return 0
        line = lines[first + count - 1]
        if line.indent != indent or len(line.text) > _TERM_CHARS or _LIST_MARK.match(line.text):
            return 0
        if lines[first + count].indent > indent:
            return count
    return 0


def _list_items(
    text: str, lines: _LineTable, first: int, stop: int, context: _Context, out: list[Passage]
) -> None:
    start = first
    for i in range(first + 1, stop + 1):
        if i == stop or (_LIST_MARK.match(lines[i].text) and lines[i].indent <= lines[start].indent + 1):
            _emit(text, lines[start].start, lines[i - 1].end, "list_item", context.label, "", out)
            start = i


def _is_table(lines: _LineTable, first: int, stop: int) -> bool:
    if stop - first < 2:
        return False
    # Indexed, not sliced: called at each item of a long block, it stops at its first line without "|".
    return all("|" in lines[i].text for i in range(first, stop)) and (
        " | " in lines[first].text or lines[first].text.startswith("|")
    )


def _table(lines: _LineTable, first: int, stop: int, context: _Context, out: list[Passage]) -> None:
    header = lines[first]
    cells = " | ".join(cell.strip() for cell in header.text.strip("|").split("|") if cell.strip())
    out.append(Passage(header.start, header.end, "table_row", context.label, ""))
    for line in lines.span(first + 1, stop):
        if _TABLE_RULE.match(line.text):
            continue
        out.append(Passage(line.start, line.end, "table_row", context.label, cells[:_LABEL_CHARS]))


def _code(text: str, lines: _LineTable, i: int, context: _Context, out: list[Passage]) -> int:
    """The code block opening at line ``i``; the line after its closing fence (or the text's end)."""
    fence = lines[i].text[:3]
    stop = i + 1
    while stop < len(lines) and not lines[stop].text.startswith(fence):
        stop += 1
    last = min(stop, len(lines) - 1)
    start = lines[i].start
    # Code is cut at line ends, each piece at most the maximum (or one line longer than it).
    piece = start
    for i_line in range(i, last + 1):
        line = lines[i_line]
        if line.end - piece > PASSAGE_MAX_CHARS and line.start > piece:
            out.append(Passage(piece, line.start - 1, "code", context.label, ""))
            piece = line.start
    _emit(text, piece, lines[last].end, "code", context.label, "", out)
    return last + 1


def _emit(
    text: str, start: int, end: int, kind: PassageKind, heading: str, term: str, out: list[Passage]
) -> None:
    """One passage, or its pieces cut at sentence ends when it is longer than the maximum."""
    end = _trimmed_end(text, end)
    start = _skip_spaces(text, start, end)
    if end <= start:
        return
    sentence_ends = (m.start() + len(m.group().rstrip()) for m in _SENTENCE_END.finditer(text, start, end))
    following = next(sentence_ends, None)
    best = -1
    piece = start
    while end - piece > PASSAGE_MAX_CHARS:
        limit = piece + PASSAGE_MAX_CHARS
        while following is not None and following <= limit:
            if following > piece:
                best = following
            following = next(sentence_ends, None)
        cut = best if best > piece else _word_cut(text, piece, limit)
        out.append(Passage(piece, cut, kind, heading, term))
        piece = _skip_spaces(text, cut, end)
    if end > piece:
        out.append(Passage(piece, end, kind, heading, term))


def _word_cut(text: str, start: int, limit: int) -> int:
    cut = text.rfind(" ", start + 1, limit)
    return cut if cut > start else limit


def _skip_spaces(text: str, position: int, end: int) -> int:
    while position < end and text[position].isspace():
        position += 1
    return position


# --- changelogs -----------------------------------------------------------------------------------

_VERSION_OR_DATE = re.compile(
    r"\b(?:v?\d+\.\d+(?:[.\-~+]\w+)*|\d{4}-\d{2}-\d{2}|\d{1,2} [A-Z][a-z]{2} \d{4}|[A-Z][a-z]{2} \d{1,2},? \d{4})\b"
)
#: A changelog: at least this many entry lines, making at least this share of its top-level lines.
_CHANGELOG_ENTRIES = 2
_CHANGELOG_SHARE = 0.3
#: Entry lines are short, and name their version or date near their start.
_ENTRY_CHARS = 120
_ENTRY_MARK_WITHIN = 60


def document_kind(text: str, name: str) -> Literal["changelog", "document"]:
    """``changelog`` for a text made of dated or versioned entries (release notes, a change log, a
    NEWS file), told by its structure: among its top-level lines (not indented, not list items nor
    table rows), at least 2 and at least 30% are short lines naming a version or a date near their
    start. ``name`` is not read: a file called CHANGES that is a manual is a manual."""
    del name
    top = entries = 0
    for line in _lines(text):
        if (
            not line.text
            or line.indent > 1
            or _LIST_MARK.match(line.text)
            or _TABLE_RULE.match(line.text)
            or " | " in line.text  # a table row: its numbers are data, not releases
        ):
            continue
        top += 1
        if len(line.text) <= _ENTRY_CHARS:
            mark = _VERSION_OR_DATE.search(line.text, 0, _ENTRY_MARK_WITHIN + 20)
            # "9.1. Core functionality" numbers a section; "9.1 (2020-01-01)" names a release.
            after = line.text[mark.end() :] if mark is not None else ""
            numbering = after == "." or after.startswith(". ")
            if mark is not None and mark.start() <= _ENTRY_MARK_WITHIN and not numbering:
                entries += 1
    return "changelog" if entries >= _CHANGELOG_ENTRIES and entries >= _CHANGELOG_SHARE * top else "document"

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
  belong to it too;
- **list item**: a line starting ``- ``, ``* ``, ``+ `` or ``1. ``, with its continuation lines;
- **table row**: a line ``a | b | c`` in a block of such lines; the first row is the header, a row
  of dashes under it is skipped;
- **code**: lines between two fences (```` ``` ````).

A :class:`Passage` is a definition item with its term and paragraph, a heading with its first
paragraph (``section``), a table row (its header in ``term``), a paragraph, a list item, or a piece of
code; ``text[start:end]`` is the passage. One longer than ``PASSAGE_MAX_CHARS`` is cut at sentence ends
(words, failing those), each piece keeping the heading and term. ``heading`` names the headings above a
passage, outermost first, and the terms of the definition items it sits in.

One pass over the lines: linear in the text, whatever its nesting.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

__all__ = ["PASSAGE_MAX_CHARS", "Passage", "PassageKind", "document_kind", "split_passages"]

PassageKind = Literal["definition", "section", "paragraph", "list_item", "table_row", "code"]

#: A passage longer than this is cut at sentence ends.
PASSAGE_MAX_CHARS = 1200
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


@dataclass(slots=True)
class _Line:
    start: int
    end: int  # without the newline
    indent: int
    text: str  # stripped


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
    lines = list(_lines(text))
    out: list[Passage] = []
    context = _Context()
    pending_heading: _Line | None = None  # a heading whose first paragraph has not come yet
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
            context.heading(level, title)
            pending_heading = line
            continue
        context.enter(line.indent)
        if _FENCE.match(line.text):
            if pending_heading is not None:
                out.append(Passage(pending_heading.start, pending_heading.end, "section", context.label, ""))
            i = _code(text, lines, i, context, out)
        else:
            stop = _block_end(lines, i)
            before = len(out)
            _block(text, lines, i, stop, context, out, pending_heading)
            if pending_heading is not None and len(out) == before:
                out.append(Passage(pending_heading.start, pending_heading.end, "section", context.label, ""))
            i = stop
        pending_heading = None
    if pending_heading is not None:
        out.append(Passage(pending_heading.start, pending_heading.end, "section", context.label, ""))
    return out


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


def _heading_at(lines: list[_Line], i: int) -> tuple[int, str, int] | None:
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
            and _first_of_block(lines, i)
        ):
            return (1 if under.text[0] == "=" else 2), line.text, i + 2
    return None


def _first_of_block(lines: list[_Line], i: int) -> bool:
    return i == 0 or not lines[i - 1].text


def _block_end(lines: list[_Line], first: int) -> int:
    """The line after the block starting at ``first``: a run of non-blank lines, up to a fence."""
    i = first + 1
    while i < len(lines) and lines[i].text and not _FENCE.match(lines[i].text):
        i += 1
    return i


def _block(
    text: str,
    lines: list[_Line],
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
    if terms:
        term = ", ".join(line.text for line in lines[first : first + terms])
        end = _definition_end(lines, first + terms, stop, head.indent)
        _emit(text, head.start, lines[end - 1].end, "definition", context.label, term, out)
        context.open_term(head.indent, term)
        if end < stop:  # lines at the term's indent again: a new block within the block
            context.enter(lines[end].indent)
            _block(text, lines, end, stop, context, out, None)
        return
    start = after_heading.start if after_heading is not None else head.start
    _emit(
        text, start, lines[stop - 1].end, "section" if after_heading else "paragraph", context.label, "", out
    )


def _term_lines(lines: list[_Line], first: int, stop: int) -> int:
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


def _definition_end(lines: list[_Line], body: int, stop: int, indent: int) -> int:
    """The line after a definition's body: the first line of the block back at the term's indent."""
    while body < stop and lines[body].indent > indent:
        body += 1
    return body


def _list_items(
    text: str, lines: list[_Line], first: int, stop: int, context: _Context, out: list[Passage]
) -> None:
    start = first
    for i in range(first + 1, stop + 1):
        if i == stop or (_LIST_MARK.match(lines[i].text) and lines[i].indent <= lines[start].indent + 1):
            _emit(text, lines[start].start, lines[i - 1].end, "list_item", context.label, "", out)
            start = i


def _is_table(lines: list[_Line], first: int, stop: int) -> bool:
    if stop - first < 2:
        return False
    return all("|" in line.text for line in lines[first:stop]) and (
        " | " in lines[first].text or lines[first].text.startswith("|")
    )


def _table(lines: list[_Line], first: int, stop: int, context: _Context, out: list[Passage]) -> None:
    header = lines[first]
    cells = " | ".join(cell.strip() for cell in header.text.strip("|").split("|") if cell.strip())
    out.append(Passage(header.start, header.end, "table_row", context.label, ""))
    for line in lines[first + 1 : stop]:
        if _TABLE_RULE.match(line.text):
            continue
        out.append(Passage(line.start, line.end, "table_row", context.label, cells[:_LABEL_CHARS]))


def _code(text: str, lines: list[_Line], i: int, context: _Context, out: list[Passage]) -> int:
    """The code block opening at line ``i``; the line after its closing fence (or the text's end)."""
    fence = lines[i].text[:3]
    stop = i + 1
    while stop < len(lines) and not lines[stop].text.startswith(fence):
        stop += 1
    last = min(stop, len(lines) - 1)
    start = lines[i].start
    # Code is cut at line ends, each piece at most the maximum (or one line longer than it).
    piece = start
    for line in lines[i : last + 1]:
        if line.end - piece > PASSAGE_MAX_CHARS and line.start > piece:
            out.append(Passage(piece, line.start - 1, "code", context.label, ""))
            piece = line.start
    _emit(text, piece, lines[last].end, "code", context.label, "", out)
    return last + 1


def _emit(
    text: str, start: int, end: int, kind: PassageKind, heading: str, term: str, out: list[Passage]
) -> None:
    """One passage, or its pieces cut at sentence ends when it is longer than the maximum."""
    start = _skip_spaces(text, start, end)
    while end > start and text[end - 1].isspace():
        end -= 1
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
    NEWS file), told by its structure: among its top-level lines (not indented, not list items), at
    least 2 and at least 30% are short lines naming a version or a date near their start. ``name`` is
    not read: a file called CHANGES that is a manual is a manual."""
    del name
    top = entries = 0
    for line in _lines(text):
        if not line.text or line.indent > 1 or _LIST_MARK.match(line.text) or _TABLE_RULE.match(line.text):
            continue
        top += 1
        if len(line.text) <= _ENTRY_CHARS:
            mark = _VERSION_OR_DATE.search(line.text, 0, _ENTRY_MARK_WITHIN + 20)
            if mark is not None and mark.start() <= _ENTRY_MARK_WITHIN:
                entries += 1
    return "changelog" if entries >= _CHANGELOG_ENTRIES and entries >= _CHANGELOG_SHARE * top else "document"

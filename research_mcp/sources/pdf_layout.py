"""A PDF's extracted pages laid out in the structure ``answering/passages.py`` reads.

pypdf gives a page's text as the printed lines, wrapped at the column's width, with no blank line
between paragraphs, the running header and footer on every page, and words hyphenated at line ends.
Cut as it is, a passage is a run of 1,200 characters across paragraphs, headings and page furniture.
This module rebuilds what a reader sees, from the layout alone (no word of any language or product):

- **running headers and footers**: a line at the top or bottom of at least two pages that says the
  same once its digits (page numbers) are set aside goes, as does a line of a page number alone;
- **paragraphs**: a line continues the paragraph above it when that line is full, that is when the
  first word of this line would not have fitted on it (the document's full width is measured from its
  own lines); a short line ends a paragraph, as does a sentence's end followed by a short line with no
  sentence end of its own (a title). A paragraph is written on one line, hyphenated words joined
  (a number's compound keeps its hyphen: "64-bit");
- **headings**: a numbered title line (``2.3  Starting a Node``) becomes a ``#`` heading at the depth
  of its number; a line that is also a running header (a chapter's or a reference page's title) a
  level-one heading;
- **titled items**: a short line with no sentence end, starting a paragraph (``Options``, a function's
  signature, a term of a glossary), becomes a definition's term, and what follows it up to the next
  title is its body, indented under it;
- **lists and preformatted text**: a line starting with a bullet is a list item (``- ``); lines
  indented, or set in columns by runs of spaces, are kept line for line; the short lines after a line
  ending with a colon are kept line for line too (a list of types, of values).

The result keeps every word of the page in order; only layout (line breaks, spaces, hyphens at line
ends, page furniture) changes. Linear in the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

__all__ = ["lay_out_pdf"]

#: Lines at each edge of a page looked at as a running header or footer.
_EDGE_LINES = 2
#: A running header or footer is at an edge of at least this many pages.
_RUNNING_PAGES = 2
#: A title (a heading or a term) is at most this many characters.
_TITLE_CHARS = 100
#: Consecutive title lines read as one titled item's terms; more are a list of short lines.
_TERM_LINES = 3
#: A line at most this share of the full width, with no sentence end, is short.
_SHORT = 0.7
#: A line continues the one above when that one plus this line's first word pass this share of the width.
_FULL = 0.88
_BODY = "    "

_NUMBERED = re.compile(r"(\d{1,2}(?:\.\d{1,3}){0,5})\.?[ \t]+(\S.*)")
_BULLET = re.compile(r"[•◦▪‣∙●○■□➢►–—][ \t]*(\S.*)")
_PAGE_NUMBER = re.compile(r"[\W\d_]+|[ivxlcdm]{1,6}")
_COLUMNS = re.compile(r"\S {3,}\S")
_SENTENCE_END = re.compile(r"[.!?:;,][)\]\"'”’]*$")
_DIGITS = re.compile(r"\d+")
_NOT_WORD = re.compile(r"[\W_]+")


def lay_out_pdf(pages: list[str]) -> str:
    """The pages' text (as pypdf extracts it) laid out as paragraphs, headings, titled items, list
    items and preformatted lines (see the module doc)."""
    kept, titles = _without_furniture(pages)
    lines = [line.rstrip() for page in kept for line in page]
    width = _full_width(lines)
    return _Layout(width, titles).run(lines)


def _key(line: str) -> str:
    """A line as a running header says it on every page: without its digits and punctuation."""
    return " ".join(_NOT_WORD.sub(" ", _DIGITS.sub(" ", line)).lower().split())


def _edges(lines: list[str]) -> list[tuple[str, list[int]]]:
    """A page's top and its bottom: the indexes of the lines shown there."""
    shown = [i for i, line in enumerate(lines) if line.strip()]
    return [("top", shown[:_EDGE_LINES]), ("bottom", shown[-_EDGE_LINES:][::-1])]


def _without_furniture(pages: list[str]) -> tuple[list[list[str]], set[str]]:
    """Each page's lines without its running header, footer and page number; and the running lines
    that are titles (no page number in them: a chapter's, a reference page's).

    A running line says the same (digits aside) at the same edge of a page and of the next page or
    the one after (left and right pages may differ): a line that happens to open two pages far
    apart (a "Types:", an "Example") is text, as is a line said more often inside pages than at
    their edges."""
    split = [page.split("\n") for page in pages]
    seen: dict[tuple[str, str], list[int]] = {}
    for number, lines in enumerate(split):
        for edge, indexes in _edges(lines):
            for i in indexes:
                key = _key(lines[i])
                if key:
                    seen.setdefault((edge, key), []).append(number)
    at_edges: dict[str, int] = {}
    for (_, key), numbers in seen.items():
        at_edges[key] = at_edges.get(key, 0) + len(numbers)
    inside: dict[str, int] = dict.fromkeys(at_edges, 0)
    for lines in split:
        edge_lines = {i for _, indexes in _edges(lines) for i in indexes}
        for i, line in enumerate(lines):
            if i not in edge_lines and line.strip() and len(line) <= 2 * _TITLE_CHARS:
                key = _key(line)
                if key in inside:
                    inside[key] += 1
    running = {
        (edge, key)
        for (edge, key), numbers in seen.items()
        if at_edges[key] > inside[key]
        and any(0 < later - earlier <= 2 for earlier, later in pairwise(numbers))
    }
    titles: set[str] = set()
    kept: list[list[str]] = []
    for lines in split:
        drop = set()
        for edge, indexes in _edges(lines):
            said = set()
            for i in indexes:
                text = lines[i].strip()
                key = _key(text)
                if _PAGE_NUMBER.fullmatch(text) or ((edge, key) in running and key not in said):
                    drop.add(i)
                    said.add(key)
                    if key and not _DIGITS.search(text) and len(text) <= _TITLE_CHARS:
                        titles.add(" ".join(text.split()))
        kept.append([line for i, line in enumerate(lines) if i not in drop])
    return kept, titles


def _full_width(lines: list[str]) -> int:
    """The length of a full line of running text: the 90th percentile of the plain lines' lengths."""
    lengths = sorted(
        len(line) for line in lines if line and not line[0].isspace() and not _COLUMNS.search(line)
    )
    return max(20, lengths[int(len(lengths) * 0.9)]) if lengths else 80


@dataclass
class _Layout:
    width: int
    titles: set[str]
    out: list[str] = field(default_factory=list)
    paragraph: list[str] = field(default_factory=list)
    indent: str = ""  # the body's indent under an open titled item
    listing: bool = False  # after a line ending with a colon: short lines kept line for line
    terms: list[str] = field(default_factory=list)
    attached: bool = False  # the next paragraph goes right under the line above (a term's, a colon's)

    def run(self, lines: list[str]) -> str:
        for i, line in enumerate(lines):
            following = next((lines[j] for j in range(i + 1, min(i + 5, len(lines))) if lines[j].strip()), "")
            if not line.strip():
                if self.paragraph and not self._continues(self.paragraph[-1], following):
                    self._end_paragraph()
                continue
            self._line(line, following)
        self._end_paragraph()
        self._end_terms()
        return re.sub(r"\n{3,}", "\n\n", "\n".join(self.out)).strip() + "\n"

    # --- one line -------------------------------------------------------------------------------

    def _line(self, line: str, following: str) -> None:
        text = " ".join(line.split())
        if line[0].isspace() or _COLUMNS.search(line):
            self._end_paragraph()
            self._end_terms()
            self._block_line(line.rstrip())
            return
        if self.paragraph:
            self._add(text)
        elif self._heading(text):
            return
        elif bullet := _BULLET.fullmatch(text):
            self._end_terms()
            self.listing = False
            self.paragraph = ["- " + bullet.group(1)]
        elif self.listing and self._short(text) and not _SENTENCE_END.search(text):
            self._end_terms()
            self._block_line(text)
            return
        elif self._title(text):
            self.terms.append(text)
            if len(self.terms) > _TERM_LINES:  # a list of short lines, not one item's terms
                self.out += ["", *(self.indent + term for term in self.terms)]
                self.terms = []
                self.attached = False
            return
        else:
            self._end_terms()
            self.listing = False
            self.paragraph = [text]
        if not self._continues(text, following):
            self._end_paragraph()

    def _add(self, text: str) -> None:
        last = self.paragraph[-1]
        if len(last) > 2 and last[-1] == "-" and last[-2].isalnum() and text[:1].islower():
            # A word hyphenated at the line's end ("imple-" "mentation"); a compound with a number
            # keeps its hyphen ("64-" "bit").
            self.paragraph[-1] = (last[:-1] if last[-2].isalpha() else last) + text
        else:
            self.paragraph.append(text)

    def _heading(self, text: str) -> bool:
        numbered = _NUMBERED.fullmatch(text)
        level = 0
        if text in self.titles:
            level = len(numbered.group(1).split(".")) if numbered else 1
        elif numbered and self._title(numbered.group(2)) and numbered.group(2)[0].isupper():
            level = len(numbered.group(1).split("."))
        if not level:
            return False
        self._end_terms()
        self.indent, self.listing = "", False
        self.out += ["", "#" * min(level, 6) + " " + text, ""]
        return True

    def _title(self, text: str) -> bool:
        return len(text) <= _TITLE_CHARS and self._short(text) and not _SENTENCE_END.search(text)

    def _short(self, text: str) -> bool:
        return len(text) <= _SHORT * self.width

    def _continues(self, line: str, following: str) -> bool:
        """Whether the line ``following`` goes on the paragraph ``line`` is part of."""
        if not following.strip() or following[0].isspace() or _COLUMNS.search(following):
            return False
        following = " ".join(following.split())
        if _BULLET.fullmatch(following):
            return False
        first_word = following.split()[0]
        if len(line) + 1 + len(first_word) < _FULL * self.width:
            return False  # the next word would have fitted: the line ended its paragraph
        ends_sentence = bool(_SENTENCE_END.search(line))
        return not (ends_sentence and self._title(following))

    # --- output -----------------------------------------------------------------------------------

    def _end_paragraph(self) -> None:
        if not self.paragraph:
            return
        text = " ".join(self.paragraph)
        self.paragraph = []
        if not self.attached and self.out and self.out[-1]:
            self.out.append("")
        self.out.append(self.indent + text)
        # What a colon introduces stays under it, line for line; else a blank line ends the paragraph.
        self.listing = self.attached = text.endswith(":")
        if not self.listing:
            self.out.append("")

    def _block_line(self, line: str) -> None:
        self.out.append(self.indent + line)
        self.attached = False

    def _end_terms(self) -> None:
        """Titles waiting for their body: what follows is that body, indented under them, with no
        blank line between (a definition item, as ``passages.py`` reads it)."""
        if not self.terms:
            return
        self.out += ["", *self.terms]
        self.terms = []
        self.indent, self.attached = _BODY, True

"""An HTML file of a corpus (a manual's page, a saved article) read into text that keeps its structure.

Written in the convention of ``passages.py``: ``<h1>``..``<h6>`` become ``#`` lines, each paragraph a
line, a ``<dt>`` its term on a line of its own with its ``<dd>`` indented below it, ``<li>`` a ``- ``
line, a table row its cells joined by `` | `` (the first row, the header, kept), ``<pre>`` a fenced
block. Navigation is left out: ``<nav>``, ``<aside>``, ``<footer>``, the ARIA landmarks that are not
the content (``navigation``, ``banner``, ``contentinfo``, ``search``, ``complementary``), elements
whose class or id names them navigation (a token holding ``nav``, ``sidebar``, ``breadcrumb``,
``menu``, ``toc``, or equal to ``related`` or ``footer``), and permalink anchors (a link to ``#...``
whose text is one symbol, such as a pilcrow).

The title is the page's ``<title>``, else its first ``<h1>``; "" when it has neither (the caller
then names it by its file). lxml reads the bytes, honouring the encoding the page declares (an XHTML
page's XML declaration included: read as a decoded string, lxml refuses it, and the title was lost).

One walk over the tree (``iterwalk``, no recursion), so its time is linear in the page and its depth
costs nothing; it runs in the parser's worker process, under its time and memory limit.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lxml.etree import _Element

__all__ = ["read_html"]

_TITLE_CHARS = 300
_INDENT = "    "
_MAX_INDENT = 8
_DROPPED_TAGS = frozenset(
    {"script", "style", "noscript", "template", "head", "nav", "aside", "footer", "iframe", "svg", "button"}
)
_DROPPED_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary"})
_NAVIGATION_WORDS = frozenset(
    {
        "nav",
        "navbar",
        "navigation",
        "sidebar",
        "breadcrumb",
        "breadcrumbs",
        "menu",
        "toc",
        "related",
        "footer",
    }
)
_NAME_PARTS = re.compile(r"[-_.:]+")
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "body", "blockquote", "center", "form", "fieldset",
        "figure", "figcaption", "address", "header", "hr", "details", "summary", "dl", "ul", "ol",
        "caption", "tbody", "thead", "tfoot", "html", "menu", "dir",
    }
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}


def read_html(data: bytes) -> tuple[str, str]:
    """``(title, text)`` of an HTML file's bytes (see the module doc)."""
    import lxml.html
    from lxml import etree

    try:
        tree = lxml.html.document_fromstring(data)
    except (etree.ParserError, ValueError):
        return "", ""
    title = _collapse(tree.findtext(".//title") or "")
    writer = _Writer()
    body = tree.find("body")
    walker = etree.iterwalk(body if body is not None else tree, events=("start", "end"))
    for event, element in walker:
        if event == "start":
            if _dropped(element):
                walker.skip_subtree()
                writer.tail(element.tail)
                continue
            writer.start(element)
        else:
            writer.end(element)
            writer.tail(element.tail)
    writer.flush()
    text = "\n".join(writer.out).strip()
    return title or writer.first_h1, re.sub(r"\n{3,}", "\n\n", text)


def _dropped(element: _Element) -> bool:
    tag = element.tag
    if not isinstance(tag, str):  # a comment or a processing instruction: its text is no content
        return True
    tag = tag.lower()
    if (
        tag in _DROPPED_TAGS
        or element.get("role", "").lower() in _DROPPED_ROLES
        or element.get("hidden") is not None
    ):
        return True
    names = f"{element.get('class', '')} {element.get('id', '')}".lower().split()
    if any(_navigational(name) for name in names[:16]):
        return True
    if tag == "a" and (element.get("href") or "").startswith("#") and len(element) == 0:
        shown = (element.text or "").strip()
        return len(shown) == 1 and not shown.isalnum()
    return False


def _navigational(name: str) -> bool:
    """Whether a class or id names navigation: one of its parts is such a word ("nav", "sidebar",
    "toc" ...), or ends with "sidebar" (written as one word with a prefix)."""
    return any(part in _NAVIGATION_WORDS or part.endswith("sidebar") for part in _NAME_PARTS.split(name)[:8])


class _Writer:
    """Lines of the structured text, built from the walk's start and end events."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.words: list[str] = []  # the inline text of the open block
        self.level = 0
        self.gap = False  # a blank line before the next line written
        self.prefix = ""  # "- " for a list item's first line
        self.pre = 0  # depth of <pre> elements open: text is kept as written
        self.cells: list[list[str]] | None = None  # the open table row's cells, when in one
        self.table_depth = 0
        self.first_h1 = ""
        self.tight = False  # the last line written was a term: its definition follows without a gap

    def start(self, element: _Element) -> None:
        tag = str(element.tag).lower()
        if self.pre:
            self.words.append(element.text or "")
            return
        if self.cells is not None and tag in ("td", "th"):
            self.cells.append([])
        elif self.cells is not None:
            self._text(" ")  # a block inside a cell: its words join the cell's
        elif tag == "li":
            self.flush(gap=False)  # the items of a list follow each other without a gap
            self.prefix = "- "
        elif tag in _HEADINGS or tag in _BLOCKS or tag == "dt":
            self.flush()
        elif tag == "dd":
            self.flush(gap=False)
            self.level += 1
        elif tag == "pre":
            self.flush()
            self.pre += 1
        elif tag == "table":
            self.flush()
            self.table_depth += 1
        elif tag == "tr":
            self.flush(gap=False)
            self.cells = []
        elif tag == "br":
            self.words.append(" ")
        self._text(element.text)

    def end(self, element: _Element) -> None:
        tag = str(element.tag).lower()
        if tag == "pre" and self.pre:
            self.pre -= 1
            if not self.pre:
                code = "".join(self.words).strip("\n")
                self.words.clear()
                if code.strip():
                    self._line("```", gap=True)
                    for line in code.split("\n"):
                        self._line(line.rstrip(), gap=False)
                    self._line("```", gap=False)
                self.gap = True
            return
        if self.pre:
            return
        if tag == "tr" and self.cells is not None:
            cells = [" ".join("".join(cell).split()) for cell in self.cells]
            self.cells = None
            if any(cells):
                self._line(" | ".join(cells), gap=self.gap)
        elif self.cells is not None:
            return
        elif tag in _HEADINGS:
            heading = " ".join("".join(self.words).split())
            self.words.clear()
            if heading:
                self.level = 0
                self._line("#" * _HEADINGS[tag] + " " + heading, gap=True)
                self.gap = True
                if tag == "h1" and not self.first_h1:
                    self.first_h1 = heading[:_TITLE_CHARS]
        elif tag == "dt":
            self.flush(gap=False)
            self.tight = True
        elif tag == "dd":
            self.flush()
            self.level = max(0, self.level - 1)
        elif tag == "table":
            self.table_depth = max(0, self.table_depth - 1)
            self.gap = True
        elif tag == "li":
            self.flush(gap=False)
        elif tag in _BLOCKS:
            self.flush()

    def tail(self, text: str | None) -> None:
        self._text(text)

    def _text(self, text: str | None) -> None:
        if not text:
            return
        if self.pre:
            self.words.append(text)
        elif self.cells is not None:
            if self.cells:
                self.cells[-1].append(text)
        else:
            self.words.append(text)

    def flush(self, *, gap: bool = True) -> None:
        if self.pre or self.cells is not None:
            return
        line = " ".join("".join(self.words).split())
        self.words.clear()
        if line:
            self._line(self.prefix + line, gap=self.gap)
            self.prefix = ""
        self.gap = self.gap or gap

    def _line(self, line: str, *, gap: bool) -> None:
        if self.tight:
            gap, self.tight = False, False
        if gap and self.out and self.out[-1]:
            self.out.append("")
        self.gap = False
        self.out.append(_INDENT * min(self.level, _MAX_INDENT) + line if line else "")


def _collapse(text: Any) -> str:
    return " ".join(str(text).split())[:_TITLE_CHARS]

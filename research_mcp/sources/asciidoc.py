"""AsciiDoc sources (``.adoc``, ``.asciidoc``, or ``.txt`` that reads as AsciiDoc) read into text that
keeps their structure, in the convention of ``passages.py``, with the markup removed.

- titles (``= Title``, or a line underlined with ``=``, ``-``, ``~``, ``^``, ``+``) become ``#`` lines;
- a definition list's ``term::`` (``:::``, ``::::``, ``;;``) becomes its term on a line of its own
  with its paragraph indented below it (stacked terms stay stacked); a paragraph attached by ``+``,
  or an open block ``--`` attached to an item, stays in the item's body, a list inside it one level
  deeper;
- list items ``*``, ``-``, ``.``, ``1.`` become ``- `` lines; a table ``|===`` its rows ``a | b``;
  listing and literal blocks (``----``, ``....``) fenced code; a ``[verse]`` paragraph keeps its lines;
- markup goes: ``linkgit:git-config[1]`` is ``git-config(1)``, ``link:url[text]`` and
  ``https://...[text]`` their text, ``<<id,text>>`` its text, ``[[anchors]]``, block attributes
  (``[verse]``, ``[source,c]``), comments and passthrough blocks vanish, `` `quotes` `` lose their
  marks, ``{attribute}`` references are replaced where the document defines them (``:name: value``)
  or AsciiDoc predefines them (``{nbsp}``, ``{litdd}`` ...);
- ``ifdef::name[]`` .. ``endif::name[]`` keep their text unless the document unset ``name``;
  ``ifndef::name[]`` drops it when the document set ``name``: an attribute the build would set is
  unknown here, and text kept loses less than text dropped.

``include::file[]`` is followed before conversion by :func:`expand_includes`, which reads only
regular files under the corpus folder, at most ``MAX_INCLUDE_DEPTH`` deep, never one already being
included (a cycle), and stops adding text at the size cap. :func:`render_asciidoc` then works on the
text alone, one pass over its lines with every pattern bounded, so it is linear in the text; it runs
in the parser's worker process, under its time and memory limit.

A small converter rather than the ``asciidoc`` package: that one is a 6,000-line program driven by
configuration files, writing HTML or DocBook (text would need a second step), and it runs
``include::`` and ``sys::`` macros itself; this needs a fraction of it, bounded.
"""

from __future__ import annotations

import re
from pathlib import Path

from research_mcp.core.errors import SourceError
from research_mcp.sources.documents import decode_text, read_regular_file

__all__ = ["MAX_INCLUDE_DEPTH", "expand_includes", "looks_like_asciidoc", "render_asciidoc"]

#: Includes followed inside includes at most this deep.
MAX_INCLUDE_DEPTH = 4
#: Include directives followed at most in one document.
MAX_INCLUDES = 256
_INDENT = "    "
_MAX_INDENT = 8

_INCLUDE = re.compile(r"include::([^\[\s]{1,1000})\[[^\]\n]{0,200}\][ \t]*$")
_CONDITIONAL = re.compile(r"(ifdef|ifndef|ifeval)::([^\[\n]{0,200})\[([^\n]{0,2000})\][ \t]*$")
_ENDIF = re.compile(r"endif::[^\[\n]{0,200}\[\][ \t]*$")
_ATTRIBUTE_ENTRY = re.compile(r":(!?)([A-Za-z0-9_][\w-]{0,80})(!?):(?:[ \t]+(.*))?$")
_BLOCK_ANCHOR = re.compile(r"\[\[[^\]\n]{0,200}\]\][ \t]*$")
_BLOCK_ATTRIBUTES = re.compile(r"\[[^\]\n]{0,500}\][ \t]*$")
_BLOCK_TITLE = re.compile(r"\.([^\s.][^\n]{0,300})$")
_ONE_LINE_TITLE = re.compile(r"(={1,6})[ \t]+(\S[^\n]{0,300}?)(?:[ \t]+=+)?[ \t]*$")
_UNDERLINES = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
_TERM = re.compile(r"(\S[^\n]{0,300}?)(:{2,4}|;;)(?:[ \t]+(\S[^\n]*))?$")
_LIST_ITEM = re.compile(r"[ \t]*(\*{1,5}|-|\.{1,5}|\d{1,9}\.)[ \t]+(\S[^\n]*)$")
_DELIMITER = re.compile(r"(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|\|={3,})[ \t]*$")

# Inline markup, each pattern bounded so a line of unmatched marks costs linear time.
_ATTRIBUTE_REFERENCE = re.compile(r"\{([A-Za-z0-9_][\w-]{0,80})\}")
_LINKGIT = re.compile(r"linkgit:([\w.+-]{1,200})\[([^\]\n]{0,20})\]")
_MACRO_LINK = re.compile(
    r"\b(?:link|xref|mailto|https?|ftp|irc|file):([^\s\[\]]{0,2000})\[([^\]\n]{0,500})\]"
)
_CROSS_REFERENCE = re.compile(r"<<([^,<>\n]{1,200})(?:,[ \t]*([^<>\n]{1,300}))?>>")
_INLINE_ANCHOR = re.compile(r"\[\[[^\]\n]{0,200}\]\]|anchor:[\w.-]{1,200}\[[^\]\n]{0,200}\]")
_FOOTNOTE = re.compile(r"footnote(?:ref)?:([\w-]{0,80})\[([^\]\n]{0,1000})\]")
_QUOTED = re.compile(r"(?<![\w\\])([*_+'#])([^\s*_+'#\n](?:[^\n]{0,120}?[^\s\\])?)\1(?!\w)")
_DOUBLE_QUOTED = re.compile(r"``([^\n]{1,300}?)''")
_MARKUP_CHARACTER = re.compile(r"[{\[<`'*_+#:]")
_HARD_BREAK = re.compile(r"[ \t]\+$")
_PREDEFINED = {
    "nbsp": "\u00a0", "sp": " ", "empty": "", "blank": "", "zwsp": "", "apos": "'", "quot": '"',
    "amp": "&", "lt": "<", "gt": ">", "startsb": "[", "endsb": "]", "vbar": "|", "caret": "^",
    "asterisk": "*", "tilde": "~", "plus": "+", "backslash": "\\", "backtick": "`", "two-colons": "::",
    "two-semicolons": ";;", "litdd": "--", "cpp": "C++",
}  # fmt: skip
# AsciiDoc's own marks, by kind: directives with their brackets, man page links, block anchors and
# attributes, cross references, and a short "term::" line with its definition on the next line (a
# reStructuredText "Example::" is followed by a blank line; a texinfo menu's "* Node::" is a list).
_ASCIIDOC_MARKS = [
    re.compile(p, re.MULTILINE)
    for p in (
        r"^include::[^\[\n]{1,300}\[[^\]\n]{0,200}\]$",
        r"^(?:ifn?def::[^\[\n]{0,200}\[|endif::[^\[\n]{0,200}\[\]$)",
        r"^\[\[[^\]\n]{1,200}\]\]$",
        r"^\[(?:verse|source|listing|literal|quote|NOTE|TIP|IMPORTANT|WARNING|CAUTION)[^\]\n]{0,200}\]$",
        r"^(?![*-] )\S[^\n]{0,80}(?<![:;])(?::{2,4}|;;)\n[ \t]*\S",
        r"linkgit:[\w.+-]{1,200}\[",
        r"<<[\w-]{1,200}(?:,[^>\n]{1,200})?>>",
    )
]
# reStructuredText's own marks: a directive ".. name::" or a role ":name:`text`" (never AsciiDoc).
_RESTRUCTURED_MARKS = re.compile(r"^\.\. [\w:-]{1,60}::|:[\w:-]{1,60}:`[^`\n]{1,300}`", re.MULTILINE)
_SETEXT = re.compile(r"\A\s*(\S[^\n]{0,300})\n(=+|-+)[ \t]*\n")


def looks_like_asciidoc(text: str) -> bool:
    """Whether a ``.txt`` file reads as AsciiDoc: AsciiDoc's own marks (``term::`` with its definition
    on the next line, ``include::x[]``, ``ifdef::x[]``, ``[[anchor]]``, ``[verse]``, ``linkgit:``,
    ``<<ref>>``) in its first 64 KB, of two kinds, or twice one kind under an underlined or ``= ``
    title as long as its underline; and no reStructuredText directive or role (``.. note::``)."""
    head = text[:65536]
    if _RESTRUCTURED_MARKS.search(head):
        return False
    setext = _SETEXT.match(head)
    titled = (setext is not None and abs(len(setext.group(1)) - len(setext.group(2))) <= 2) or bool(
        re.match(r"\s*= \S", head)
    )
    kinds = [len(mark.findall(head, 0, len(head))[:2]) for mark in _ASCIIDOC_MARKS]
    found = sum(1 for count in kinds if count)
    return found >= 2 or (titled and found == 1 and sum(kinds) >= 2)


def expand_includes(text: str, file: Path, root: Path, cap: int) -> str:
    """``text`` (of ``file``) with each ``include::other[]`` line replaced by that file's text, when it
    is a regular file under ``root``; an include that cannot be followed is left out. At most
    ``MAX_INCLUDE_DEPTH`` deep, never into a file already being included, at most ``MAX_INCLUDES``
    of them, and no more than ``cap`` characters in all."""
    root = root.resolve()
    budget = [cap - len(text), MAX_INCLUDES]

    def expand(body: str, where: Path, chain: tuple[Path, ...]) -> str:
        out: list[str] = []
        for line in body.split("\n"):
            found = _INCLUDE.match(line) if line.startswith("include::") else None
            if found is None:
                out.append(line)
                continue
            target = (where.parent / found.group(1)).resolve()
            if (
                len(chain) > MAX_INCLUDE_DEPTH
                or target in chain
                or "{" in found.group(1)
                or not target.is_relative_to(root)
                or budget[1] <= 0
            ):
                continue
            budget[1] -= 1
            try:
                data = read_regular_file(target, max(0, budget[0]))
            except (SourceError, OSError):
                continue
            included = decode_text(data).replace("\r\n", "\n")
            budget[0] -= len(included)
            # Blank lines around it: what it holds starts and ends blocks of its own (a title on its
            # first line is a title, not the end of the paragraph before the include).
            out += ["", expand(included, target, (*chain, target)), ""]
        return "\n".join(out)

    return expand(text, file, (file.resolve(),))


class _Writer:
    """Lines of the structured text: paragraphs joined on one line each, at an indent."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.words: list[str] = []
        self.gap = False
        self.tight = False
        self.verse = False
        self.item_indent: int | None = None  # the open list item's indent

    def line(self, text: str, indent: int, *, gap: bool) -> None:
        if self.tight:
            gap, self.tight = False, False
        if gap and self.out and self.out[-1]:
            self.out.append("")
        self.out.append(_INDENT * min(indent, _MAX_INDENT) + text if text else "")

    def flush(self, indent: int) -> None:
        if self.words and self.item_indent is not None:
            self.line(" ".join(" ".join(self.words).split()), self.item_indent, gap=False)
            self.words.clear()
        elif self.words:
            if self.verse:
                for index, words in enumerate(self.words):
                    self.line(words, indent, gap=index == 0)
            else:
                self.line(" ".join(" ".join(self.words).split()), indent, gap=True)
            self.words.clear()
        self.verse = False


class _Renderer:
    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.attributes: dict[str, str] = {}
        self.unset: set[str] = set()
        self.writer = _Writer()
        self.title = ""
        self.levels: list[str] = []  # the markers of the open definition lists, outermost first
        self.base = 0  # the indent of the open block the lists are in
        self.body: int | None = None  # the indent of the open item's body, None outside any item
        self.attached = False  # a "+" line: the next block belongs to the item
        self.blocks: list[tuple[list[str], int, int | None]] = []  # open "--" blocks: what they restore
        self.conditions: list[bool] = []  # the open conditionals: whether each keeps its text
        self.skipping = 0  # how many of them leave their text out

    @property
    def indent(self) -> int:
        return self.body if self.body is not None else self.base

    def render(self) -> tuple[str, str]:
        i = 0
        while i < len(self.lines):
            i = self._line(i)
        self.writer.flush(self.indent)
        text = "\n".join(line.rstrip() for line in self.writer.out)
        return self.title, re.sub(r"\n{3,}", "\n\n", text).strip()

    def _line(self, i: int) -> int:
        line = self.lines[i].rstrip()
        if self._conditional(line):
            return i + 1
        if self.skipping:
            return i + 1
        if not line:
            self.writer.flush(self.indent)
            return i + 1
        if line.startswith("//") and not line.startswith("////"):
            return i + 1
        entry = _ATTRIBUTE_ENTRY.match(line)
        if entry:
            self._attribute(entry)
            return i + 1
        delimiter = _DELIMITER.match(line)
        heading = self._heading(i)
        if heading is not None:
            level, title, after = heading
            self.writer.flush(self.indent)
            self.levels, self.body, self.base, self.blocks = [], None, 0, []
            self.writer.line("#" * level + " " + title, 0, gap=True)
            self.title = self.title or title
            return after
        if delimiter is not None:
            return self._delimited(i, delimiter.group(1))
        if line == "--":
            self._open_block()
            return i + 1
        if line == "+":
            self.writer.flush(self.indent)
            self.attached = True
            return i + 1
        if _BLOCK_ANCHOR.match(line):
            return i + 1
        if _BLOCK_ATTRIBUTES.match(line):
            self.writer.flush(self.indent)
            self.writer.verse = line.startswith(("[verse", "[literal", "[listing"))
            return i + 1
        block_title = _BLOCK_TITLE.match(line)
        if block_title and not self.writer.words:
            self.writer.line(self._inline(block_title.group(1)), self.indent, gap=True)
            return i + 1
        term = _TERM.match(line) if not line[0].isspace() else None
        if term:
            self._term(term.group(1), term.group(2), term.group(3))
            return i + 1
        item = _LIST_ITEM.match(line)
        if item:
            self.writer.flush(self.indent)
            depth = min(len(item.group(1)), 5) - 1 if item.group(1)[0] in "*." else 0
            self.writer.words.append("- " + self._inline(item.group(2)))
            self.writer.item_indent = self.indent + depth  # its continuation lines join it
            self.attached = False
            return i + 1
        self._text(line)
        return i + 1

    def _conditional(self, line: str) -> bool:
        if not line.startswith(("ifdef::", "ifndef::", "ifeval::", "endif::")):
            return False
        if _ENDIF.match(line):
            if self.conditions and not self.conditions.pop():
                self.skipping -= 1
            return True
        found = _CONDITIONAL.match(line)
        if found is None:
            return False
        kind, names, content = found.groups()
        keep = self._holds(kind, names)
        if content and kind != "ifeval":  # the one-line form: ifdef::name[text]
            if keep and not self.skipping:
                self._text(content)
            return True
        self.conditions.append(keep)
        self.skipping += not keep
        return True

    def _holds(self, kind: str, names: str) -> bool:
        if kind == "ifeval":
            return True  # an expression on the build's attributes: unknown, kept
        parts = [name for name in re.split(r"[,+]", names) if name]
        if kind == "ifdef":
            return not any(name in self.unset for name in parts)
        return not ("," in names and any(name in self.attributes for name in parts)) and not (
            "," not in names and parts and all(name in self.attributes for name in parts)
        )

    def _attribute(self, entry: re.Match[str]) -> None:
        name = entry.group(2)
        if entry.group(1) or entry.group(3):
            self.attributes.pop(name, None)
            self.unset.add(name)
        else:
            self.attributes[name] = self._inline(entry.group(4) or "")
            self.unset.discard(name)

    def _heading(self, i: int) -> tuple[int, str, int] | None:
        line = self.lines[i].rstrip()
        one = _ONE_LINE_TITLE.match(line)
        if one:
            return len(one.group(1)), self._inline(one.group(2)), i + 1
        if i + 1 < len(self.lines) and line and not line[0].isspace() and self._starts_block(i):
            under = self.lines[i + 1].rstrip()
            if (
                len(under) >= 2
                and under[0] in _UNDERLINES
                and under == under[0] * len(under)
                and abs(len(under) - len(line)) <= 2
            ):
                return _UNDERLINES[under[0]], self._inline(line), i + 2
        return None

    def _starts_block(self, i: int) -> bool:
        """Whether line ``i`` opens a block: first, after a blank line, or after a block's anchor or
        attributes (``[[id]]``, ``[verse]``)."""
        before = self.lines[i - 1].rstrip() if i else ""
        return (
            not before
            or _BLOCK_ATTRIBUTES.match(before) is not None
            or _BLOCK_ANCHOR.match(before) is not None
        )

    def _delimited(self, i: int, delimiter: str) -> int:
        """A delimited block from line ``i``; the line after its closing delimiter."""
        mark = delimiter[0]
        self.writer.flush(self.indent)
        if mark in "=*_":  # example, sidebar, quote: the frame goes, the content is read
            return i + 1
        stop = i + 1
        while stop < len(self.lines) and self.lines[stop].rstrip() != delimiter:
            stop += 1
        content = self.lines[i + 1 : stop]
        if mark in "-.":
            self.writer.line("```", self.indent, gap=True)
            for line in content:
                self.writer.line(line.rstrip(), self.indent if line.strip() else 0, gap=False)
            self.writer.line("```", self.indent, gap=False)
        elif mark == "|":
            self._table(content)
        # "////" comments and "++++" passthrough (raw HTML or DocBook) say nothing here.
        self.attached = False
        return stop + 1

    def _table(self, content: list[str]) -> None:
        cells: list[str] = []
        columns = 0
        for line in content:
            if not line.strip():
                continue
            parts = [part.strip() for part in line.split("|")[1:]] if line.lstrip().startswith("|") else None
            if parts is None:  # a cell's text continued on the next line
                if cells:
                    cells[-1] = f"{cells[-1]} {line.strip()}"
                continue
            columns = columns or len(parts)
            cells += parts
        columns = columns or 1
        for start in range(0, len(cells), columns):
            row = " | ".join(self._inline(cell) for cell in cells[start : start + columns])
            self.writer.line(row, self.indent, gap=start == 0)
        self.writer.gap = True

    def _open_block(self) -> None:
        self.writer.flush(self.indent)
        if self.attached or not self.blocks:
            self.blocks.append((self.levels, self.base, self.body))
            if self.attached and self.body is not None:
                self.base = self.body
            self.levels, self.body = [], None
            self.attached = False
            return
        self.levels, self.base, self.body = self.blocks.pop()

    def _term(self, term: str, marker: str, rest: str | None) -> None:
        after_term = self.writer.tight
        self.writer.flush(self.indent)
        if marker in self.levels:
            del self.levels[self.levels.index(marker) + 1 :]
        else:
            self.levels.append(marker)
        indent = self.base + len(self.levels) - 1
        self.writer.tight = after_term  # stacked terms follow each other
        self.writer.line(self._inline(term), indent, gap=True)
        self.writer.tight = True
        self.body = indent + 1
        self.attached = False
        if rest:
            self.writer.words.append(self._inline(rest))

    def _text(self, line: str) -> None:
        if (
            self.body is not None
            and not (self.attached or self.writer.tight or self.writer.words)
            and not line[0].isspace()
        ):  # a paragraph neither attached nor indented ends the list
            self.levels, self.body = [], None
        self.attached = False
        self.writer.words.append(self._inline(_HARD_BREAK.sub("", line.strip())))

    def _inline(self, text: str) -> str:
        if _MARKUP_CHARACTER.search(text) is None:  # most table cells, many lines: nothing to remove
            return text
        text = _ATTRIBUTE_REFERENCE.sub(self._reference, text)
        text = _INLINE_ANCHOR.sub("", text)
        text = _LINKGIT.sub(lambda m: f"{m.group(1)}({m.group(2)})", text)
        text = _MACRO_LINK.sub(lambda m: m.group(2) or m.group(0).split("[", 1)[0], text)
        text = _CROSS_REFERENCE.sub(lambda m: m.group(2) or m.group(1), text)
        text = _FOOTNOTE.sub(lambda m: f" ({m.group(2)})" if m.group(2) else "", text)
        text = _DOUBLE_QUOTED.sub("\u201c\\1\u201d", text)
        text = text.replace("`", "")
        return _QUOTED.sub(r"\2", text)

    def _reference(self, found: re.Match[str]) -> str:
        name = found.group(1)
        if name in self.attributes:
            return self.attributes[name]
        return _PREDEFINED.get(name, found.group(0))


def render_asciidoc(text: str) -> tuple[str, str]:
    """``(title, text)`` of an AsciiDoc source whose includes are expanded (see the module doc); the
    title is its document title, "" when it has none."""
    return _Renderer(text.replace("\r\n", "\n")).render()

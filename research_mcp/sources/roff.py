"""Manual pages in their source form (roff, as ``/usr/share/man/man5/fstab.5.gz`` holds them), read
as the text ``man`` shows: requests become paragraph breaks and headings, font and character escapes
become the characters they stand for. Without it a folder of man pages is quoted with ``.sp``,
``\\fB`` and ``\\(cq`` in every line, and its sentences run across the markup.

Only what the ``man`` and ``mdoc``-free pages of a Linux system use is rendered: section and
paragraph macros, font macros (``.B``, ``.BR``, ...), tagged paragraphs, the common named characters.
Everything else a request does (registers, conditionals, macro definitions, fills) is dropped: the
words a page says are all on its text lines and its macros' arguments.
"""

from __future__ import annotations

import re

__all__ = ["is_roff", "render_roff"]

# A man page opens with its title request, perhaps after comments ("'\" t", ".\" Title: ...").
_TITLE = re.compile(r"^\.TH\s", re.MULTILINE)
_REQUEST = re.compile(r"^[.']\s*(\S*)\s*(.*)$")
_END = re.compile(r"^\.\s*\.\s*$")
# Macros whose arguments are text in one font or alternating fonts: joined without spaces when the
# fonts alternate (".BR mount (8)" is "mount(8)").
_FONT = frozenset({"B", "I", "SM", "SB"})
_ALTERNATING = frozenset({"BR", "RB", "BI", "IB", "IR", "RI"})
# Macros that start a paragraph; a tagged one gives its tag as a line of its own.
_PARAGRAPH = frozenset(
    {"PP", "P", "LP", "sp", "TP", "IP", "HP", "TQ", "br", "RS", "RE", "nf", "fi", "EX", "EE"}
)
_HEADING = frozenset({"SH", "SS"})
_INDENT = "    "
#: Indentation steps written at most, and ``.RS`` shifts remembered at most (deeper ones are flat).
_MAX_INDENT = 8
_MAX_SHIFTS = 64
_NAMED = {
    "cq": "\u2019",
    "aq": "'",
    "oq": "\u2018",
    "lq": "\u201c",
    "rq": "\u201d",
    "dq": '"',
    "em": "\u2014",
    "en": "\u2013",
    "hy": "-",
    "bu": "\u2022",
    "co": "\u00a9",
    "rg": "\u00ae",
    "tm": "\u2122",
    "de": "\u00b0",
    "mu": "\u00d7",
    "<=": "\u2264",
    ">=": "\u2265",
    "->": "\u2192",
    "<-": "\u2190",
}
# A bracketed name is short and holds no escape: bounded, so "\\[" repeated without a "]" is read in
# linear time (an unbounded "[^\]]*" looked to the line's end from each of them: quadratic).
_ESCAPE = re.compile(
    r"\\(?:f(?:\[[^\]\\\n]{0,40}\]|\(..|.)"  # a font change: \fB, \f(CW, \f[B]
    r"|\((?P<two>..)"  # a named character: \(cq
    r"|\[(?P<long>[^\]\\\n]{0,40})\]"  # a named character: \[cq]
    r"|\*(?:\[[^\]\\\n]{0,40}\]|\(..|.)"  # a string: \*(lq, \*R
    r"|s[-+]?\d+"  # a size change: \s-1
    r"|(?P<one>.))"  # one character: \- \& \e \~ ...
)
_ONE = {
    "-": "-",
    "e": "\\",
    "~": " ",
    " ": " ",
    "0": " ",
    "&": "",
    "|": "",
    "^": "",
    "c": "",
    ":": "",
    "%": "",
}
_STRINGS = {"lq": "\u201c", "rq": "\u201d", "R": "\u00ae", "Tm": "\u2122", "Aq": "'"}


def is_roff(text: str) -> bool:
    """Whether a text is a man page's roff source: a title request among its first lines."""
    return bool(_TITLE.search(text[:4000]))


def render_roff(text: str) -> str:
    """The page as text, in the structure convention of ``passages.py``: a ``#`` line per section
    (``##`` per subsection), a paragraph per line, a tagged paragraph (``.TP``, ``.IP tag``, or a
    paragraph whose body is indented by ``.RS``) as its tag on a line of its own with its body indented
    below it; font macros become their words, escapes their characters."""
    page = _Page()
    defining = False
    for line in text.split("\n"):
        if defining:  # a macro definition runs to its ".." line (". ." indented)
            defining = _END.match(line) is None
            continue
        request = _REQUEST.match(line)
        if request is None:
            page.text(_escapes(line))
            continue
        name, rest = request.groups()
        if name.startswith('\\"'):  # a comment
            continue
        if name in ("de", "de1", "am", "ig"):
            defining = True
        elif name in _HEADING:
            page.heading("#" if name == "SH" else "##", _escapes(" ".join(_arguments(rest))))
        elif name in _PARAGRAPH:
            page.request(name, _escapes(_arguments(rest)[0]) if name == "IP" and rest.strip() else "")
        elif name in _FONT:
            page.text(_escapes(" ".join(_arguments(rest))))
        elif name in _ALTERNATING:
            page.text(_escapes("".join(_arguments(rest))))
        elif name == "TH":
            parts = _arguments(rest)
            page.text(_escapes(f"{parts[0]}({parts[1]})" if len(parts) > 1 else " ".join(parts)))
            page.flush()
        # Every other request (registers, conditionals, fills, spacing) says nothing.
    page.flush()
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in page.out)).strip()


class _Page:
    """The rendered page as it is written: filled paragraphs, one per line, at an indent."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.words: list[str] = []
        self.level = 0  # indentation steps: ``.RS`` and tagged paragraphs
        self.tagged = False  # in a tagged paragraph's body (one step deeper than its tag)
        self.shifts: list[tuple[int, bool]] = []  # what each open ``.RS`` will restore
        self.fill = True
        self.gap = False  # a blank line before the next paragraph
        self.awaiting_tag = False  # after ``.TP``: the next line is the tag

    def text(self, words: str) -> None:
        if self.awaiting_tag:
            self.awaiting_tag = False
            self.words.append(words)
            self.flush()
            self.tagged, self.gap = True, False
        elif self.fill:
            self.words.append(words)
        else:
            self._write(words)

    def flush(self, *, gap: bool = True) -> None:
        if self.words:
            self._write(" ".join(word for word in (w.strip() for w in self.words) if word))
            self.words.clear()
        self.gap = self.gap or gap

    def _write(self, line: str) -> None:
        if self.gap and self.out and self.out[-1]:
            self.out.append("")
        self.gap = False
        indent = min(self.level + self.tagged, _MAX_INDENT)
        self.out.append(_INDENT * indent + line if line else "")

    def heading(self, marks: str, title: str) -> None:
        self.flush()
        self.level, self.tagged, self.shifts, self.fill = 0, False, [], True
        self.out += ["", f"{marks} {title}", ""]
        self.gap = False

    def request(self, name: str, tag: str) -> None:
        if name == "RS":
            term = bool(self.words) and not self.tagged
            self.flush(gap=not term)  # a paragraph a ".RS" indents the body of is that body's term
            if len(self.shifts) < _MAX_SHIFTS:
                self.shifts.append((self.level, self.tagged))
            self.level, self.tagged = self.level + 1 + self.tagged, False
            self.gap = not term
            return
        if name == "RE":
            self.flush()
            if self.shifts:
                self.level, self.tagged = self.shifts.pop()
            return
        if name == "br":
            self.flush(gap=False)
            return
        self.flush()
        if name in ("nf", "EX"):
            self.fill = False
        elif name in ("fi", "EE"):
            self.fill = True
        elif name in ("TP", "TQ"):
            self.tagged, self.awaiting_tag = False, True
        elif name == "IP":
            self.tagged = False
            if tag:
                self.words.append(tag)
                self.flush()
                self.gap = False
            self.tagged = True
        elif name in ("PP", "P", "LP", "HP"):
            self.tagged = False


def _arguments(rest: str) -> list[str]:
    """A request's arguments: words, or double-quoted phrases."""
    return [quoted or word for quoted, word in re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest)]


def _escapes(line: str) -> str:
    def replace(found: re.Match[str]) -> str:
        if found.group("two") is not None:
            return _NAMED.get(found.group("two"), "")
        if found.group("long") is not None:
            return _NAMED.get(found.group("long"), "")
        if found.group("one") is not None:
            return _ONE.get(found.group("one"), found.group("one"))
        whole = found.group()
        if whole.startswith("\\*"):
            return _STRINGS.get(whole[2:].strip("[]("), "")
        return ""

    return _ESCAPE.sub(replace, line)

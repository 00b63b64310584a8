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
_ESCAPE = re.compile(
    r"\\(?:f(?:\[[^\]]*\]|\(..|.)"  # a font change: \fB, \f(CW, \f[B]
    r"|\((?P<two>..)"  # a named character: \(cq
    r"|\[(?P<long>[^\]]*)\]"  # a named character: \[cq]
    r"|\*(?:\[[^\]]*\]|\(..|.)"  # a string: \*(lq, \*R
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
    """The page as text: a paragraph per paragraph macro, a heading line per section, the words of
    font macros and text lines with their escapes rendered."""
    out: list[str] = []
    defining = False
    for line in text.split("\n"):
        if defining:  # a macro definition runs to its ".." line (". ." indented)
            defining = _END.match(line) is None
            continue
        request = _REQUEST.match(line)
        if request is None:
            out.append(_escapes(line))
            continue
        name, rest = request.groups()
        if name.startswith('\\"'):  # a comment
            continue
        if name in ("de", "de1", "am", "ig"):
            defining = True
            continue
        if name in _HEADING:
            out += ["", _escapes(" ".join(_arguments(rest))), ""]
        elif name in _PARAGRAPH:
            out.append("")
            if name == "IP" and rest:
                out.append(_escapes(_arguments(rest)[0]))
        elif name in _FONT:
            out.append(_escapes(" ".join(_arguments(rest))))
        elif name in _ALTERNATING:
            out.append(_escapes("".join(_arguments(rest))))
        elif name == "TH":
            parts = _arguments(rest)
            out.append(_escapes(f"{parts[0]}({parts[1]})" if len(parts) > 1 else " ".join(parts)))
        # Every other request (registers, conditionals, fills, spacing) says nothing.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in out)).strip()


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

"""Sentences of a source with their character spans, so that a quote is a slice of the source.

The splitter is rule based and conservative: it ends a sentence at `.`, `!`, `?` or `…` followed
by space and a capital, digit or opening quote, except after a known abbreviation ("e.g.", "Dr.",
"Fig. 3"), an initial ("Roger O. Egeberg") or a dotted acronym ("U.S."); decimals never split
because a boundary needs following space. Blank lines, Markdown headings and list items also end a
sentence; a short line without final punctuation is a heading, and so are a man page's section titles
(capitals alone on a line, or a short line the text under it is indented beneath) and a short
title that opens a paragraph ("3. Grant of Patent License. Subject to ..."). A sentence longer than
`MAX_SENTENCE_CHARS` is cut at a clause boundary, so every piece fits a fact's quote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from research_mcp.citations import FIELD_LINE
from research_mcp.matching.boilerplate import is_run_in_heading

__all__ = ["MAX_SENTENCE_CHARS", "Sentence", "completions", "introduced_ends", "split_sentences"]

MAX_SENTENCE_CHARS = 900

ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft rev gen col lt sgt capt cmdr gov sen rep pres hon e.g i.e cf vs
    viz al approx ca circa dept est inc ltd co corp bros assn univ jan feb mar apr jun jul aug sep
    sept oct nov dec mon tue tues wed thu thur fri sat sun
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
# Abbreviations that are only abbreviations when a number follows ("No. 5", "Fig. 3").
NUMBERED = frozenset(
    """
    no nos fig figs vol vols p pp eq eqs ch chap sec art ref refs tab op
    """.split()  # noqa: SIM905 (a word list reads best as words)
)

_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")
_WORD_BEFORE = re.compile(r"(\S+)$")
_OPENERS = "\"'“‘([«"
_LIST_MARKER = re.compile(r"(?:[-*•+]|\d{1,3}[.)])\s+")
_HEADING_MARKER = re.compile(r"#{1,6}\s+")
_TOKEN = re.compile(r"\w+")
_TERMINAL = tuple(".!?…:;,\"'”’)]")
#: A sentence that announces what follows it: "... include the items listed below.", "... is a
#: typical example of an fstab entry:".
_ANNOUNCES = re.compile(r"(?::|\b(?:below|following|as follows)[.:]?)$", re.IGNORECASE)
#: Or one a blank line cuts off mid-clause ("... can be found in the directory"), running on below.
_CUT_OFF = re.compile(r"[\w)]$")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
#: What such a sentence may bring along: at most this many items, each at most ITEM_WORDS words.
MAX_ITEMS = 8
ITEM_WORDS = 12


@dataclass(frozen=True)
class Sentence:
    """A span of the source: `text == source[start:end]`, without surrounding whitespace."""

    start: int
    end: int
    text: str
    heading: bool = False

    @property
    def words(self) -> int:
        return len(_TOKEN.findall(self.text))

    @property
    def field(self) -> bool:
        """A "Key: value" line ("License: BSD-3-clause or GPL-2" of a Debian copyright file): a
        statement, even where it heads the text under it."""
        return FIELD_LINE.fullmatch(self.text) is not None


def split_sentences(text: str) -> list[Sentence]:
    """The sentences (and headings) of `text`, in order, each a verbatim slice of it."""
    sentences: list[Sentence] = []
    for start, end, heading in _segments(text):
        if heading:
            sentences.append(_span(text, start, end, heading=True))
            continue
        for position, (piece_start, piece_end) in enumerate(_sentence_spans(text, start, end)):
            for cut_start, cut_end in _cut_long(text, piece_start, piece_end):
                sentence = _span(text, cut_start, cut_end)
                if position == 0 and is_run_in_heading(sentence.text) and piece_end < end:
                    sentence = _span(text, cut_start, cut_end, heading=True)  # "Grant of Patent License."
                if len(sentence.text) >= 3:
                    sentences.append(sentence)
    return [sentence for sentence in sentences if sentence.text]


def introduced_ends(text: str, sentences: list[Sentence]) -> list[int]:
    """Where each sentence's quote ends, with what it announces. A sentence ending in ":", "below"
    or "following" is quoted with the short lines after it (at most `ITEM_WORDS` words), list items
    or lines without a full stop ("* Multithreaded applications (using pthread)"); one a blank line
    cuts off mid-clause ("can be found ... in the directory") with the line indented under it
    ("/usr/share/doc/python3/html"). Up to the next running text, heading or long item (a licence's
    numbered conditions are sentences of their own), at most `MAX_ITEMS` and `MAX_SENTENCE_CHARS` in
    all: the answer is what it announces. Any other sentence, and a list item, ends where it ends."""
    ends = [sentence.end for sentence in sentences]
    for position, sentence in enumerate(sentences):
        announces = bool(_ANNOUNCES.search(sentence.text))
        cut_off = not announces and sentence.words >= 5 and bool(_CUT_OFF.search(sentence.text))
        if sentence.heading or _listed(text, sentence) or not (announces or cut_off):
            continue
        for item in sentences[position + 1 : position + 1 + MAX_ITEMS]:
            listed = _listed(text, item)
            if cut_off:
                below = _BLANK_LINE.search(text, sentence.end, item.start) is not None
                fits = below and _indent(text, item.start) > _indent(text, sentence.start)
            else:
                fits = listed or (
                    not item.heading and item.words <= ITEM_WORDS and not item.text.endswith(".")
                )
            # Not a long item (a clause of its own: "1. Redistributions of source code must ..."),
            # nor another announcement ("Extra configuration options:").
            too_long = item.words > ITEM_WORDS or item.end - sentence.start > MAX_SENTENCE_CHARS
            if not fits or too_long or _ANNOUNCES.search(item.text):
                break
            ends[position] = item.end
            if cut_off:
                break  # what a cut-off clause runs on to: one indented line
    return ends


#: The most words of a short sentence completing the one before it ("Defaults to /bin/bash.").
CLOSING_WORDS = 6
#: A sentence without a subject, saying more of the one before it: a verb or participle and what it
#: is to, for or by ("Defaults to /bin/bash.", "Recommended for new hashes.", "Deprecated."), not a
#: sentence of its own ("Gardens line the river banks.").
_ELLIPTICAL = re.compile(
    r"[A-Z][a-z]+(?:s|ed)\b(?:\s+(?:to|for|as|by|on|in|with|from|at|if|when|unless|since|instead)\b|\s*\.)"
)


def completions(text: str, sentences: list[Sentence], ends: list[int]) -> dict[int, int]:
    """The sentences followed in their paragraph by a short one completing them (`_ELLIPTICAL`), by
    position, with the position of that one: adduser.conf(5)'s "DSHELL The login shell to be used for all new
    users." with "Defaults to /bin/bash."; crypt(5)'s "yescrypt is a scalable passphrase hashing
    scheme ..." with "Recommended for new hashes.". A definition list's item stays whole: the two
    are one claim, quoted together. `ends`: where each quote ends already (one extended over what
    it announces is not completed)."""
    completed: dict[int, int] = {}
    for position, sentence in enumerate(sentences[:-1]):
        closing = sentences[position + 1]
        if (
            ends[position] == sentence.end
            and position not in completed.values()
            and not sentence.heading
            and not sentence.field
            and not closing.heading
            and not closing.field
            and closing.words <= CLOSING_WORDS
            and _ELLIPTICAL.match(closing.text) is not None
            and closing.text.endswith(".")
            and not _listed(text, closing)
            and _BLANK_LINE.search(text, sentence.end, closing.start) is None
            and closing.end - sentence.start <= MAX_SENTENCE_CHARS
        ):
            completed[position] = position + 1
    return completed


def _listed(text: str, sentence: Sentence) -> bool:
    """Whether the sentence opens a list item ("* ...", "2) ...")."""
    line_start = text.rfind("\n", 0, sentence.start) + 1
    return bool(_LIST_MARKER.fullmatch(text[line_start : sentence.start].strip() + " "))


def _indent(text: str, offset: int) -> int:
    """The indentation of the line holding `offset`, a tab counted as eight columns."""
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start : text.find("\n", offset) if "\n" in text[offset:] else len(text)]
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _span(text: str, start: int, end: int, *, heading: bool = False) -> Sentence:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Sentence(start=start, end=end, text=text[start:end], heading=heading)


def _segments(text: str) -> list[tuple[int, int, bool]]:
    """Blocks of running text and heading lines, as (start, end, is_heading)."""
    segments: list[tuple[int, int, bool]] = []
    block_start: int | None = None
    block_end = 0
    previous_ends_sentence = True
    offset = 0
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        line_start, offset = offset, offset + len(line)
        stripped = line.strip()
        body_start = line_start + (len(line) - len(line.lstrip()))
        if not stripped or _UNDERLINE.match(stripped):  # a setext underline or a rule ends a block too
            if block_start is not None:
                segments.append((block_start, block_end, False))
                block_start = None
            previous_ends_sentence = True
            continue
        if (
            block_start is not None
            and not line[:1].isspace()
            and lines[number - 1][:1].isspace()
            and (FIELD_LINE.fullmatch(line.rstrip("\r\n")) or _BARE_KEY.fullmatch(line.rstrip("\r\n")))
        ):
            # A "Key: value" line after the indented lines continuing the field before it (a Debian
            # copyright file's "Copyright: ...\n           2006-2023 Antonio Diaz Diaz\nLicense:
            # GPL-2+") is a field of its own, not a line of their sentence; so is a key whose value
            # starts on the lines under it ("Files:\n utils/start-stop-daemon.c\nCopyright:\n ...").
            segments.append((block_start, block_end, False))
            block_start = None
            previous_ends_sentence = True
        marker = _HEADING_MARKER.match(stripped)
        words = len(stripped.split())
        following = lines[number + 1].strip() if number + 1 < len(lines) else ""
        next_line = lines[number + 1] if number + 1 < len(lines) else ""
        is_heading = (
            bool(marker)
            or bool(_UNDERLINE.match(following))
            or (previous_ends_sentence and _section_title(line, next_line))
            or (
                previous_ends_sentence
                and words <= 8
                and not stripped.endswith(_TERMINAL)
                and stripped[0].isupper()
                and _opens_paragraph(lines[number + 1] if number + 1 < len(lines) else "")
            )
        )
        list_marker = _LIST_MARKER.match(stripped)
        if list_marker and list_marker.group().rstrip().endswith(")") and block_start is not None:
            # "(priority\n 100) is not as recent": a number closing a parenthesis the line before
            # opened wraps the sentence on; it opens no list item.
            block = text[block_start:block_end]
            if block.count("(") > block.count(")"):
                list_marker = None
        if is_heading or list_marker:
            if block_start is not None:
                segments.append((block_start, block_end, False))
                block_start = None
            if is_heading:
                skip = marker.end() if marker else 0
                segments.append((body_start + skip, line_start + len(line.rstrip()), True))
                previous_ends_sentence = True
                continue
            body_start += list_marker.end() if list_marker else 0
        if block_start is None:
            block_start = body_start
        block_end = line_start + len(line.rstrip())
        previous_ends_sentence = stripped.endswith(tuple(".!?…:\"'”’)"))
    if block_start is not None:
        segments.append((block_start, block_end, False))
    return segments


def _section_title(line: str, next_line: str) -> bool:
    """A man page's or plain-text manual's title line: "DESCRIPTION", "SEE ALSO" (capitals alone on a
    line), or a short capitalised line that the text under it is indented beneath ("   The sixth
    field (fs_passno)." over "       This field is used by fsck(8) ..."). A lower-case term over its
    indented definition ("defaults" over "use default options: ...") is not a title: the term and
    its definition stay one sentence."""
    stripped = line.strip()
    words = stripped.split()
    if len(words) > 8 or not stripped[0].isupper():
        return False
    letters = [char for char in stripped if char.isalpha()]
    if len(words) <= 4 and letters and all(char.isupper() for char in letters):
        return True
    below = next_line.strip()
    indent = len(line) - len(line.lstrip())
    return (
        bool(below)
        and len(next_line) - len(next_line.lstrip()) > indent
        and not stripped.endswith((",", ";"))
    )


# A line of = or - alone: the underline of the heading above it (Markdown's setext, plain-text
# licences and specifications), or a rule.
_UNDERLINE = re.compile(r"^(?:={3,}|-{3,})$")
# A key whose value starts on the indented lines under it: "Files:" or "Copyright:" of a Debian
# copyright file.
_BARE_KEY = re.compile(r"[A-Z][\w-]{1,30}:[ \t]*")


def _opens_paragraph(line: str) -> bool:
    """Whether `line` (the one after a candidate heading) starts something new, not a wrapped line."""
    stripped = line.strip()
    return not stripped or _starts_sentence(stripped) or bool(_LIST_MARKER.match(stripped))


def _sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    block = text[start:end]
    sentence_start = 0
    for match in _BOUNDARY.finditer(block):
        after = match.end()
        rest = block[after:].lstrip()
        if (
            not rest
            or not _starts_sentence(rest)
            or not _ends_sentence(block[: match.start()], match.group(), rest)
        ):
            continue
        spans.append((start + sentence_start, start + after))
        sentence_start = after
    spans.append((start + sentence_start, end))
    return spans


def _starts_sentence(rest: str) -> bool:
    first = rest[0]
    return first.isupper() or first.isdigit() or first in _OPENERS


def _ends_sentence(before: str, punctuation: str, rest: str) -> bool:
    if not punctuation.startswith(".") or punctuation.startswith("..."):
        return True
    found = _WORD_BEFORE.search(before)
    if not found:
        return True
    word = found.group(1).lstrip(_OPENERS).casefold()
    if word in ABBREVIATIONS:
        return False
    if word in NUMBERED and rest[0].isdigit():
        return False
    if len(word) == 1 and word.isalpha():
        return False  # an initial: "Roger O. Egeberg"
    # a dotted acronym or abbreviation: "U.S.", "e.g.", "Ph.D."
    return not ("." in word and all(len(part) <= 2 for part in word.split(".")))


def _cut_long(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Pieces of at most MAX_SENTENCE_CHARS, cut after '; ', ', ' or a space, in that preference."""
    pieces: list[tuple[int, int]] = []
    while end - start > MAX_SENTENCE_CHARS:
        window = text[start : start + MAX_SENTENCE_CHARS]
        cut = -1
        for separator in ("; ", ", ", " "):
            at = window.rfind(separator, MAX_SENTENCE_CHARS // 3)
            if at > 0:
                cut = at + len(separator.rstrip())
                break
        if cut <= 0:
            cut = MAX_SENTENCE_CHARS
        pieces.append((start, start + cut))
        start += cut
    pieces.append((start, end))
    return pieces

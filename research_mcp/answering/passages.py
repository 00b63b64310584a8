"""Passages: the units of a document a reader would quote, as spans of its stored text.

A passage is a paragraph, a list item, a table row, or a definition item with its term (an option
and the paragraph under it); each carries the headings above it. Headings are found by shape: a
Markdown ``#`` line, an underlined line, or a short line without closing punctuation standing alone
before a paragraph. A definition item is a short line (an option, a term ending with ``::`` or ``:``)
followed at once by an indented paragraph. A passage longer than `MAX_CHARS` is cut at sentence ends.

`text[passage.start:passage.end]` is the passage verbatim, so a quote of it is found in the source.
Linear in the text's length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_CHARS", "Passage", "document_kind", "split_passages"]

MAX_CHARS = 1200
PassageKind = Literal["definition", "section", "paragraph", "list_item", "table_row", "code"]

_BLOCK_BREAK = re.compile(r"\n[ \t]*\n")
_MARKDOWN_HEADING = re.compile(r"#{1,6}[ \t]+(\S.*)")
_UNDERLINE = re.compile(r"[=\-~^*]{3,}[ \t]*")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+\S")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9(\"'`])")
_VERSION_HEADING = re.compile(
    r"^\s*(?:#+\s*)?(?:version\s+|v)?\d+(?:\.\d+)+\b|\b(?:19|20)\d\d-\d\d-\d\d\b", re.M | re.I
)


@dataclass(frozen=True, slots=True)
class Passage:
    start: int
    end: int
    kind: PassageKind
    heading: str
    term: str


def split_passages(text: str) -> list[Passage]:
    """The document's passages, in order."""
    passages: list[Passage] = []
    headings: list[tuple[int, str]] = []  # (level, title)
    for start, end in _blocks(text):
        block = text[start:end]
        lines = block.split("\n")
        heading = _heading(lines)
        if heading is not None:
            level, title = heading
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, title))
            continue
        path = " > ".join(title for _, title in headings)
        passages.extend(_pieces(text, start, end, lines, path))
    return passages


def _blocks(text: str) -> list[tuple[int, int]]:
    blocks: list[tuple[int, int]] = []
    position = 0
    for match in _BLOCK_BREAK.finditer(text):
        blocks.append((position, match.start()))
        position = match.end()
    blocks.append((position, len(text)))
    spans = []
    for start, end in blocks:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
    return spans


def _heading(lines: list[str]) -> tuple[int, str] | None:
    first = lines[0].strip()
    if len(lines) == 1:
        if match := _MARKDOWN_HEADING.fullmatch(first):
            return first.index(" "), match.group(1).strip(" #")
        if _looks_like_title(first):
            return (1 if first.isupper() else 7), first
    if len(lines) == 2 and _UNDERLINE.fullmatch(lines[1].strip()) and _looks_like_title(first):
        return (1 if lines[1].strip()[0] == "=" else 2), first
    return None


def _looks_like_title(line: str) -> bool:
    return (
        0 < len(line) <= 80
        and line[-1] not in ".,;:!?)"
        and len(line.split()) <= 10
        and line[0] not in "-*+•|"
    )


def _pieces(text: str, start: int, end: int, lines: list[str], heading: str) -> list[Passage]:
    first = lines[0]
    if len(lines) > 1 and _is_term(first) and lines[1][:1] in (" ", "\t"):
        term = first.strip().rstrip(":")
        return _cut(text, start, end, "definition", heading, term)
    if all("|" in line for line in lines) and len(lines) >= 2:
        header = lines[0].strip()
        rows = []
        offset = start + len(lines[0]) + 1
        for line in lines[1:]:
            if line.strip() and not set(line.strip()) <= set("|-: +="):
                rows.append(Passage(offset, offset + len(line), "table_row", heading, header))
            offset += len(line) + 1
        return rows or [Passage(start, end, "table_row", heading, "")]
    if _LIST_ITEM.match(first) and sum(bool(_LIST_ITEM.match(line)) for line in lines) >= 2:
        items = []
        offset = start
        item_start = start
        for index, line in enumerate(lines):
            if index and _LIST_ITEM.match(line):
                items.append((item_start, offset - 1))
                item_start = offset
            offset += len(line) + 1
        items.append((item_start, end))
        return [p for a, b in items for p in _cut(text, a, b, "list_item", heading, "")]
    kind: PassageKind = (
        "code" if all(line[:1] in (" ", "\t") for line in lines) and len(lines) > 2 else "paragraph"
    )
    return _cut(text, start, end, kind, heading, "")


def _is_term(line: str) -> bool:
    stripped = line.strip()
    return 0 < len(stripped) <= 100 and (
        stripped.startswith("-") or stripped.endswith(":") or len(stripped.split()) <= 6
    )


def _cut(text: str, start: int, end: int, kind: PassageKind, heading: str, term: str) -> list[Passage]:
    if end - start <= MAX_CHARS:
        return [Passage(start, end, kind, heading, term)]
    pieces = []
    piece_start = start
    last_end = None
    for match in _SENTENCE_END.finditer(text, start, end):
        cut = match.start() + 1
        if cut - piece_start > MAX_CHARS and last_end is not None:
            pieces.append((piece_start, last_end))
            piece_start = _skip_space(text, last_end, end)
        last_end = cut
    pieces.append((piece_start, end))
    spans: list[tuple[int, int]] = []
    for a, b in pieces:  # a sentence longer than MAX_CHARS is cut at spaces
        while b - a > MAX_CHARS:
            cut = text.rfind(" ", a, a + MAX_CHARS)
            cut = cut if cut > a else a + MAX_CHARS
            spans.append((a, cut))
            a = _skip_space(text, cut, b)
        spans.append((a, b))
    return [Passage(a, b, kind, heading, term) for a, b in spans if b > a]


def _skip_space(text: str, position: int, end: int) -> int:
    while position < end and text[position].isspace():
        position += 1
    return position


def document_kind(text: str, name: str) -> Literal["changelog", "document"]:
    """A changelog is a document most of whose blocks open with a version number or a date."""
    blocks = _blocks(text[:200_000])
    if len(blocks) < 6:
        return "document"
    dated = sum(1 for start, end in blocks if _VERSION_HEADING.match(text, start, min(end, start + 80)))
    return "changelog" if dated / len(blocks) >= 0.3 else "document"

"""A corpus file's bytes read into ``(title, text)`` by the reader its kind calls for, keeping the
document's structure in the text by the convention of ``passages.py``. A document's title is its own
(a Markdown, AsciiDoc or reStructuredText title or first heading, front-matter ``title:``, HTML
``<title>``, PDF metadata title), else the file's name without its extension.

- HTML: ``html_reader.read_html`` (lxml), trafilatura when that finds no text;
- PDF: pypdf (``text.pdf_pages``), its pages laid out in paragraphs, headings and titled items by
  ``pdf_layout.lay_out_pdf`` (running headers and footers dropped, lines of a paragraph joined);
- AsciiDoc (``.adoc``, ``.asciidoc``, or ``.txt`` and suffixless files that read as AsciiDoc):
  ``asciidoc.render_asciidoc``, its includes expanded beforehand by the caller;
- man pages' roff source: ``roff.render_roff``;
- reStructuredText (``.rst``): :func:`render_rst` (titles become ``#`` lines, roles and directive
  markers go; its definition lists and indented bodies already have the convention's shape);
- Markdown and plain text: as written (Markdown is the convention).

:func:`read_file` runs in the parser's worker process (``parse_worker.py``), so every reader, the
small ones too, runs under the same time and memory limit: a page built to stall one is stopped
there, reported, and the corpus goes on with its other documents.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from research_mcp.core.errors import SourceError
from research_mcp.sources.asciidoc import expand_includes, looks_like_asciidoc
from research_mcp.sources.documents import MAX_TEXT_FILE_BYTES, decode_text

if TYPE_CHECKING:
    from research_mcp.sources.folders import DocumentName
    from research_mcp.sources.parsing import DocumentParser

__all__ = ["ASCIIDOC", "READER_VERSION", "read_document", "read_file", "render_rst"]

#: The version of the readers: a document stored by older readers is read again (``indexing.py``).
#: Raise it whenever a change to a reader changes the text it stores.
READER_VERSION = 3
#: The kind a caller gives an AsciiDoc file (whatever its suffix) once it has expanded its includes.
ASCIIDOC = ".adoc"
_ASCIIDOC_SUFFIXES = frozenset({".adoc", ".asciidoc"})
_TITLE_CHARS = 300

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_SETEXT_HEADING = re.compile(r"^ {0,3}(\S[^\n]{0,300}?)[ \t]*\n {0,3}=+[ \t]*$", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.{0,65536}?)\n---[ \t]*\n", re.DOTALL)
_FRONT_MATTER_TITLE = re.compile(r"^title:[ \t]*[\"']?(.+?)[\"']?[ \t]*$", re.MULTILINE)


def read_document(
    data: bytes,
    named: DocumentName,
    rel: str,
    parser: DocumentParser,
    location: tuple[Path, Path] | None = None,
) -> tuple[str, str] | None:
    """``(title, text)`` of a file's (uncompressed) bytes, None for an empty file; SourceError when
    unreadable. ``named`` says how its name says to read it (``folders.document_name``); ``location``
    is ``(corpus folder, file)``, where an AsciiDoc file's ``include::`` directives are looked for.

    Every kind is read by the parser's worker process (``readers.read_file``), under its time and
    memory limit; only an AsciiDoc file's includes are gathered here first, a bounded copy of files
    under the corpus folder (``asciidoc.expand_includes``)."""
    suffix, stem = named.kind, named.title
    if not data.strip():
        return None
    kind = suffix
    if suffix not in (".html", ".htm", ".pdf"):
        if b"\x00" in data[:8192]:
            raise SourceError("holds binary data, not text; skipped")
        if suffix in _ASCIIDOC_SUFFIXES or suffix in ("", ".txt", ".text"):
            text = decode_text(data)
            if suffix in _ASCIIDOC_SUFFIXES or looks_like_asciidoc(text):
                if location is not None:
                    text = expand_includes(text, location[1], location[0], MAX_TEXT_FILE_BYTES)
                data, kind = text.encode("utf-8", errors="replace"), ASCIIDOC
    title, text = parser.read_file(data, kind, rel)
    if not text.strip():
        return None
    return title or stem, text


def read_file(data: bytes, kind: str, name: str) -> tuple[str, str]:
    """``(title, text)`` of a corpus file; ``title`` is "" when the document names none (the caller
    names it by its file). ``kind`` is its suffix (``folders.document_name``), ``ASCIIDOC`` for AsciiDoc
    with its includes expanded. SourceError when it cannot be read."""
    from research_mcp.sources.text import extract_text

    if kind in (".html", ".htm"):
        from research_mcp.sources.html_reader import read_html

        title, text = read_html(data)
        if text.strip():
            return title, text
        _, fallback_title, text = extract_text(data, "text/html", name)
        return (title or (fallback_title if fallback_title != name else "")), text
    if kind == ".pdf":
        from research_mcp.sources.pdf_layout import lay_out_pdf
        from research_mcp.sources.text import pdf_pages

        title, pages = pdf_pages(data, name)
        return title, lay_out_pdf(pages) if any(page.strip() for page in pages) else ""
    text = decode_text(data).replace("\r\n", "\n").replace("\r", "\n")
    if kind == ASCIIDOC:
        from research_mcp.sources.asciidoc import render_asciidoc

        return render_asciidoc(text)
    if kind == "":
        from research_mcp.sources.roff import is_roff, render_roff

        if is_roff(text):  # a man page's source ("fstab.5.gz"): the text man shows
            return "", render_roff(text)
    if kind == ".rst":
        return render_rst(text)
    if kind in (".md", ".markdown"):
        return markdown_title(text), text
    return "", text


def markdown_title(text: str) -> str:
    """A Markdown document's title: its front matter's ``title:``, else its first heading."""
    front = _FRONT_MATTER.match(text)
    if front:
        declared = _FRONT_MATTER_TITLE.search(front.group(1))
        if declared:
            return _collapse(declared.group(1))
        text = text[front.end() :]
    headings = [m for m in (_ATX_HEADING.search(text), _SETEXT_HEADING.search(text)) if m]
    if not headings:
        return ""
    return _collapse(min(headings, key=lambda m: m.start()).group(1))


# --- reStructuredText ---------------------------------------------------------------------------

_RST_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_RST_ROLE = re.compile(r":[\w.+-]{1,60}:`([^`\n]{0,500})`")
_RST_LITERAL = re.compile(r"``([^`\n]{1,500})``")
_RST_LINK = re.compile(r"`([^`<\n]{1,300}?)\s*<[^>\n]{0,1000}>`_{1,2}")
_RST_REFERENCE = re.compile(r"`([^`\n]{1,300})`_{1,2}")
_RST_DIRECTIVE = re.compile(r"\.\.[ \t]+[\w:-]{1,60}::")


def render_rst(text: str) -> tuple[str, str]:
    """``(title, text)`` of a reStructuredText source: section titles (underlined, perhaps overlined)
    become ``#`` lines, levels in the order their adornments first appear; roles, literals and links
    lose their markup; a directive's marker line goes (its indented content stays), as do comments."""
    lines = text.split("\n")
    levels: list[str] = []
    out: list[str] = []
    title = ""
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        over = _RST_ADORNMENT.match(line)
        if over and i + 2 < len(lines) and lines[i + 2].rstrip() == line and lines[i + 1].strip():
            heading, style, i = lines[i + 1].strip(), "over" + line[0], i + 3
        elif (
            line
            and not line[0].isspace()
            and i + 1 < len(lines)
            and (under := _RST_ADORNMENT.match(lines[i + 1].rstrip()))
            and len(lines[i + 1].rstrip()) >= len(line)
        ):
            heading, style, i = line.strip(), under.group(1), i + 2
        else:
            if line.startswith(".."):
                directive = _RST_DIRECTIVE.match(line)
                if directive and line[directive.end() :].strip():
                    out.append(_rst_inline(line[directive.end() :].strip()))
                i += 1
                continue
            out.append(_rst_inline(line[:-1] if line.endswith("::") else line))
            i += 1
            continue
        if style not in levels:
            levels.append(style)
        level = min(levels.index(style) + 1, 6)
        out += ["", "#" * level + " " + _rst_inline(heading), ""]
        title = title or _collapse(_rst_inline(heading))
    return title, re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def _rst_inline(text: str) -> str:
    text = _RST_ROLE.sub(r"\1", text)
    text = _RST_LITERAL.sub(r"\1", text)
    text = _RST_LINK.sub(r"\1", text)
    return _RST_REFERENCE.sub(r"\1", text)


def _collapse(text: str) -> str:
    return " ".join(text.split())[:_TITLE_CHARS]

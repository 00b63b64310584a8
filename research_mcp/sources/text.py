"""Fetched bytes to plain text: sniff the type, then extract (HTML with trafilatura, PDF with pypdf).

The type is decided from the bytes first and the Content-Type header second, because servers
mislabel documents: a body that starts with ``%PDF-`` is a PDF whatever the header says, and a
body with HTML markers is HTML even when served as ``text/plain``. Bodies that are plainly not
documents (images, archives, anything with NUL bytes) are refused with a SourceError.

Extraction is CPU-bound, synchronous and runs on untrusted bytes: the server calls it only inside a
worker process with a time and a memory limit (``parsing.py``). Here, PDFs are also capped in pages
(``MAX_PDF_PAGES``) and in extracted text (``MAX_TEXT_CHARS``), besides pypdf's own per-stream and
per-object limits (75 MB inflated per stream, 100,000 array or dictionary entries).
"""

from __future__ import annotations

import io
import re
from email.message import Message
from typing import Literal

from research_mcp.core.errors import SourceError

__all__ = ["DocumentType", "extract_text", "pdf_pages"]

DocumentType = Literal["text/html", "application/pdf", "text/plain"]

_SNIFF_BYTES = 1024
#: A PDF with more pages is refused (a book has hundreds; a page tree of millions is an attack).
MAX_PDF_PAGES = 2000
#: Text extracted from one PDF beyond this is refused (some 1.5 million words).
MAX_TEXT_CHARS = 10_000_000
_TITLE_CHARS = 300

# Leading bytes of common binary formats that are not documents we can read.
_BINARY_SIGNATURES: dict[bytes, str] = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
    b"RIFF": "audio, video or image data (RIFF)",
    b"PK\x03\x04": "a zip archive (or an office document)",
    b"\x1f\x8b": "gzip-compressed data",
    b"7z\xbc\xaf\x27\x1c": "a 7z archive",
}
_BINARY_FAMILIES = ("image/", "audio/", "video/", "font/", "model/")
_TEXTUAL_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/xhtml+xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/javascript",
        "application/x-javascript",
        "application/octet-stream",  # says nothing; the bytes decide
    }
)
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<meta ", b"<article")
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]{0,500}\?>")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE)


def extract_text(data: bytes, content_type_header: str | None, url: str) -> tuple[DocumentType, str, str]:
    """Return ``(content_type, title, text)`` for a fetched body, or raise SourceError.

    ``content_type`` is what the bytes turned out to be, one of ``text/html``,
    ``application/pdf`` or ``text/plain``. ``title`` falls back to the URL when the document
    names none. A document that yields no text at all is refused, since nothing could be cited.
    """
    media_type, charset = _parse_content_type(content_type_header)
    kind = _sniff(data, media_type, url)
    if kind == "application/pdf":
        title, text = _pdf(data, url)
    elif kind == "text/html":
        title, text = _html(_decode(data, charset or _meta_charset(data)), url)
    else:
        text = _normalise(_decode(data, charset))
        title = _first_line(text)
    if not text.strip():
        raise SourceError(
            f"{url!r} is {kind} but holds no extractable text "
            f"(scanned PDFs and script-only pages are not supported). Try another source."
        )
    return kind, title or url, text


def _parse_content_type(header: str | None) -> tuple[str, str | None]:
    if not header:
        return "", None
    message = Message()
    message["content-type"] = header
    charset = message.get_param("charset")
    return message.get_content_type().lower(), charset if isinstance(charset, str) else None


def _sniff(data: bytes, media_type: str, url: str) -> DocumentType:
    head = data[:_SNIFF_BYTES]
    if b"%PDF-" in head:
        return "application/pdf"
    for signature, name in _BINARY_SIGNATURES.items():
        if head.startswith(signature):
            raise _not_a_document(url, name)
    if b"\x00" in data[:8192]:
        raise _not_a_document(url, media_type or "binary data")
    if media_type.startswith(_BINARY_FAMILIES) or (
        media_type.startswith("application/")
        and media_type not in _TEXTUAL_APPLICATION_TYPES
        and media_type != "application/pdf"  # a PDF without its magic bytes is not readable anyway
    ):
        raise _not_a_document(url, media_type)
    lowered = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if media_type in ("text/html", "application/xhtml+xml") or any(m in lowered for m in _HTML_MARKERS):
        return "text/html"
    return "text/plain"


def _not_a_document(url: str, what: str) -> SourceError:
    return SourceError(
        f"{url!r} is {what}, not an HTML page, PDF or text document, so it was not read. "
        f"Use a link to a page or a PDF instead."
    )


def _meta_charset(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:_SNIFF_BYTES])
    return match.group(1).decode("ascii") if match else None


def _decode(data: bytes, charset: str | None) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset name Python does not know
        return data.decode("utf-8", errors="replace")


def _html(markup: str, url: str) -> tuple[str, str]:
    # Imported here: trafilatura and lxml take a good part of a second, and a server answers first.
    import lxml.html
    import trafilatura
    from lxml import etree

    title = ""
    tree = None
    try:
        # Without its XML declaration: lxml refuses a decoded string that declares an encoding
        # (an XHTML page, asciidoc's), and the page's title was lost to its first line.
        tree = lxml.html.document_fromstring(_XML_DECLARATION.sub("", markup, count=1))
        # By local name: an XHTML page (asciidoc's, <html xmlns="http://www.w3.org/1999/xhtml">)
        # keeps its namespace on every tag, and ".//title" finds nothing there.
        titles = tree.xpath("//*[local-name()='title']")
        title = _collapse(titles[0].text_content()) if titles else ""
    except (etree.ParserError, ValueError):
        pass  # not parseable as a tree; trafilatura below may still cope
    text = trafilatura.extract(
        markup, url=url, include_comments=False, include_tables=True, favor_recall=True
    )
    if not text and tree is not None:
        # trafilatura gives up on very short or unusual pages; fall back to all visible text.
        for element in tree.xpath("//script|//style|//noscript|//template|//head"):
            element.drop_tree()
        text = tree.text_content()
    text = _normalise(text or "")
    return title or _first_line(text), text


def _pdf(data: bytes, url: str) -> tuple[str, str]:
    title, pages = pdf_pages(data, url)
    text = _normalise("\n\n".join(pages))
    return title or _first_line(text), text


def pdf_pages(data: bytes, url: str) -> tuple[str, list[str]]:
    """A PDF's metadata title ("" when it has none) and each page's text as pypdf extracts it;
    SourceError when it is locked, too long, or unreadable."""
    import pypdf  # imported when first needed, as above
    from pypdf.errors import PyPdfError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise SourceError(f"{url!r} is a password-protected PDF; it cannot be read.")
        if len(reader.pages) > MAX_PDF_PAGES:
            raise SourceError(
                f"{url!r} has {len(reader.pages)} pages, more than the {MAX_PDF_PAGES} read from one PDF. "
                f"Split it, or give the part you need."
            )
        pages: list[str] = []
        size = 0
        for page in reader.pages:
            pages.append(page.extract_text() or "")
            size += len(pages[-1])
            if size > MAX_TEXT_CHARS:
                raise SourceError(
                    f"{url!r} holds more than {MAX_TEXT_CHARS:,} characters of text, more than is read "
                    f"from one PDF. Split it, or give the part you need."
                )
        metadata_title = reader.metadata.title if reader.metadata else None
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise SourceError(
            f"{url!r} looks like a PDF but could not be read ({exc}). Try another copy."
        ) from exc
    return (_collapse(metadata_title) if isinstance(metadata_title, str) else ""), pages


def _normalise(text: str) -> str:
    """Unify line endings, trim trailing spaces and squeeze runs of blank lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _collapse(text: str) -> str:
    return " ".join(text.split())[:_TITLE_CHARS]


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return _collapse(line)
    return ""

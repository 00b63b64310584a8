"""What a quick scan reads of a source before it is chosen: its opening paragraph, and a title for a
page known only by its address (a site map lists addresses, not titles)."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

__all__ = ["LEAD_CHARS", "opening", "page_title"]

#: The most of a source's opening a quick scan keeps.
LEAD_CHARS = 300
#: A paragraph shorter than this is a heading, a byline or a date, not the opening, unless it is a
#: sentence (five words or more, ending as a sentence does).
_MIN_PARAGRAPH = 60
_PARAGRAPHS = re.compile(r"\n\s*\n")
_MARKUP = re.compile(r"^(?:#+\s|[-*=_]{3,}\s*$|\||<!--|---\s*$)")
_SPACE = re.compile(r"\s+")


def opening(text: str, limit: int = LEAD_CHARS) -> str:
    """The first paragraph of prose in `text` (headings, rules, tables and short lines skipped),
    cut at a word within `limit` characters; else the start of the text."""
    paragraphs = [p.strip() for p in _PARAGRAPHS.split(text) if p.strip()]
    prose = [p for p in paragraphs if not _MARKUP.match(p) and (len(p) >= _MIN_PARAGRAPH or _sentence(p))]
    chosen = _SPACE.sub(" ", (prose or paragraphs or [""])[0]).strip()
    if len(chosen) <= limit:
        return chosen
    cut = chosen[:limit].rsplit(" ", 1)[0]
    return f"{cut}…"


def page_title(url: str) -> str:
    """A readable title from a page's address: its last path segment in words, with its site
    ("docs.example.org: getting started"), or the site alone for its home page."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").removeprefix("www.")
    segments = [unquote(s) for s in parts.path.split("/") if s]
    if not segments:
        return host or url
    last = re.sub(r"\.(?:html?|php|aspx?)$", "", segments[-1], flags=re.I)
    words = " ".join(re.split(r"[-_+.]+", last)).strip()
    return f"{host}: {words or last}"


def _sentence(paragraph: str) -> bool:
    return len(paragraph.split()) >= 5 and paragraph.rstrip().endswith((".", "!", "?", ":"))

"""A run's result as one Markdown document, and Markdown made safe for a viewer to render."""

from __future__ import annotations

import re

from research_mcp.reports.assembly import assemble_result
from research_mcp.storage.store import Store

__all__ = ["report_markdown", "safe_markdown"]

_UNSAFE_SCHEME = re.compile(r"^\s*<?\s*(?:javascript|vbscript|data|file)\s*:", re.IGNORECASE)
# A `<` that could open raw HTML or an autolink: followed by a letter, `/`, `!` or `?`. Any other `<`
# ("x < 3", "<=") is text already and stays as it is.
_OPENS_TAG = re.compile(r"(\\*)<(?=[A-Za-z/!?])")
_MD_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(\s+\"[^\"]*\")?\)")


def safe_markdown(text: str) -> str:
    """Markdown a viewer may render without running or loading anything: raw HTML escaped (a `<` never
    opens a tag or an autolink, and reads as `<`, not `&lt;`), images and links to javascript:, data:, vbscript: or file: addresses
    reduced to their text. Source text and model text are untrusted; a Markdown viewer is a browser."""

    def link(match: re.Match[str]) -> str:
        image, label, url = match.group(1), match.group(2), match.group(3)
        if image or _UNSAFE_SCHEME.match(url):
            return label
        return match.group(0)

    return _MD_LINK.sub(link, _OPENS_TAG.sub(_escape_opening, text))


def _escape_opening(match: re.Match[str]) -> str:
    """`\\<`: CommonMark shows a backslash-escaped `<` as `<` and never as a tag or an autolink;
    the backslashes before it are doubled so that none of them escapes the escape."""
    return match.group(1) * 2 + "\\<"


def report_markdown(store: Store, run_id: str) -> str:
    """A run's result as one Markdown document: findings, confidence, gaps, sources."""
    result = assemble_result(store, run_id)
    # The confidence near the top, under the title: read before the answer, as in every view.
    title, _, body = result.findings.partition("\n")
    said = f"**Confidence:** {result.confidence.level} — {result.confidence.reasoning}"
    top = [title, "", said, body] if title.startswith("# ") else [said, "", result.findings]
    lines = [*top, ""]
    if result.gaps:
        lines += ["## Gaps", *[f"- {gap}" for gap in result.gaps], ""]
    lines += [
        "## Sources",
        *[f"- {s.id} [{s.title or s.url_or_path}]({s.url_or_path})" for s in result.sources],
    ]
    meta = result.metadata
    lines += [
        "",
        f"_{meta.citations_verified}/{meta.citations_made} citations verified; {meta.backend} backend_",
    ]
    return safe_markdown("\n".join(lines))

"""The presentation layer's pull: a run's result assembled from the store (`assembly`), its views
(`views`), pages that never exceed a token budget (`pages`) and the Markdown document (`markdown`).
The names the service, the CLI and the exports use are re-exported here."""

from __future__ import annotations

from research_mcp.reports.assembly import (
    Assembled,
    RankedSource,
    assemble,
    assemble_result,
    not_ready,
    result_synthesis,
    source_name,
)
from research_mcp.reports.markdown import report_markdown, safe_markdown
from research_mcp.reports.pages import MAX_MAX_TOKENS, MIN_MAX_TOKENS, approx_tokens, page_of
from research_mcp.reports.views import view_items

__all__ = [
    "MAX_MAX_TOKENS",
    "MIN_MAX_TOKENS",
    "Assembled",
    "RankedSource",
    "approx_tokens",
    "assemble",
    "assemble_result",
    "not_ready",
    "page_of",
    "report_markdown",
    "result_synthesis",
    "safe_markdown",
    "source_name",
    "view_items",
]

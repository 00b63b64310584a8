"""A view's items cut into pages that never exceed a token budget.

Tokens are approximated as characters / 3, rounded up, over the whole JSON result. English prose
runs at about 4 characters per Claude token and JSON at about 3, so the figure errs high: a page
said to fit `max_tokens` does.
"""

from __future__ import annotations

import math

from research_mcp.core.contracts import ReportPage, View
from research_mcp.core.errors import InvalidInput

__all__ = ["MAX_MAX_TOKENS", "MIN_MAX_TOKENS", "approx_tokens", "page_of"]

CHARS_PER_TOKEN = 3
MIN_MAX_TOKENS = 200
# Hosts cut or refuse tool results over about 25,000 tokens; a page stays well under that.
MAX_MAX_TOKENS = 20_000


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def page_of(ident: str, view: View, items: list[str], cursor: str | None, max_tokens: int) -> ReportPage:
    """The page starting at `cursor`, as large as fits in `max_tokens` (whole JSON result; the tool
    boundary holds it between MIN_MAX_TOKENS and MAX_MAX_TOKENS)."""
    item, offset = 0, 0
    if cursor:
        try:
            item, offset = (int(part) for part in cursor.split(":"))
        except ValueError:
            raise InvalidInput(
                f"cursor {cursor!r} is not one this server gave; omit it to start over."
            ) from None
    # Characters of text per page: the budget less the envelope, halved again for JSON escaping.
    budget = (max_tokens * CHARS_PER_TOKEN) - 300
    while True:
        text, next_item, next_offset = _fill(items, item, offset, budget)
        next_cursor = f"{next_item}:{next_offset}" if next_item < len(items) else None
        page = ReportPage(id=ident, view=view, text=text, cursor=next_cursor, page_tokens=0)
        for _ in range(3):  # the count is part of what it counts: settle it
            page.page_tokens = approx_tokens(page.model_dump_json())
        if page.page_tokens <= max_tokens or budget <= 50:
            return page
        budget = int(budget * 0.8)


def _fill(items: list[str], item: int, offset: int, budget: int) -> tuple[str, int, int]:
    parts: list[str] = []
    used = 0
    while item < len(items):
        rest = items[item][offset:]
        room = budget - used - (1 if parts else 0)
        if len(rest) <= room:
            parts.append(rest)
            used += len(rest) + (1 if len(parts) > 1 else 0)
            item, offset = item + 1, 0
            continue
        if room > 0 and (not parts or room > 200):
            parts.append(rest[:room])
            offset += room
        break
    return "\n".join(parts), item, offset

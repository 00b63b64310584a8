"""report_results pages: each within max_tokens, and following the cursor gives back the whole view."""

from __future__ import annotations

import pytest

from research_mcp.core.errors import InvalidInput
from research_mcp.reports import approx_tokens, page_of


@pytest.mark.parametrize("max_tokens", [200, 500, 2000])
def test_following_the_cursor_reads_the_whole_view_in_pages_within_max_tokens(max_tokens: int) -> None:
    items = [f"paragraph {i}: " + "évidence « quoted » text \\ with escapes\n" * (i % 40) for i in range(120)]
    items.append("x" * 20_000)  # one item larger than any page
    pages, cursor = [], None
    while True:
        page = page_of("run_x", "report", items, cursor, max_tokens)
        assert approx_tokens(page.model_dump_json()) == page.page_tokens <= max_tokens
        pages.append(page.text)
        cursor = page.cursor
        if cursor is None:
            break
    assert "".join(pages).replace("\n", "") == "".join(items).replace("\n", "")


def test_a_cursor_not_from_this_server_is_refused_with_what_to_do() -> None:
    with pytest.raises(InvalidInput, match="omit it to start over"):
        page_of("run_x", "report", ["a"], "not-a-cursor", 2000)

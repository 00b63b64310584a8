"""The exported HTML page: rendered by a real browser (Debian's chromium, headless), and inert whatever the
sources said."""

from __future__ import annotations

import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from research_mcp.cli.exports import render_html, safe_href
from research_mcp.run_document import RunDocument
from tests.cdp import CHROMIUM_FLAGS, chromium_path
from tests.cli.conftest import HOSTILE_TITLE, FinishedRun, cli

LOADING_TAGS = {
    "script",
    "img",
    "iframe",
    "frame",
    "object",
    "embed",
    "link",
    "video",
    "audio",
    "source",
    "base",
}
LOADING_ATTRIBUTES = {"src", "srcset", "poster", "data", "background", "action", "formaction", "ping"}


class Elements(HTMLParser):
    """Every element of a page: its tag and attributes, and the text of its <style> elements."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.styles: list[str] = []
        self._in_style = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {name: value or "" for name, value in attrs}))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)

    def by_id(self) -> dict[str, dict[str, str]]:
        return {attrs["id"]: attrs for _, attrs in self.elements if "id" in attrs}

    def links(self, css_class: str) -> list[str]:
        return [
            a["href"] for tag, a in self.elements if tag == "a" and css_class in a.get("class", "").split()
        ]


def assert_loads_nothing(page: Elements) -> None:
    for tag, attrs in page.elements:
        assert tag not in LOADING_TAGS, (tag, attrs)
        assert not LOADING_ATTRIBUTES & set(attrs), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert "url(" not in attrs.get("style", "")
        if tag == "a":
            assert attrs["href"].startswith(("#", "http://", "https://")), attrs
        if tag == "meta":
            assert attrs.get("http-equiv", "").lower() != "refresh"
    for css in page.styles:
        assert "url(" not in css and "@import" not in css


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_a_browser_renders_the_export_with_every_citation_linked_to_its_entry_and_nothing_loaded(
    harbour: FinishedRun, tmp_path: Path
) -> None:
    if chromium_path() is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium when it can)")
    page = tmp_path / "export.html"
    exported = cli("export", harbour.run_id, "--format", "html", "-o", str(page), env=harbour.env)
    assert exported.returncode == 0, exported.stderr
    screenshot = tmp_path / "export.png"
    shot = chromium(
        f"--screenshot={screenshot}", "--window-size=1200,2000", page.as_uri(), profile=tmp_path / "p1"
    )
    assert screenshot.exists(), shot.stderr
    assert png_size(screenshot) == (1200, 2000)
    assert screenshot.stat().st_size > 20_000  # a rendered page, not a blank one
    dumped = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "p2")
    assert dumped.returncode == 0, dumped.stderr
    dom = Elements(dumped.stdout)

    ids = dom.by_id()
    citations = dom.links("cite")
    assert citations, "the report cites no fact"
    for href in citations:
        assert href.startswith("#F") and "fact" in ids[href[1:]]["class"].split()
    fact_sources = dom.links("src")
    assert fact_sources
    for href in fact_sources:
        assert href.startswith("#S") and "source" in ids[href[1:]]["class"].split()
    facts = [attrs for _, attrs in dom.elements if "fact" in attrs.get("class", "").split()]
    assert {f"#{fact['id']}" for fact in facts} >= set(citations)
    assert_loads_nothing(dom)
    assert HOSTILE_TITLE in dumped.stdout.replace("&lt;", "<").replace("&gt;", ">")
    assert not any(tag == "script" for tag, _ in dom.elements)


def hostile_document() -> RunDocument:
    title = "<script>alert(1)</script>"
    return RunDocument.model_validate(hostile_fields(title))


def hostile_fields(title: str) -> dict[str, Any]:
    fact = {"location": None, "confidence": 0.7, "question": None, "corroborations": 1}
    source = {"name": "", "relevance_reason": ""}
    return {
        "run": {
            "id": "run_0",
            "status": "done",
            "query": 'What is <b onmouseover="alert(1)">this</b>?',
            "backend": "extractive",
            "created_at": "2026-01-01T00:00:00",
            "started_at": None,
            "finished_at": None,
            "error": None,
            "totals": dict.fromkeys(
                [
                    "nodes_done",
                    "nodes_total",
                    "sources",
                    "facts",
                    "facts_verified",
                    "tokens",
                    "cost_usd",
                    "elapsed_s",
                ],
                0,
            ),
        },
        "findings": (
            "# Findings <img src=x onerror=alert(1)>\n\nIt is so [F1]. Also [F2, unverified] and [F99].\n\n"
            "[click](javascript:alert(1)) [ok](https://example.org/a) ![pixel](https://tracker.example/p.png)\n\n"
            "[F1]: javascript:alert(2)\n\n<script>alert(3)</script>"
        ),
        "sources": [
            {
                "id": "S1",
                "url_or_path": "javascript:alert(1)",
                "title": title,
                "kind": "web",
                "location": "",
                "relevance": 1.0,
                **source,
            },
            {
                "id": "S2",
                "url_or_path": 'https://example.org/"><script>alert(4)</script>',
                "title": "fine",
                "kind": "web",
                "location": "",
                "relevance": 0.5,
                **source,
            },
        ],
        "confidence": {"level": "low", "reasoning": "</p><script>alert(5)</script>"},
        "gaps": ["<iframe src=https://evil.example></iframe>"],
        "metadata": {
            "searches": 0,
            "sources_read": 2,
            "llm_calls": 0,
            "tokens_in": 0,
            "tokens_out": 0,
            "cost_usd": 0.0,
            "elapsed_s": 0.0,
            "citations_made": 2,
            "citations_verified": 1,
            "citations_dropped": 0,
            "backend": "extractive",
        },
        "suggested_followups": ["<a href=javascript:alert(6)>more</a>"],
        "facts": [
            {
                "id": "F1",
                "statement": "<svg onload=alert(7)>",
                "quote": '"><script>alert(8)</script>',
                "verified": True,
                "source_id": "S1",
                "also_in": [{"source_id": "S2", "quote": "</q><script>alert(9)</script>"}],
                **fact,
            },
            {
                "id": "F2",
                "statement": "s",
                "quote": "q",
                "verified": False,
                "source_id": "S2",
                "also_in": [],
                **fact,
            },
        ],
        "plan": [
            {
                "plan_id": "plan_0",
                "query": "<script>alert(10)</script>",
                "root": {
                    "id": "n",
                    "kind": "leaf",
                    "title": title,
                    "state": "done",
                    "questions": [],
                    "children": [],
                },
            }
        ],
    }


def test_hostile_titles_quotes_and_javascript_urls_come_out_as_inert_text() -> None:
    page = render_html(hostile_document())
    parsed = Elements(page)

    assert_loads_nothing(parsed)
    assert "<script" not in page.lower() and "javascript:" not in "".join(
        attrs.get("href", "") for _, attrs in parsed.elements
    )
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, as text
    assert "<code>javascript:alert(1)</code>" in page  # the hostile url is printed, not linked
    # F99 is not in the page: no dangling link; a "[F1]: javascript:" definition stays text.
    assert parsed.links("cite") == ["#F1", "#F2", "#F1"]
    hrefs = [attrs["href"] for tag, attrs in parsed.elements if tag == "a"]
    assert "https://example.org/a" in hrefs


@pytest.mark.parametrize(
    ("url", "linked"),
    [
        ("https://example.org/page", True),
        ("HTTP://EXAMPLE.ORG", True),
        ("javascript:alert(1)", False),
        (" JavaScript:alert(1)", False),
        ("java\tscript:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("file:///etc/passwd", False),
        ("corpus:3", False),
        ("//evil.example/x", False),
        ("https://exa mple.org", False),
    ],
)
def test_only_http_and_https_addresses_become_links(url: str, linked: bool) -> None:
    assert (safe_href(url) is not None) is linked

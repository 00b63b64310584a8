"""A finished run exported whole: Markdown (the report), JSON (everything), or one self-contained HTML file.

The JSON document is the run's full result (findings, sources, confidence, gaps, metadata, follow-ups)
plus every fact it rests on, with its quote and whether the quote was found in the source, and the
plan tree with each node's state. The HTML page is rendered from that same document alone.

Everything in the document may come from an untrusted page (titles, quotes, urls, even the findings
written by a model that read them), so the HTML escapes all text, renders the findings' Markdown with
raw HTML, images and reference definitions turned off, links only to http(s) addresses and to its own
anchors, loads nothing (a Content-Security-Policy says so too) and needs no script.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from research_mcp.core.citations import normalize
from research_mcp.core.ids import fact_label
from research_mcp.reports import report_markdown
from research_mcp.run_document import DocumentSource, RunDocument, ViewFact, ViewNode, run_document
from research_mcp.storage.store import Store

__all__ = ["FORMATS", "export_document", "export_run", "render_html", "safe_href"]

export_document = run_document  # the JSON export is the run document itself

FORMATS = ("md", "html", "json")
CITE = re.compile(r"\[F(\d+)(, unverified)?\]")


def export_run(store: Store, run_id: str, fmt: str) -> str:
    """The run in format `fmt` (md, html or json)."""
    if fmt == "md":
        return report_markdown(store, run_id)
    document = run_document(store, run_id)
    if fmt == "json":
        return json.dumps(document.model_dump(mode="json"), ensure_ascii=False, indent=2)
    return render_html(document)


# --- HTML ------------------------------------------------------------------------------------------


def safe_href(url: str) -> str | None:
    """`url` if it is an http(s) address a link may point to, else None (javascript:, data:, files...)."""
    url = url.strip()
    if not re.match(r"(?i)^https?://[^\s/?#]+", url) or any(ord(c) < 32 or c.isspace() for c in url):
        return None
    return url


def _markdown(fact_ids: set[str], *, quoted: bool = False) -> MarkdownIt:
    """The report's Markdown renderer; `quoted`: its lines are quoted source text (the extractive
    backend's), shown as written: a licence's "[____] License" is no emphasis."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable(["image", "reference"])
    if quoted:
        md.disable(["emphasis", "backticks", "escape"])
    md.validateLink = lambda url: url.startswith("#") or safe_href(url) is not None  # type: ignore[method-assign]

    def link_citations(state: Any) -> None:
        """Each [F12] in the text becomes a link to fact F12's entry (when the page lists it)."""
        for block in state.tokens:
            if block.type != "inline" or not block.children:
                continue
            children: list[Token] = []
            inside_link = 0
            for token in block.children:
                inside_link += token.type == "link_open"
                inside_link -= token.type == "link_close"
                if token.type != "text" or inside_link:
                    children.append(token)
                    continue
                children.extend(_cite_tokens(token.content, fact_ids))
            block.children = children

    md.core.ruler.push("link_citations", link_citations)
    return md


def _cite_tokens(text: str, fact_ids: set[str]) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    for match in CITE.finditer(text):
        fact = fact_label(int(match.group(1)))
        if fact not in fact_ids:
            continue
        if match.start() > position:
            tokens.append(_text(text[position : match.start()]))
        opening = Token("link_open", "a", 1)
        opening.attrs = {"href": f"#{fact}", "class": "cite"}
        tokens += [opening, _text(match.group(0)), Token("link_close", "a", -1)]
        position = match.end()
    if position < len(text):
        tokens.append(_text(text[position:]))
    return tokens


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _when(timestamp: str | None) -> str:
    return (timestamp or "")[:16].replace("T", " ") + (" UTC" if timestamp else "")


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _source_link(source: DocumentSource) -> str:
    href = safe_href(source.url_or_path)
    label = _e(source.url_or_path)
    if href is None:
        return f"<code>{label}</code>"
    return f'<a href="{_e(href)}" rel="noopener noreferrer">{label}</a>'


def _fact_entry(fact: ViewFact, source_ids: set[str]) -> str:
    status = "verified" if fact.verified else "unverified"
    source = fact.source_id
    source_ref = (
        f'<a class="src" href="#{_e(source)}">{_e(source)}</a>' if source in source_ids else _e(source)
    )
    also = "".join(
        f'<li><a class="src" href="#{_e(c.source_id)}">{_e(c.source_id)}</a>: <q>{_e(c.quote)}</q></li>'
        for c in fact.also_in
        if c.source_id in source_ids
    )
    return (
        f'<li class="fact {status}" id="{_e(fact.id)}"><span class="tag">{_e(fact.id)}</span> '
        f'<span class="status">{status}</span> {_e(fact.statement)}'
        f"<blockquote>{_e(fact.quote)} <cite>— {source_ref}</cite></blockquote>"
        + (f'<ul class="also">{also}</ul>' if also else "")
        + "</li>"
    )


def _source_entry(source: DocumentSource) -> str:
    location = f' <span class="muted">{_e(source.location)}</span>' if source.location else ""
    return (
        f'<li class="source" id="{_e(source.id)}"><span class="tag">{_e(source.id)}</span> '
        f"<strong>{_e(source.name or source.title or source.url_or_path)}</strong> "
        f"{_source_link(source)}{location}"
        f' <span class="muted">relevance {_e(source.relevance)}</span></li>'
    )


def _tree(node: ViewNode) -> str:
    children = "".join(_tree(child) for child in node.children)
    return (
        f'<li><span class="state {_e(node.state)}">{_e(node.state)}</span> '
        f'<span class="muted">{_e(node.kind)}</span> {_e(node.title)}'
        + (f"<ul>{children}</ul>" if children else "")
        + "</li>"
    )


_HEADING_LINE = re.compile(r"^#{1,6}[ \t]+(.*?)[ \t#]*$", re.MULTILINE)


def _without_repeated_heading(findings: str, query: str) -> str:
    """The report's Markdown without the headings that only repeat the question the page's title
    already shows: one heading per question."""

    def said(text: str) -> str:
        return normalize(text).rstrip("?.! ")

    asked = {said(part) for part in query.split(" + ")}
    return _HEADING_LINE.sub(lambda m: "" if said(m.group(1)) in asked else m.group(0), findings)


def render_html(document: RunDocument) -> str:
    """One self-contained HTML page: confidence first, then the report with linked citations, gaps,
    follow-ups, facts, sources and plan."""
    fact_ids = {fact.id for fact in document.facts}
    source_ids = {source.id for source in document.sources}
    quoted = document.run.backend == "extractive"  # every line a verbatim quote
    findings = _markdown(fact_ids, quoted=quoted).render(
        _without_repeated_heading(document.findings, document.run.query)
    )
    meta, run, confidence = document.metadata, document.run, document.confidence
    gaps = "".join(f"<li>{_e(gap)}</li>" for gap in document.gaps) or "<li>none recorded</li>"
    followups = "".join(f"<li>{_e(item)}</li>" for item in document.suggested_followups)
    plans = "".join(
        f'<p class="muted">plan {_e(plan.plan_id)}: {_e(plan.query)}</p><ul class="tree">{_tree(plan.root)}</ul>'
        for plan in document.plan
    )
    sections = [
        f'<header><p class="muted">research-mcp report · run {_e(run.id)} · {_e(run.status)} · '
        f"{_e(run.backend)} backend · {_e(_when(run.finished_at or run.created_at))}</p>"
        f"<h1>{_e(run.query)}</h1></header>",
        f'<section id="confidence"><h2>Confidence</h2><p><strong class="level {_e(confidence.level)}">'
        f"{_e(confidence.level)}</strong> — {_e(confidence.reasoning)}</p>"
        f'<p class="muted">citations: {_e(meta.citations_verified)}/{_e(meta.citations_made)} verified, '
        f"{_e(meta.citations_dropped)} dropped · {len(document.sources)} sources cited of "
        f"{_e(meta.sources_read)} read · "
        f"{_e(meta.llm_calls)} model calls · {_e(meta.tokens_in + meta.tokens_out)} tokens · "
        f"${meta.cost_usd:.4f} · {meta.elapsed_s:.1f} s</p></section>",
        f'<section id="report"><h2>Report</h2>{findings}</section>',
        f'<section id="gaps"><h2>Gaps</h2><ul>{gaps}</ul></section>',
        (
            f'<section id="followups"><h2>Follow-up questions</h2><ul>{followups}</ul></section>'
            if followups
            else ""
        ),
        '<section id="facts"><h2>Facts</h2><ol class="entries">'
        + "".join(_fact_entry(fact, source_ids) for fact in document.facts)
        + "</ol></section>",
        '<section id="sources"><h2>Sources</h2><ol class="entries">'
        + "".join(_source_entry(source) for source in document.sources)
        + "</ol></section>",
        f'<section id="plan"><h2>Plan</h2>{plans}</section>',
    ]
    return PAGE.format(title=_e(run.query), css=CSS, body="\n".join(part for part in sections if part))


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<main>
{body}
</main>
</body>
</html>
"""

CSS = """
body { font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330;
  background: #fafaf7; margin: 0; }
main { max-width: 52rem; margin: 0 auto; padding: 2rem 1.5rem 4rem; }
h1 { font-size: 1.7rem; line-height: 1.25; margin: .2rem 0 1.5rem; }
h2 { font-size: 1.15rem; border-bottom: 1px solid #d9dce3; padding-bottom: .25rem; margin-top: 2.2rem; }
section#report h1 { font-size: 1.3rem; } section#report h2 { border: none; margin-top: 1.2rem; }
a { color: #1f5fbf; } a.cite { text-decoration: none; font-size: .85em; background: #e8effb;
  border-radius: 3px; padding: 0 .2em; }
.muted { color: #6b7280; font-size: .9em; }
.tag { font: .8em ui-monospace, monospace; background: #eef0f4; border-radius: 3px; padding: 0 .3em; }
.status { font-size: .8em; text-transform: uppercase; letter-spacing: .04em; color: #15803d; }
.unverified .status { color: #b45309; }
ol.entries { padding-left: 0; list-style: none; } ol.entries > li { margin: .8rem 0; padding: .5rem .7rem;
  border-radius: 6px; background: #fff; border: 1px solid #e5e7eb; }
li:target { outline: 2px solid #1f5fbf; }
blockquote { margin: .4rem 0 0; padding: .2rem .8rem; border-left: 3px solid #c7d2e0; color: #374151; }
cite { font-style: normal; font-size: .9em; } code { font-size: .85em; word-break: break-all; }
.level.high { color: #15803d; } .level.medium { color: #b45309; } .level.low { color: #b91c1c; }
ul.tree, ul.tree ul { list-style: none; padding-left: 1.2rem; }
.state { font: .75em ui-monospace, monospace; padding: 0 .35em; border-radius: 3px; background: #eef0f4; }
.state.done, .state.cached { background: #dcfce7; } .state.failed { background: #fee2e2; }
.state.running { background: #fef3c7; } .state.cancelled { background: #f3e8ff; }
table { border-collapse: collapse; } td, th { border: 1px solid #d9dce3; padding: .2rem .5rem; }
"""

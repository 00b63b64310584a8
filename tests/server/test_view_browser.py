"""The run view in a real browser: Debian's chromium (headless) renders ui://research-mcp/run.html in a
test host page that speaks the MCP Apps bridge to a real research-mcp server session.

Set RESEARCH_MCP_SCREENSHOTS=<folder> to keep the light and dark screenshots (docs/ holds the ones the
README shows)."""

from __future__ import annotations

import base64
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import ExtractorPayload, SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from tests.cdp import Browser, chromium_path
from tests.server.apps_host import AppsHost, serve
from tests.server.indexing import wait_until_indexed
from tests.sources.loopback import LoopbackServer

pytestmark = pytest.mark.skipif(
    chromium_path() is None,
    reason="chromium is not installed (make test installs Debian's chromium when it can)",
)

NOTES = {
    "kelp forests.md": "# Kelp forests\n\nKelp forests grow in cold, nutrient-rich coastal waters. "
    "Giant kelp can grow up to 60 centimetres in a single day. Sea otters protect kelp by eating urchins.\n",
    "coral reefs.txt": "Coral reefs cover less than one percent of the ocean floor. "
    "They support about a quarter of all marine species.\n",
}
TEXTS = [
    "Alpha penguins live in the Southern Hemisphere. They nest on rocky shores.",
    "Gamma penguins breed in winter. Their chicks hatch in spring.",
]
TWO_LEAVES = {
    "root": {
        "kind": "executor",
        "title": "penguins",
        "children": [
            {"kind": "leaf", "title": "alpha", "questions": ["Where do they live?"], "sources": [TEXTS[0]]},
            {"kind": "leaf", "title": "gamma", "questions": ["When do they breed?"], "sources": [TEXTS[1]]},
        ],
    }
}


@contextmanager
def apps_session(model: Any = None) -> Iterator[tuple[BlockingPortal, Client]]:
    """A real client session that negotiated Apps, on a real server, in a background event loop."""
    extension = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            Client(create_server(model=model), extensions=[extension], mode="legacy")
        ) as client,
    ):
        yield portal, client


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chrome = Browser(tmp_path / "profile")
    try:
        yield chrome
    finally:
        chrome.close()


def start_run(host: AppsHost, plan: dict[str, Any] | None, query: str, wait: float) -> dict[str, Any]:
    """The model's calls: plan_research, then execute_plan — the call the view is attached to."""
    arguments: dict[str, Any] = {"query": query}
    if plan is not None:
        arguments["suggested_plan"] = plan
    planned = host.portal.call(host.client.call_tool, "plan_research", arguments)
    execute = {"plan_id": planned.structured_content["id"], "wait_seconds": wait}  # type: ignore[index]
    run = host.portal.call(host.client.call_tool, "execute_plan", execute)
    host.tool_call = {
        "name": "execute_plan",
        "arguments": execute,
        "result": run.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    return run.structured_content  # type: ignore[return-value]


SANDBOXES = {"same-origin": "allow-scripts allow-same-origin", "opaque-origin": "allow-scripts"}


def open_view(
    browser: Browser, urls: dict[str, str], theme: str = "light", sandbox: str = SANDBOXES["same-origin"]
) -> tuple[str, str]:
    """The host page in a new tab; the sessions of the page and of the view's (cross-origin) frame."""
    since = len(browser.events)  # the frame of this tab, not of one opened before
    target = browser.send("Target.createTarget", {"url": "about:blank"})
    page = browser.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})[
        "sessionId"
    ]
    browser.send(
        "Target.setAutoAttach",
        {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
        session=page,
    )
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": 820, "height": 1100, "deviceScaleFactor": 1, "mobile": False},
        session=page,
    )
    browser.send(
        "Page.navigate",
        {"url": f"{urls['host']}/?theme={theme}&sandbox={quote(sandbox)}&view={urls['view']}/run.html"},
        session=page,
    )
    attached = browser.wait_event(
        "Target.attachedToTarget", lambda p: p["targetInfo"]["type"] == "iframe", since=since
    )
    return page, attached["params"]["sessionId"]


def snapshot(host: AppsHost, run_id: str) -> dict[str, Any]:
    return host.portal.call(host.client.call_tool, "run_view", {"run_id": run_id}).structured_content  # type: ignore[return-value]


def walk(node: dict[str, Any]) -> list[tuple[str, str]]:
    return [(node["id"], node["state"]), *(pair for child in node["children"] for pair in walk(child))]


RENDERED_TREE = "[...document.querySelectorAll('[data-node]')].map(n => [n.dataset.node, n.dataset.state])"


# Each theme under one sandbox: the reference host's, and one without allow-same-origin (opaque origin).
@pytest.mark.parametrize(
    ("theme", "sandbox"),
    [("light", SANDBOXES["same-origin"]), ("dark", SANDBOXES["opaque-origin"])],
    ids=["light-same-origin", "dark-opaque-origin"],
)
def test_a_finished_run_renders_its_tree_and_each_citation_opens_onto_its_verified_quote(
    browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theme: str, sandbox: str
) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for name, text in NOTES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(corpus))
    with apps_session() as (portal, client):  # no model given: the extractive backend
        host = AppsHost(portal, client)
        host.load()
        # The run searches the corpus once it is indexed (a search during indexing says it saw part).
        assert portal.call(wait_until_indexed, client)["phase"] == "ready"
        run = start_run(host, None, "How fast does giant kelp grow?", wait=30)
        assert run["status"] == "done", run
        expected = snapshot(host, run["id"])
        with serve(host) as urls:
            page, frame = open_view(browser, urls, theme, sandbox)
            browser.wait_for(frame, "document.getElementById('status')?.textContent === 'done'")

            # The tree: every node of the run, each in the state the server has for it.
            assert [tuple(pair) for pair in browser.evaluate(frame, RENDERED_TREE)] == walk(
                expected["plan"][0]["root"]
            )
            totals = expected["totals"]
            shown = browser.evaluate(frame, "document.querySelector('[data-total=facts] dd').textContent")
            assert shown == f"{totals['facts_verified']}/{totals['facts']}"

            # A citation opens (click) onto its verified quote and its source.
            facts = {fact["id"]: fact for fact in expected["result"]["facts"]}
            cited = browser.evaluate(
                frame, "[...document.querySelectorAll('button.cite')].map(b => b.dataset.fact)"
            )
            assert cited and set(cited) <= set(facts)
            first = facts[cited[0]]
            browser.evaluate(frame, "document.querySelector('button.cite').click()")
            panel = browser.wait_for(frame, "document.querySelector('#quote')?.innerText")
            # The quote as written, its line breaks laid out as spaces (a passage may span lines).
            assert " ".join(first["quote"].split()) in " ".join(panel.split())
            assert "quote found in the source" in panel
            source = next(s for s in expected["result"]["sources"] if s["id"] == first["source_id"])
            assert source["title"] in panel
            assert "giant kelp" in first["quote"].lower()

            # By keyboard: Escape closes it; a focused citation opens with Enter and shows its focus.
            browser.evaluate(
                frame,
                "document.querySelector('#quote').dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}))",
            )
            assert browser.evaluate(frame, "document.querySelector('#quote')") is None
            browser.evaluate(
                frame,
                "document.querySelectorAll('button.cite')[document.querySelectorAll('button.cite').length - 1].focus()",
            )
            browser.press(page, "Enter", 13)
            last = facts[cited[-1]]
            panel = browser.wait_for(frame, "document.querySelector('#quote')?.innerText")
            assert " ".join(last["quote"].split()) in " ".join(panel.split())
            outline = browser.evaluate(frame, "getComputedStyle(document.activeElement).outlineStyle")
            assert browser.evaluate(frame, "document.activeElement.dataset.fact") == cited[-1]
            assert outline == "solid"

            # Confidence, sources with their kind, and the host's theme.
            level = browser.evaluate(frame, "document.querySelector('.confidence b').textContent")
            assert level == expected["result"]["confidence"]["level"]
            assert browser.evaluate(frame, "document.querySelector('.sources .tag').textContent") == "corpus"
            assert browser.evaluate(frame, "document.documentElement.dataset.theme") == theme
            background = browser.evaluate(frame, "getComputedStyle(document.body).backgroundColor")
            assert background == ("rgb(255, 255, 255)" if theme == "light" else "rgb(23, 24, 27)")

            height = browser.evaluate(page, "document.querySelector('iframe').getBoundingClientRect().height")
            clip = {"x": 0, "y": 0, "width": 820, "height": height, "scale": 1}
            shot = base64.b64decode(
                browser.send("Page.captureScreenshot", {"format": "png", "clip": clip}, session=page)["data"]
            )
            assert shot.startswith(b"\x89PNG")
            keep = os.environ.get("RESEARCH_MCP_SCREENSHOTS")
            if keep:
                Path(keep, f"view-{theme}.png").write_bytes(shot)


@pytest.mark.parametrize("sandbox", list(SANDBOXES.values()), ids=list(SANDBOXES))
def test_the_view_refreshes_a_running_run_until_it_ends_and_then_shows_the_report(
    browser: Browser, sandbox: str
) -> None:
    """Under the reference host's sandbox, and under one without allow-same-origin (an opaque origin)."""
    gates = {"Alpha": threading.Event(), "Gamma": threading.Event()}

    async def script(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, ExtractorPayload):
            gate = gates["Alpha" if "Alpha" in request.payload.source_text else "Gamma"]
            # Each leaf goes on until the test lets it (or the server, shutting down, leaves it).
            await anyio.to_thread.run_sync(gate.wait, abandon_on_cancel=True)
        return team_script(request)

    try:
        with apps_session(ScriptedModel(script)) as (portal, client):
            host = AppsHost(portal, client)
            host.load()
            run = start_run(host, TWO_LEAVES, "penguins", wait=0)
            assert run["status"] == "running"
            with serve(host) as urls:
                _, frame = open_view(browser, urls, sandbox=sandbox)
                states = "Object.fromEntries(" + RENDERED_TREE + ")"
                browser.wait_for(frame, f"(s => s['n.1'] === 'running' && s['n.2'] === 'running')({states})")
                assert browser.evaluate(frame, "document.getElementById('status').textContent") == "running"
                # The sandbox is the one asked for: without allow-same-origin the view's origin is opaque.
                opaque = browser.evaluate(frame, "self.origin") == "null"
                assert opaque == ("allow-same-origin" not in sandbox)
                reads_before = host.view_calls("run_view")
                # The alpha leaf ends while the view is open: only a refresh can show it.
                gates["Alpha"].set()
                browser.wait_for(frame, f"(s => s['n.1'] === 'done' && s['n.2'] === 'running')({states})")
                assert host.view_calls("run_view") > reads_before
                assert browser.evaluate(frame, "document.getElementById('status').textContent") == "running"
                assert browser.evaluate(frame, "document.querySelectorAll('button.cite').length") == 0
                gates["Gamma"].set()
                browser.wait_for(frame, "document.getElementById('status')?.textContent === 'done'")
                assert browser.evaluate(frame, "document.querySelectorAll('button.cite').length") > 0
                assert browser.evaluate(frame, states) == {"n": "done", "n.1": "done", "n.2": "done"}
                ended_at = host.view_calls("run_view")
                # Nothing to wait on for an absence: longer than the 1.5 s refresh, then no further read.
                time.sleep(2)
                assert host.view_calls("run_view") == ended_at
                assert {call["name"] for call in host.calls} == {"run_view"}
    finally:
        for gate in gates.values():
            gate.set()


@pytest.mark.parametrize("host_csp", [True, False], ids=["host-applies-the-csp", "document-csp-alone"])
def test_the_csp_blocks_every_request_to_an_outside_server(browser: Browser, host_csp: bool) -> None:
    with apps_session(ScriptedModel(team_script)) as (portal, client):
        host = AppsHost(portal, client, apply_csp=host_csp)
        host.load()
        start_run(host, TWO_LEAVES, "penguins", wait=20)
        with serve(host) as urls:
            _, frame = open_view(browser, urls)
            browser.wait_for(frame, "document.getElementById('status')?.textContent === 'done'")
            outside = urls["outside"]
            tried = browser.evaluate(
                frame,
                f"""(async () => {{
                    const seen = [];
                    document.addEventListener('securitypolicyviolation', e => seen.push(e.effectiveDirective));
                    try {{ await fetch('{outside}/fetch'); seen.push('fetched'); }} catch {{ seen.push('fetch failed'); }}
                    const img = new Image(); img.src = '{outside}/image.png'; document.body.append(img);
                    const s = document.createElement('script'); s.src = '{outside}/script.js'; document.body.append(s);
                    await new Promise(r => setTimeout(r, 800));
                    return seen;
                }})()""",
            )
    assert "fetch failed" in tried and "fetched" not in tried
    assert {"connect-src", "img-src", "script-src-elem"} <= set(tried)
    assert host.outside_hits == []


def test_markup_in_a_source_is_shown_as_text_and_never_runs(browser: Browser) -> None:
    hostile = 'Alpha penguins <img src=x onerror="window.pwned=1"> live in the south. They nest on shores.'
    plan = {
        "root": {
            "kind": "executor",
            "title": "<b>penguins</b>",
            "children": [{"kind": "leaf", "title": "alpha", "questions": ["Where?"], "sources": [hostile]}],
        }
    }
    with apps_session(ScriptedModel(team_script)) as (portal, client):
        host = AppsHost(portal, client)
        host.load()
        start_run(host, plan, "penguins", wait=20)
        with serve(host) as urls:
            _, frame = open_view(browser, urls)
            browser.wait_for(frame, "document.getElementById('status')?.textContent === 'done'")
            browser.evaluate(frame, "document.querySelector('button.cite').click()")
            panel = browser.wait_for(frame, "document.querySelector('#quote')?.innerText")
            assert '<img src=x onerror="window.pwned=1">' in panel
            assert "<b>penguins</b>" in browser.evaluate(
                frame, "document.querySelector('[data-node=n] .title').textContent"
            )
            assert browser.evaluate(frame, "document.querySelectorAll('img').length") == 0
            made_bold = "[...document.querySelectorAll('b')].some(b => b.textContent === 'penguins')"
            assert browser.evaluate(frame, made_bold) is False
            assert browser.evaluate(frame, "typeof window.pwned") == "undefined"


KELP = "Giant kelp can grow up to 60 centimetres in a single day. Sea otters protect kelp forests by eating urchins."


def tabled_report(request: ModelRequest[Any], url: str) -> Any:
    """The team's answers, with a synthesis that holds a table citing a fact and three links: to the
    run's web source, to javascript: and to a page the run never read."""
    answer = team_script(request)
    if isinstance(request.payload, SynthesisPayload) and request.payload.facts:
        fact = request.payload.facts[0].id
        answer.report = (
            f"| Species | Growth per day |\n| --- | ---: |\n| Giant kelp | 60 cm [F{fact}] |\n\n"
            f"Read [the kelp notes]({url}), not [this](javascript:alert(1)) "
            "nor [a page never read](https://example.org/kelp).\n\n" + answer.report
        )
    return answer


def test_the_report_renders_tables_and_opens_only_links_to_the_runs_web_sources(
    browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LoopbackServer() as site:
        monkeypatch.setenv("RESEARCH_MCP_FETCH_ALLOW", f"127.0.0.1:{site.port}")
        site.serve("/kelp.txt", KELP.encode(), "text/plain; charset=utf-8")
        url = site.url("/kelp.txt")
        plan = {
            "root": {
                "kind": "executor",
                "title": "kelp",
                "children": [
                    {"kind": "leaf", "title": "growth", "questions": ["How fast?"], "sources": [url]}
                ],
            }
        }
        with apps_session(ScriptedModel(lambda request: tabled_report(request, url))) as (portal, client):
            host = AppsHost(portal, client)
            host.load()
            run = start_run(host, plan, "How fast does kelp grow?", wait=20)
            assert run["status"] == "done", run
            with serve(host) as urls:
                page, frame = open_view(browser, urls)
                browser.wait_for(frame, "document.getElementById('status')?.textContent === 'done'")

                # The table: a header row and a body row, the number column aligned right.
                cells = "[...document.querySelectorAll('.findings table tr')].map(r => [...r.cells].map(c => c.textContent))"
                rows = browser.evaluate(frame, cells)
                assert rows[0] == ["Species", "Growth per day"]
                assert rows[1][0] == "Giant kelp" and rows[1][1].startswith("60 cm [F")
                right = "document.querySelector('.findings tbody td:nth-child(2)').style.textAlign"
                assert browser.evaluate(frame, right) == "right"
                # A citation in a cell opens onto its quote below the table, leaving the table whole.
                browser.evaluate(frame, "document.querySelector('.findings td button.cite').click()")
                panel = browser.wait_for(frame, "document.querySelector('#quote')?.innerText")
                assert "60 centimetres" in panel
                placed = "document.querySelector('#quote').previousElementSibling.className"
                assert browser.evaluate(frame, placed) == "table-wrap"
                assert browser.evaluate(frame, "document.querySelector('.findings table #quote')") is None

                # The one link to the run's web source opens through the host; the others are text.
                browser.evaluate(frame, "document.querySelector('#quote').remove()")
                links = "[...document.querySelectorAll('.findings button.link')].map(b => [b.textContent, b.dataset.href])"
                # (the root's report holds its leaf's, so the link may appear more than once)
                assert {tuple(link) for link in browser.evaluate(frame, links)} == {("the kelp notes", url)}
                text = browser.evaluate(frame, "document.querySelector('.findings').textContent")
                assert "not this nor a page never read" in text
                markup = "document.querySelector('.findings').innerHTML"
                assert "javascript" not in browser.evaluate(frame, markup).lower()
                assert browser.evaluate(frame, "document.querySelectorAll('a[href]').length") == 0
                browser.evaluate(frame, "document.querySelector('.findings button.link').click()")
                assert browser.wait_for(page, "window.openedLinks.length === 1 && window.openedLinks") == [
                    url
                ]

                # A report stored before the server checked links (an older store) still opens none
                # but the run's own web source: the view holds the rule itself.
                unchecked = (
                    f"[the notes]({url.upper()}) [run me](javascript:alert(1)) [leave](https://example.org/kelp) "
                    f"[data](data:text/html,hi) [F1]"
                )
                with sqlite3.connect(Settings().database_path) as db:
                    db.execute(
                        "UPDATE handoffs SET output = json_set(output, '$.report', ?) "
                        "WHERE run_id = ? AND role = 'synthesizer'",
                        (unchecked, run["id"]),
                    )
                _, again = open_view(browser, urls)
                browser.wait_for(again, "document.querySelector('.findings')?.textContent.includes('run me')")
                shown = browser.evaluate(again, links)
                assert shown == [["the notes", url]]
                text = browser.evaluate(again, "document.querySelector('.findings').textContent")
                assert "run me leave data" in text
                assert "javascript" not in browser.evaluate(again, markup).lower()
                assert browser.evaluate(again, "document.querySelectorAll('a[href]').length") == 0

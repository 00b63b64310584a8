"""The MCP Apps view over a real client session: linked from execute_plan and report_results, its
`ui://` resource self-contained under a strict CSP, its app-only tool reading the run — and nothing
of it shown to a client that did not negotiate Apps."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.server.view import VIEW_TOOL, VIEW_URI
from tests.server.waiting import until_finished

TEXT = "Penguins live almost exclusively in the Southern Hemisphere. Emperor penguins breed in winter."
PLAN = {
    "root": {
        "kind": "executor",
        "title": "penguins",
        "children": [
            {"kind": "leaf", "title": "habitat", "questions": ["Where do penguins live?"], "sources": [TEXT]}
        ],
    }
}
FIVE = ["execute_plan", "extract_source", "plan_research", "report_results", "scout_sources"]


def apps_client(**kwargs: Any) -> Client:
    return Client(
        create_server(model=ScriptedModel(team_script)),
        extensions=[advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})],
        **kwargs,
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_client_without_apps_lists_the_five_tools_as_before_and_no_view(mode: str) -> None:
    kwargs = {"mode": mode} if mode == "legacy" else {}
    async with Client(create_server(model=ScriptedModel(team_script)), **kwargs) as client:
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
    assert sorted(tool.name for tool in tools) == FIVE
    assert all(tool.meta is None for tool in tools)
    assert not [r for r in resources if str(r.uri).startswith("ui://")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_apps_client_gets_the_view_linked_and_an_app_only_tool(mode: str) -> None:
    kwargs = {"mode": mode} if mode == "legacy" else {}
    async with apps_client(**kwargs) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        read = await client.read_resource(VIEW_URI)
    assert sorted(tools) == sorted([*FIVE, VIEW_TOOL])
    assert tools["execute_plan"].meta == {"ui": {"resourceUri": VIEW_URI}}
    assert tools["report_results"].meta == {"ui": {"resourceUri": VIEW_URI}}
    assert tools["plan_research"].meta is None
    assert tools[VIEW_TOOL].meta == {"ui": {"resourceUri": VIEW_URI, "visibility": ["app"]}}
    [content] = read.contents
    assert content.mime_type == APP_MIME_TYPE
    assert content.meta["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}  # type: ignore[index]
    html = content.text  # type: ignore[union-attr]
    # One self-contained document: no element loads anything, and the document's own CSP forbids it too.
    assert not re.search(r"<(?:script|link|img|iframe)[^>]*\s(?:src|href)=", html, re.I)
    assert "default-src 'none'" in html and "connect-src 'none'" in html


async def test_run_view_returns_the_tree_totals_and_every_cited_fact_with_its_quote() -> None:
    async with apps_client() as client:
        plan = await client.call_tool("plan_research", {"query": "penguins", "suggested_plan": PLAN})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 20}
            ),
        )
        assert run.structured_content["status"] == "done"
        run_id = run.structured_content["id"]
        view = await client.call_tool(VIEW_TOOL, {"run_id": run_id})
        missing = await client.call_tool(VIEW_TOOL, {"run_id": "run_000000000000"})
    snapshot = view.structured_content
    assert not view.is_error
    assert snapshot["run"] == {
        "id": run_id,
        "status": "done",
        "query": "penguins",
        "backend": "scripted",
        "error": None,
    }
    assert snapshot["finished"] is True
    root = snapshot["plan"][0]["root"]
    assert (root["state"], [c["title"] for c in root["children"]]) == ("done", ["habitat"])
    assert snapshot["totals"]["nodes_done"] == snapshot["totals"]["nodes_total"] == 2
    result = snapshot["result"]
    facts = {fact["id"]: fact for fact in result["facts"]}
    cited = set(re.findall(r"\[(F\d+)\]", result["findings"]))
    assert cited and cited <= set(facts)
    for fact_id in cited:
        assert facts[fact_id]["verified"] and facts[fact_id]["quote"] in TEXT
        assert facts[fact_id]["source_id"] in {source["id"] for source in result["sources"]}
    assert result["confidence"]["level"] in ("high", "medium", "low")
    assert missing.is_error and "No run with id" in missing.content[0].text
    assert len(json.dumps(snapshot)) < 20_000

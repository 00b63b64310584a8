"""A forged-citation corpus: every forged spelling in every free-text field a synthesizer writes, and
the count of forgeries that reach a view or an export (the figure in SECURITY.md).

    .venv/bin/python -m bench.forgeries

One run per (spelling, field): a scripted synthesizer cites a real fact correctly and puts the forged
citation and an attacker link in that one field; the run's report, summary, gaps, confidence,
follow-ups and facts views and its Markdown, HTML and JSON exports are searched for the forged id and
the attacker's host. A checked text may keep only the run's own fact ids and sources.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import anyio
from mcp import Client

FORGED_ID = "987654"
SPELLINGS = [
    f"[F{FORGED_ID}]",
    f"[F{FORGED_ID}, verified]",
    f"[F {FORGED_ID}]",
    f"[f{FORGED_ID}]",
    f"(F{FORGED_ID})",
    f"[F#{FORGED_ID}]",
    f"\uff3bF{FORGED_ID}\uff3d",
    "\uff3b\uff26" + "".join(chr(0xFF10 + int(d)) for d in FORGED_ID) + "\uff3d",
    f"\u3010F{FORGED_ID}\u3011",
    f"[F1, F{FORGED_ID}]",
    f"[F{FORGED_ID}](http://evil.example/x)",
]
LINKS = ["http://evil.example/x", "[here](http://evil.example/x)", "![p](http://evil.example/p.png)"]
FIELDS = ["report", "gaps", "confidence", "followups", "findings", "contradictions"]
TEXT = (
    "Solar panels convert sunlight into electricity using photovoltaic cells. "
    "Typical panel efficiency is between 18 and 22 percent in 2024."
)


def script_for(field: str, forged: str) -> Any:
    from research_mcp.core.contracts import Confidence, Finding, SynthesisOutput
    from research_mcp.core.role_inputs import SynthesisPayload
    from research_mcp.llm.scripted import team_script

    def script(request: Any) -> Any:
        if not isinstance(request.payload, SynthesisPayload):
            return team_script(request)
        real = request.payload.facts[0].id
        text = {name: "" for name in FIELDS} | {field: forged}
        return SynthesisOutput(
            report=f"Panels are efficient [F{real}]. {text['report']}",
            key_findings=[Finding(statement=f"Efficient {text['findings']}", fact_ids=[real])],
            confidence=Confidence(level="medium", reasoning=f"scripted {text['confidence']}"),
            gaps=[f"gap {text['gaps']}"],
            contradictions=[f"none {text['contradictions']}"],
            suggested_followups=[f"more {text['followups']}"],
        )

    return script


async def one(field: str, forged: str) -> dict[str, int]:
    from research_mcp.cli.exports import export_run
    from research_mcp.core.config import Settings
    from research_mcp.llm.scripted import ScriptedModel
    from research_mcp.server.app import create_server
    from research_mcp.storage.store import Store

    leaf = {"kind": "leaf", "title": "solar", "questions": ["How efficient are panels?"], "sources": [TEXT]}
    plan = {"root": {"kind": "executor", "title": "energy", "children": [leaf]}}
    found: dict[str, int] = {}
    async with Client(create_server(model=ScriptedModel(script_for(field, forged)))) as client:
        planned = await client.call_tool("plan_research", {"query": "solar", "suggested_plan": plan})
        run = await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
        )
        run_id = run.structured_content["id"]
        for view in ("report", "summary", "gaps", "confidence", "followups", "facts"):
            result = await client.call_tool("report_results", {"id": run_id, "view": view})
            found[view] = _count(json.dumps(result.structured_content, ensure_ascii=False))
    store = Store(Settings().database_path)
    for fmt in ("md", "html", "json"):
        found[f"export.{fmt}"] = _count(export_run(store, run_id, fmt))
    return found


def _count(text: str) -> int:
    fullwidth = "".join(chr(0xFF10 + int(d)) for d in FORGED_ID)
    return text.count(FORGED_ID) + text.count(fullwidth) + text.count("evil.example")


async def main() -> None:
    cases = [(field, forged) for field in FIELDS for forged in SPELLINGS + LINKS]
    reached = 0
    places = 0
    for field, forged in cases:
        with tempfile.TemporaryDirectory() as home:
            os.environ["RESEARCH_MCP_HOME"] = home
            found = await one(field, forged)
        places += len(found)
        hits = {place: count for place, count in found.items() if count}
        if hits:
            reached += 1
            print(f"REACHED {field} {forged!r}: {hits}")
    print(
        f"forged citations and links: {len(cases)} cases ({len(SPELLINGS)} spellings + {len(LINKS)} links "
        f"x {len(FIELDS)} fields), {places} views and exports searched, {reached} cases reaching any"
    )


if __name__ == "__main__":
    for name in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "RESEARCH_MCP_CORPUS"):
        os.environ.pop(name, None)
    os.environ["RESEARCH_MCP_MODEL"] = "extractive"
    anyio.run(main)

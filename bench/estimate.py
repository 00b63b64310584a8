"""plan_research's estimate against what a run then spends, for scripted runs of a few shapes.

    .venv/bin/python -m bench.estimate

The scripted model answers every role (team_script) with a fixed latency per call; tokens are
counted by the scripted model as characters / 4 of what it is sent and returns. The estimate
uses the planner's fixed per-role token figures (roles/planner.py TOKENS), so the token ratio
shows how far those figures are from this script's sizes; calls and wall time are the real test.
"""

from __future__ import annotations

import os
import tempfile
import time

import anyio
from mcp import Client

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.planner import DEFAULT_SECONDS_PER_CALL
from research_mcp.server.app import create_server

LATENCY = 0.2
TEXT = (
    "Topic {i} was first described in {year}. Its main property is stability under load. "
    "Later studies in {later} confirmed the property across many settings. "
    "Critics argue the evidence is limited to laboratory conditions."
)


def plan(leaves: int, sources_per_leaf: int) -> dict:
    children = [
        {
            "kind": "leaf",
            "title": f"topic {i}",
            "questions": [f"When was topic {i} first described?"],
            "sources": [
                TEXT.format(i=f"{i}.{j}", year=1900 + i, later=1950 + j) for j in range(sources_per_leaf)
            ],
        }
        for i in range(leaves)
    ]
    return {"root": {"kind": "executor", "title": "topics", "children": children}}


async def measure(leaves: int, sources: int) -> None:
    model = ScriptedModel(team_script, latency=LATENCY)
    async with Client(create_server(model=model)) as client:
        planned = await client.call_tool(
            "plan_research", {"query": "topics", "suggested_plan": plan(leaves, sources)}
        )
        metrics = planned.structured_content["metrics"]
        calls_before = len(model.calls)
        started = time.perf_counter()
        run = await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 55}
        )
        wall = time.perf_counter() - started
        used = run.structured_content["metrics"]
    calls = len(model.calls) - calls_before
    print(
        f"  {leaves} leaves x {sources} sources: calls est {metrics['est_calls']} / actual {calls}; "
        f"tokens est {metrics['est_tokens']} / actual {used['tokens']} "
        f"(ratio {used['tokens'] / metrics['est_tokens']:.2f}); wall est {metrics['est_wall_s']} s "
        f"(at {LATENCY * 1000:.0f} ms a call: {metrics['est_wall_s'] / DEFAULT_SECONDS_PER_CALL * LATENCY:.1f} s) / actual {wall:.1f} s"
    )


def main() -> None:
    print(
        "estimate against actual (scripted model, backend 'scripted' priced at $0) — .venv/bin/python -m bench.estimate"
    )
    for leaves, sources in ((1, 1), (3, 2), (8, 3)):
        with tempfile.TemporaryDirectory() as home:  # a fresh store each: nothing reused from the last
            os.environ["RESEARCH_MCP_HOME"] = home
            anyio.run(measure, leaves, sources)


if __name__ == "__main__":
    main()

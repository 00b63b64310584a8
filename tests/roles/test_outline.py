"""With a model backend, a report over several parts is written from an outline: a section per
part, then the whole; a section the report leaves out is named in its gaps. The prompts carry the
seed's analytical brief. Through the MCP tools with the scripted model."""

from __future__ import annotations

from typing import Any

from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import Confidence, SynthesisOutput
from research_mcp.core.role_inputs import SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.base import load_prompt
from research_mcp.roles.outline import outline_gaps, sections
from research_mcp.server.app import create_server
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished

TIDES = "Tidal power turns the rise and fall of the sea into electricity. The Rance station opened in 1966."
WAVES = "Wave power captures the energy of surface waves. Most wave power devices are still prototypes."
PLAN = {
    "root": {
        "kind": "executor",
        "title": "Marine power",
        "children": [
            {
                "kind": "leaf",
                "title": "Tidal power",
                "questions": ["What is tidal power?"],
                "sources": [TIDES],
            },
            {"kind": "leaf", "title": "Wave power", "questions": ["What is wave power?"], "sources": [WAVES]},
        ],
    }
}


async def run(model: ScriptedModel) -> dict[str, Any]:
    async with Client(create_server(model=model)) as client:
        plan = await client.call_tool("plan_research", {"query": "marine power", "suggested_plan": PLAN})
        done = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
    assert not done.is_error, done.content
    return dict(done.structured_content)


def root_synthesis(run_id: str) -> StoredSynthesis:
    store = Store(Settings().database_path)
    (root,) = [h for h in store.handoffs_for_run(run_id, role="synthesizer") if str(h.node_id).endswith("/n")]
    output = root.output_as(StoredSynthesis)
    assert output is not None
    return output


async def test_a_report_over_several_leaves_is_written_from_an_outline_a_section_per_leaf_then_the_whole() -> (
    None
):
    model = ScriptedModel(team_script)
    handle = await run(model)

    leaf_prompts = [c.prompt for c in model.calls_for("synthesizer") if "Outline:" not in c.prompt]
    (root_call,) = [c for c in model.calls_for("synthesizer") if "Outline:" in c.prompt]
    assert len(leaf_prompts) == 2  # each leaf is one part: no outline of its own
    assert "1. ## Tidal power: What is tidal power?" in root_call.prompt
    assert "2. ## Wave power: What is wave power?" in root_call.prompt
    assert "3. ## The whole: what the parts show together" in root_call.prompt
    report = root_synthesis(handle["id"]).report
    positions = [report.index(f"## {heading}") for heading in ("Tidal power", "Wave power", "The whole")]
    assert positions == sorted(positions)
    assert not [gap for gap in root_synthesis(handle["id"]).gaps if "outline" in gap]


async def test_a_section_the_report_leaves_out_is_named_in_its_gaps() -> None:
    def skips_the_whole(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, SynthesisPayload) and "Outline:" in request.prompt:
            report = "## Tidal power\n\nTides.\n\n## Wave power\n\nWaves."
            return SynthesisOutput(report=report, confidence=Confidence(level="low", reasoning="scripted"))
        return team_script(request)

    handle = await run(ScriptedModel(skips_the_whole))

    gaps = root_synthesis(handle["id"]).gaps
    assert "The report leaves out the outline's section 'The whole'" in gaps
    assert not [gap for gap in gaps if "section 'Tidal power'" in gap]


def test_an_outline_is_a_heading_per_part_then_the_whole_and_no_outline_asks_nothing() -> None:
    assert outline_gaps([], "anything") == []
    assert sections([("A", ["What is A?"]), ("B", [])])[:2] == ["A: What is A?", "B"]


def test_the_planner_manager_and_synthesizer_prompts_carry_the_analytical_brief() -> None:
    def said(role: str) -> str:
        return " ".join(load_prompt(role).split())

    assert "expert research strategist" in said("planner")
    assert "deliberate carefully" in said("planner")
    assert "expert research lead" in said("manager")
    synthesizer = said("synthesizer")
    for asked in ("patterns", "causes and effects", "standout details", "links between subtopics"):
        assert asked in synthesizer

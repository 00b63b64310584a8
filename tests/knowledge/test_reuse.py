"""What was learned once is reused: the same plan run again asks the model (almost) nothing and
reports the same; an extraction already made is not made again."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.reports import assemble_result
from research_mcp.roles import base
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished

TOPICS = {
    "bridges": [
        "The Golden Gate Bridge opened to traffic in May 1937 after four years of construction. "
        "Its main span is 1,280 metres long and was the longest in the world until 1964.",
        "Suspension bridges carry their deck on vertical hangers from two main cables. "
        "The cables of the Golden Gate Bridge contain about 27,000 wires each.",
    ],
    "bees": [
        "Honey bees communicate the direction of food sources with a waggle dance. "
        "A colony can hold up to 60,000 worker bees in summer.",
        "Worker honey bees live about six weeks during the busy summer season. "
        "Queens can live for several years and lay up to 2,000 eggs a day.",
    ],
    "volcanoes": [
        "Mount Vesuvius erupted in 79 AD and buried the Roman towns of Pompeii and Herculaneum. "
        "It is the only active volcano on the European mainland.",
        "Shield volcanoes such as Mauna Loa are built by fluid basalt lava flows. "
        "Mauna Loa rises about 4,169 metres above sea level.",
    ],
}


def plan_of(topics: dict[str, list[str]]) -> dict[str, Any]:
    leaves = [
        {"kind": "leaf", "title": title, "questions": [f"What is known about {title}?"], "sources": texts}
        for title, texts in topics.items()
    ]
    return {"root": {"kind": "executor", "title": "three subjects", "children": leaves}}


async def plan_and_run(client: Client, plan: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    planned = await client.call_tool("plan_research", {"query": "three subjects", "suggested_plan": plan})
    assert not planned.is_error, planned.content
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
        ),
    )
    assert not run.is_error, run.content
    assert run.structured_content["status"] == "done"
    return dict(planned.structured_content), dict(run.structured_content)


async def test_a_second_run_of_the_same_plan_makes_at_most_a_tenth_of_the_calls_and_the_same_report() -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        _, first = await plan_and_run(client, plan_of(TOPICS))
        first_calls = len(model.calls)
        _, second = await plan_and_run(client, plan_of(TOPICS))
        second_calls = len(model.calls) - first_calls
        facts_view = await client.call_tool("report_results", {"id": second["id"], "view": "facts"})

    assert first_calls == 1 + 6 + 3 + 1  # planner, extractors, leaf syntheses, root synthesis
    assert second_calls == 0  # the plan given before is reused, and the run itself asks nothing
    store = Store(Settings().database_path)
    one, two = assemble_result(store, first["id"]), assemble_result(store, second["id"])
    assert two.findings == one.findings
    assert two.sources == one.sources
    assert (two.metadata.llm_calls, two.metadata.tokens_in) == (0, 0)
    assert second["metrics"]["facts"] == first["metrics"]["facts"] > 0
    reused = store.handoffs_for_run(second["id"])
    assert len(reused) == 10 and all(h.status == "done" and h.output and h.output.cached for h in reused)
    assert "F" in facts_view.structured_content["text"]


async def test_extracting_the_same_source_twice_asks_the_model_once() -> None:
    model = ScriptedModel(team_script)
    text = TOPICS["bees"][0]
    async with Client(create_server(model=model)) as client:
        first = await client.call_tool(
            "extract_source", {"source": text, "questions": ["How big is a colony?"]}
        )
        again = await client.call_tool(
            "extract_source", {"source": text, "questions": ["How big is a colony?"]}
        )
        other = await client.call_tool("extract_source", {"source": text, "questions": ["How do bees talk?"]})

    assert [call.role for call in model.calls] == ["extractor", "extractor"]  # the repeat was reused
    store = Store(Settings().database_path)
    reused = store.get_handoff(again.structured_content["id"])
    assert reused.output is not None and reused.output.cached is True
    assert reused.output.cached_from == first.structured_content["id"]
    assert reused.fact_ids == store.get_handoff(first.structured_content["id"]).fact_ids != []
    assert again.structured_content["metrics"] == first.structured_content["metrics"]
    fresh = store.get_handoff(other.structured_content["id"]).output
    assert fresh is not None and fresh.cached is False


async def test_another_model_does_not_reuse_an_extraction() -> None:
    text = TOPICS["volcanoes"][0]
    first, second = ScriptedModel(team_script), ScriptedModel(team_script, model="another-model")
    async with Client(create_server(model=first)) as client:
        await client.call_tool("extract_source", {"source": text, "questions": ["When did it erupt?"]})
    async with Client(create_server(model=second)) as client:
        await client.call_tool("extract_source", {"source": text, "questions": ["When did it erupt?"]})

    assert len(first.calls) == len(second.calls) == 1


async def test_an_upgrade_of_the_code_does_not_reuse_what_the_earlier_code_made_and_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found as a user: a question asked again after an upgrade kept the earlier code's confidence
    # (medium), though the new code's evidence checks capped it low in a fresh home.
    model = ScriptedModel(team_script)
    text = TOPICS["bridges"][0]
    asked = {"source": text, "questions": ["When did the bridge open?"]}
    async with Client(create_server(model=model)) as client:
        await client.call_tool("extract_source", asked)
        await client.call_tool("extract_source", asked)
        assert len(model.calls) == 1  # the same code reuses
        monkeypatch.setattr(base, "code_version", lambda: "0123456789abcdef")
        again = await client.call_tool("extract_source", asked)

    assert len(model.calls) == 2
    fresh = Store(Settings().database_path).get_handoff(again.structured_content["id"]).output
    assert fresh is not None and fresh.cached is False

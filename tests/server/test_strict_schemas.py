"""The tool schemas through the strict converters agent frameworks run over MCP tools: openai-agents'
`ensure_strict_json_schema` (with `_reject_open_objects`, as `MCPUtil.to_function_tool` calls it when
`convert_schemas_to_strict` is on) and pydantic-ai's `OpenAIJsonSchemaTransformer` (strict tools).
Both make every property required, so an optional parameter stays optional only if it accepts null,
or (cancel, retry, limit, view, max_tokens) publishes a default: a strict model then sends the
default or another valid value, which means what leaving it out means.
"""

from __future__ import annotations

import copy
from typing import Any

from agents.exceptions import UserError
from agents.strict_schema import ensure_strict_json_schema
from mcp import Client
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server


def openai_agents_strict(schema: dict[str, Any]) -> dict[str, Any] | str:
    """The strict schema openai-agents makes of a tool's input schema, or why it refuses."""
    try:
        return ensure_strict_json_schema(copy.deepcopy(schema), _reject_open_objects=True)
    except UserError as error:
        return str(error)


def pydantic_ai_strict(schema: dict[str, Any]) -> dict[str, Any]:
    return OpenAIJsonSchemaTransformer(copy.deepcopy(schema), strict=True).walk()


def optional_but_not_nullable(original: dict[str, Any], strict: dict[str, Any], path: str = "") -> list[str]:
    """Properties the original leaves optional, without a default, that the strict schema requires
    and refuses null for."""
    if not isinstance(original, dict) or not isinstance(strict, dict):
        return []
    found: list[str] = []
    required = original.get("required", [])
    for name, sub in original.get("properties", {}).items():
        converted = strict.get("properties", {}).get(name, {})
        kinds = converted.get("type")
        nullable = (isinstance(kinds, list) and "null" in kinds) or {"type": "null"} in converted.get(
            "anyOf", []
        )
        if name not in required and not nullable and "default" not in sub:
            found.append(f"{path}.{name}")
        found += optional_but_not_nullable(sub, converted, f"{path}.{name}")
    if "items" in original:
        found += optional_but_not_nullable(original["items"], strict.get("items", {}), f"{path}[]")
    return found


async def input_schemas() -> dict[str, dict[str, Any]]:
    async with Client(create_server(model=ScriptedModel(team_script)), mode="legacy") as client:
        return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}


async def test_openai_agents_makes_every_tool_strict_and_keeps_their_optional_parameters_optional() -> None:
    schemas = await input_schemas()
    converted = {name: openai_agents_strict(schema) for name, schema in schemas.items()}
    assert all(isinstance(strict, dict) for strict in converted.values()), converted
    assert {name: optional_but_not_nullable(schemas[name], strict) for name, strict in converted.items()} == {  # type: ignore[arg-type]
        name: [] for name in converted
    }
    assert all(schema["additionalProperties"] is False for schema in schemas.values())


async def test_the_nested_arguments_are_closed_typed_objects() -> None:
    schemas = await input_schemas()
    node = schemas["plan_research"]["properties"]["suggested_plan"]["items"]
    spec = schemas["extract_source"]["properties"]["task_spec"]
    assert node["additionalProperties"] is False and spec["additionalProperties"] is False
    assert set(node["properties"]) == {"parent", "kind", "title", "questions", "sources"}
    assert set(spec["properties"]) == {"expected_format", "acceptance_criteria", "discovery_intense"}
    assert "$ref" not in str(schemas) and "$defs" not in str(schemas)


async def test_a_strict_client_plans_with_the_flat_plan_its_schema_gives() -> None:
    """What openai-agents' strict schema makes a model send: every field, null where not given."""
    schemas = await input_schemas()
    strict = openai_agents_strict(schemas["plan_research"])
    assert isinstance(strict, dict)
    node = strict["properties"]["suggested_plan"]["items"]
    assert node["required"] == ["parent", "kind", "title", "questions", "sources"]
    plan = [
        {"parent": None, "kind": "executor", "title": "penguins", "questions": None, "sources": None},
        {
            "parent": 0,
            "kind": "leaf",
            "title": "breeding",
            "questions": ["When do emperor penguins breed?"],
            "sources": ["Emperor penguins breed in the Antarctic winter."],
        },
    ]
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        result = await client.call_tool(
            "plan_research", {"query": "penguin breeding", "suggested_plan": plan, "budget": None}
        )
    assert not result.is_error, result.content
    assert result.structured_content is not None and result.structured_content["status"] == "feasible"


async def test_pydantic_ai_makes_every_tool_strict_and_keeps_optional_parameters_optional() -> None:
    schemas = await input_schemas()
    converted = {name: pydantic_ai_strict(schema) for name, schema in schemas.items()}
    assert {name: optional_but_not_nullable(schemas[name], strict) for name, strict in converted.items()} == {
        name: [] for name in schemas
    }


async def test_a_strict_client_may_send_null_for_every_optional_parameter() -> None:
    nulls: dict[str, Any] = {
        "plan_id": None,
        "plan_ids": None,
        "run_id": "run_000000000000",
        "wait_seconds": None,
        "cancel": None,
        "retry": None,
        "budget": None,
    }
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await client.call_tool("execute_plan", nulls)
        report = await client.call_tool(
            "report_results", {"id": "run_000000000000", "view": None, "cursor": None, "max_tokens": None}
        )
        scout = await client.call_tool("scout_sources", {"topic": "penguins", "queries": None, "limit": None})
        extract = await client.call_tool(
            "extract_source",
            {
                "source": "Emperor penguins breed in the Antarctic winter.",
                "questions": ["When do emperor penguins breed?"],
                "task_spec": {
                    "questions": ["When do emperor penguins breed?"],
                    "expected_format": None,
                    "acceptance_criteria": None,
                    "priority": None,
                    "budget": {
                        "max_tokens": None,
                        "max_cost_usd": 1.0,
                        "max_seconds": None,
                        "max_sources": None,
                    },
                    "discovery_intense": None,
                },
            },
        )
    # The unknown run is the only complaint: every null was read as "not given".
    assert run.is_error and "No run with id" in run.content[0].text  # type: ignore[union-attr]
    assert report.is_error and "No run with id" in report.content[0].text  # type: ignore[union-attr]
    assert not scout.is_error, scout.content
    assert not extract.is_error, extract.content


async def test_arguments_are_not_coerced_from_text() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        result = await client.call_tool("scout_sources", {"topic": "penguins", "limit": "5"})
    assert result.is_error and "limit: Input should be a valid integer" in result.content[0].text  # type: ignore[union-attr]

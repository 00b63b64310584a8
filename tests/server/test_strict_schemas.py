"""The tool schemas through the strict converters agent frameworks run over MCP tools: openai-agents'
`ensure_strict_json_schema` (with `_reject_open_objects`, as `MCPUtil.to_function_tool` calls it when
`convert_schemas_to_strict` is on) and pydantic-ai's `OpenAIJsonSchemaTransformer` (strict tools).
Both make every property required, so an optional parameter stays optional only if it accepts null,
or (cancel, retry, limit, view, max_tokens) publishes a default: a strict model then sends the
default or another valid value, which means what leaving it out means.
"""

from __future__ import annotations

import copy
import re
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
    """Properties the original leaves optional that the strict schema requires with no value meaning
    "not given": not null, no published default, and no empty value (an empty list or text, an
    object of such properties) that means what leaving it out means."""
    if not isinstance(original, dict) or not isinstance(strict, dict):
        return []
    found: list[str] = []
    required = original.get("required", [])
    for name, sub in original.get("properties", {}).items():
        converted = strict.get("properties", {}).get(name, {})
        if name not in required and not (_nullable(converted) or "default" in sub or _has_empty(sub)):
            found.append(f"{path}.{name}")
        found += optional_but_not_nullable(sub, converted, f"{path}.{name}")
    if "items" in original:
        found += optional_but_not_nullable(original["items"], strict.get("items", {}), f"{path}[]")
    for branch, converted in zip(original.get("anyOf", []), strict.get("anyOf", []), strict=False):
        found += optional_but_not_nullable(branch, converted, path)
    return found


def _nullable(schema: dict[str, Any]) -> bool:
    kinds = schema.get("type")
    return (isinstance(kinds, list) and "null" in kinds) or {"type": "null"} in schema.get("anyOf", [])


def _has_empty(schema: dict[str, Any]) -> bool:
    """Whether an empty value of the schema's type is valid: what a strict model sends for none."""
    kind = schema.get("type")
    if kind == "array":
        return not schema.get("minItems")
    if kind == "string":
        return not schema.get("minLength") and re.fullmatch(schema.get("pattern", ""), "") is not None
    if kind == "object":
        return not schema.get("required")
    return False


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
    # The published schemas leave objects open to save the model's context (the server refuses an
    # unknown field by name); the strict conversion closes every one of them.
    assert all(_closed(strict) for strict in converted.values())


def _closed(schema: Any) -> bool:
    if isinstance(schema, list):
        return all(_closed(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
        return False
    return all(_closed(value) for key, value in schema.items() if key not in ("enum", "default"))


async def test_the_nested_arguments_are_typed_objects_that_refuse_unknown_fields() -> None:
    schemas = await input_schemas()
    node = schemas["plan_research"]["properties"]["suggested_plan"]
    (spec, _) = schemas["extract_source"]["properties"]["task_spec"]["anyOf"]
    assert set(node["items"]["properties"]) == {"parent", "kind", "title", "questions", "sources", "budget"}
    assert set(spec["properties"]) == {"expected_format", "acceptance_criteria", "discovery_intense"}
    assert "$ref" not in str(schemas) and "$defs" not in str(schemas)
    plan = [{"kind": "executor", "title": "penguins", "colour": "blue"}]
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        refused = await client.call_tool("plan_research", {"query": "penguins", "suggested_plan": plan})
        unknown = await client.call_tool("scout_sources", {"topic": "penguins", "colour": "blue"})
    assert refused.is_error and "suggested_plan[0].colour: unknown field" in refused.content[0].text  # type: ignore[union-attr]
    assert unknown.is_error and "unknown argument 'colour'" in unknown.content[0].text  # type: ignore[union-attr]


async def test_a_strict_client_plans_with_the_flat_plan_its_schema_gives() -> None:
    """What openai-agents' strict schema makes a model send: every field, null or empty where not given."""
    schemas = await input_schemas()
    strict = openai_agents_strict(schemas["plan_research"])
    assert isinstance(strict, dict)
    node = strict["properties"]["suggested_plan"]["items"]
    assert node["required"] == ["parent", "kind", "title", "questions", "sources", "budget"]
    assert node["properties"]["budget"]["required"] == ["max_seconds", "max_sources"]
    plan = [
        {
            "parent": None,
            "kind": "executor",
            "title": "penguins",
            "questions": [],
            "sources": None,
            "budget": {"max_seconds": None, "max_sources": None},
        },
        {
            "parent": 0,
            "kind": "leaf",
            "title": "breeding",
            "questions": ["When do emperor penguins breed?"],
            "sources": ["Emperor penguins breed in the Antarctic winter."],
            "budget": {"max_seconds": None, "max_sources": 1},
        },
    ]
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        result = await client.call_tool(
            "plan_research",
            {
                "query": "penguin breeding",
                "suggested_plan": plan,
                "budget": {
                    "max_tokens": None,
                    "max_cost_usd": None,
                    "max_seconds": None,
                    "max_sources": None,
                },
            },
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

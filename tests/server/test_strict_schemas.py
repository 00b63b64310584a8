"""The tool schemas as strict converters see them. openai-agents (0.24, `agents.strict_schema.
ensure_strict_json_schema` with `_reject_open_objects`, as `MCPUtil.to_function_tool` calls it) and
pydantic-ai (2.68, `OpenAIJsonSchemaTransformer(strict=True)`) are not dependencies of this project;
their rules are written out here (checked against those versions by hand: see CHANGELOG):

- an object must declare its properties and say `additionalProperties: false` (or say nothing, when
  it has properties): an open object is refused;
- no `$ref` may remain;
- every property becomes required, so an optional one must accept null for a model to leave it out.
"""

from __future__ import annotations

from typing import Any

from mcp import Client

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server


def refusals(schema: Any, path: str = "") -> list[str]:
    """What a strict converter refuses in `schema`."""
    if not isinstance(schema, dict):
        return []
    found: list[str] = []
    kind = schema.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    if "$ref" in schema:
        found.append(f"{path or 'root'}: a $ref")
    if is_object and schema.get("additionalProperties", False) is not False:
        found.append(f"{path or 'root'}: additionalProperties is not false")
    if is_object and not schema.get("properties") and schema.get("additionalProperties") is not False:
        found.append(f"{path or 'root'}: an open object")
    for name, sub in schema.get("properties", {}).items():
        found += refusals(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        found += refusals(schema.get(key), f"{path}[]" if key == "items" else path)
    for index, sub in enumerate(schema.get("anyOf", [])):
        found += refusals(sub, f"{path}|{index}")
    return found


def not_nullable_optionals(schema: Any, path: str = "") -> list[str]:
    """Optional properties that a strict converter would make required and non-null."""
    if not isinstance(schema, dict):
        return []
    found: list[str] = []
    required = schema.get("required", [])
    for name, sub in schema.get("properties", {}).items():
        kinds = sub.get("type")
        nullable = (isinstance(kinds, list) and "null" in kinds) or {"type": "null"} in sub.get("anyOf", [])
        if name not in required and not nullable:
            found.append(f"{path}.{name}")
        found += not_nullable_optionals(sub, f"{path}.{name}")
    found += not_nullable_optionals(schema.get("items"), f"{path}[]")
    return found


async def test_strict_converters_accept_the_tools_and_keep_optional_parameters_optional() -> None:
    async with Client(create_server(model=ScriptedModel(team_script)), mode="legacy") as client:
        tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    refused = {name: refusals(schema) for name, schema in tools.items()}
    # suggested_plan is still an open object: the typed plan tree does not fit the size budget.
    assert refused == {
        "plan_research": [".suggested_plan: an open object"],
        "execute_plan": [],
        "extract_source": [],
        "scout_sources": [],
        "report_results": [],
    }
    assert {name: not_nullable_optionals(schema) for name, schema in tools.items()} == {
        name: [] for name in tools
    }
    assert all(schema["additionalProperties"] is False for schema in tools.values())


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

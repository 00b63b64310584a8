"""Smaller tool schemas: tool definitions sit in the host's context on every turn.

Pydantic's JSON schemas carry a generated `title` on every node, spell an optional value as
`anyOf: [X, {type: null}]` with `default: null`, and put each model in `$defs`. Dropping the
titles, writing a nullable value as `type: [x, "null"]` (left out of `required`, no `default: null`)
and inlining the definitions keeps the meaning and more than halves the size.

Optional parameters stay nullable on purpose: strict converters (openai-agents, pydantic-ai with
strict tools) make every property required, and a model can then still leave one out by sending
null, which the tools accept.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compact_schema", "output_outline", "published_schema"]

_NULL = {"type": "null"}
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not")


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without generated titles, with optional values as plain types and definitions
    inlined (without their models' docstrings)."""
    definitions = schema.get("$defs", {})
    recursive: set[str] = set()
    node = _compact(_inline(schema, definitions, (), recursive))
    if recursive:  # a recursive model (a plan tree) keeps its definition
        node["$defs"] = {name: _compact(definitions[name]) for name in sorted(recursive)}
    return node


def _inline(node: Any, definitions: dict[str, Any], inlining: tuple[str, ...], recursive: set[str]) -> Any:
    """Replace each `$ref` to a local definition by the definition, except where it refers to itself."""
    if isinstance(node, list):
        return [_inline(item, definitions, inlining, recursive) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in inlining:
            recursive.add(name)
            return node
        # The model's docstring describes the model, not the parameter: a parameter keeps only the
        # description its own Field gives (Budget's "Limits; unset means none." was 84 B of two tools).
        definition = {k: v for k, v in definitions[name].items() if k != "description"}
        merged = {**definition, **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, definitions, (*inlining, name), recursive)
    return {
        key: _inline(value, definitions, inlining, recursive) for key, value in node.items() if key != "$defs"
    }


def _compact(schema: dict[str, Any]) -> dict[str, Any]:
    # `additionalProperties: true` is the default, so saying it adds nothing.
    node = {
        key: value
        for key, value in schema.items()
        if key != "title" and not (key == "additionalProperties" and value is True)
    }
    options = node.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and _NULL in options:
        (only,) = [option for option in options if option != _NULL]
        if node.get("default", 0) is None:
            node.pop("default")
        if isinstance(only.get("type"), str):  # {type: [x, "null"]}: the shorter spelling
            node.pop("anyOf")
            nullable = {**only, **node, "type": [only["type"], "null"]}
            if "enum" in only:
                nullable["enum"] = [*only["enum"], None]
            return _compact(nullable)
    for key in _SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            node[key] = {name: _compact(sub) for name, sub in node[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            node[key] = [_compact(sub) for sub in node[key]]
    for key in _SCHEMA_VALUES:
        if isinstance(node.get(key), dict):
            node[key] = _compact(node[key])
    return node


# Enforced by the tool boundary's validators; leaving them out of the published schemas keeps the
# definitions the host carries every turn small (and strict converters drop most of them anyway).
_CONSTRAINTS = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
    }
)


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {key: value for key, value in node.items() if key != "default"} | {"type": [kind, "null"]}
    return node


def published_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema as a tool definition carries it: compact, without the constraints the server
    checks itself, with descriptions only on the top-level properties, and with nested optional
    fields nullable."""
    node = compact_schema(schema)
    node.pop("description", None)
    properties = node.get("properties", {})
    node["properties"] = {
        name: {**_slim(sub), **({"description": sub["description"]} if "description" in sub else {})}
        for name, sub in properties.items()
    }
    return node


def output_outline(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema as a tool definition carries it: an object and the keys every result has.

    The full schema of the four compact handles and the report page cost 1,509 bytes of the five
    tool definitions, every turn, to say that `id` is a string and `summary` a list, which each
    result shows anyway; the outline keeps what a host checks a result against (an object with
    these keys) and what the tool descriptions rely on (the key names)."""
    return {"type": "object", "required": list(schema.get("properties", {}))}


def _slim(node: Any) -> Any:
    if isinstance(node, list):
        return [_slim(item) for item in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("properties"), dict):  # optional fields nullable: see the module's docstring
        required = node.get("required", [])
        node = {
            **node,
            "properties": {
                name: _nullable(sub) if name not in required else sub
                for name, sub in node["properties"].items()
            },
        }
    return {
        key: (value if key in ("enum", "required", "default", "type") else _slim(value))
        if key != "properties"
        else {name: _slim(sub) for name, sub in value.items()}
        for key, value in node.items()
        if key not in _CONSTRAINTS and key != "description"
    }

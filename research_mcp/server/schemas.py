"""Smaller tool schemas: tool definitions sit in the host's context on every turn.

Pydantic's JSON schemas carry a generated `title` on every node, spell an optional value as
`anyOf: [X, {type: null}]` with `default: null`, and put each model in `$defs`. Dropping the titles
and inlining the definitions keeps the meaning and more than halves the size.

An input schema (`published_schema`) carries the limits the server enforces (`Limits`) and is
portable: one `type` per node (Gemini's OpenAPI subset and `inspector --strict` read no type lists).
Strict converters (openai-agents, pydantic-ai) make every property required, so an optional value
needs one a model can send for "not given": its default (cancel, retry, limit, view, max_tokens,
wait_seconds), its empty value (a list, a suggested plan, a text, an object: left unsaid), or null,
spelled `anyOf` (ids, a task spec, a budget's limits). Every property, nested ones included, carries
its description: the definition is all a model reads of an argument. Nested objects are not marked
closed: the server refuses an unknown field by name, and strict converters close them. Output
schemas are not in the model's context: the whole result models, typed, with `anyOf`
(`published_output`).
"""

from __future__ import annotations

from typing import Any

from pydantic import GetJsonSchemaHandler

__all__ = ["Limits", "compact_schema", "portable", "published_output", "published_schema"]

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


class Limits:
    """Limits an argument's validator enforces, published in its JSON schema so that a model sees
    them before it calls (the validator, not pydantic, checks them: its error says what to give)."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def __get_pydantic_json_schema__(self, core: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        return {**handler(core), **self.keywords}


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """An optional field as a strict client must see it: with a default (absence means it) or null."""
    if node.get("default") is not None:
        return node
    kind = node.get("type")
    if isinstance(kind, str):
        return {key: value for key, value in node.items() if key != "default"} | {"type": [kind, "null"]}
    return node


def published_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema as a tool definition carries it: compact, with the limits the server
    enforces, a description on every property, an optional value with a default
    published as its type (and the default, unless it is empty), and one without a default nullable,
    spelled `anyOf` (`portable`)."""
    node = compact_schema(schema)
    node.pop("description", None)
    properties = node.get("properties", {})
    node["properties"] = {
        name: {**_slim(sub), **({"description": sub["description"]} if "description" in sub else {})}
        for name, sub in properties.items()
    }
    return portable(_defaults_not_null(node))


def _defaults_not_null(node: Any) -> Any:
    """`type: [x, "null"]` with a default other than null as `type: x`: leaving the value out means
    its default, so a client never needs to send null for it (null is still accepted)."""
    if isinstance(node, list):
        return [_defaults_not_null(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {
        key: value if key in ("enum", "required", "default") else _defaults_not_null(value)
        for key, value in node.items()
    }
    kinds = node.get("type")
    if isinstance(kinds, list) and "null" in kinds and node.get("default") is not None:
        (node["type"],) = [kind for kind in kinds if kind != "null"]
        if "enum" in node:
            node["enum"] = [value for value in node["enum"] if value is not None]
    if "default" in node and node["default"] in _EMPTY:  # an empty list, text or object goes without saying
        node.pop("default")
    return node


_EMPTY: tuple[Any, ...] = ([], "", {})


_ANNOTATIONS = ("description", "default")


def portable(node: Any) -> Any:
    """`type: [x, "null"]` spelled `anyOf: [{type: x, ...}, {type: "null"}]`, at every level.

    Both mean the same; the array form is legal JSON Schema, but several MCP clients and model APIs
    (Gemini's OpenAPI subset; `inspector --strict` warns on each) read `type` as one string. The
    branch keeps what constrains the value (its pattern, bounds, items, enum without null); the
    description and default stay beside `anyOf`."""
    if isinstance(node, list):
        return [portable(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: portable(value) if key not in ("enum", "required") else value for key, value in node.items()}
    kinds = node.get("type")
    if not (isinstance(kinds, list) and len(kinds) == 2 and "null" in kinds):
        return node
    (kind,) = [kind for kind in kinds if kind != "null"]
    branch = {key: value for key, value in node.items() if key not in _ANNOTATIONS} | {"type": kind}
    if "enum" in branch:
        branch["enum"] = [value for value in branch["enum"] if value is not None]
    outer = {key: node[key] for key in _ANNOTATIONS if key in node}
    return {"anyOf": [branch, _NULL], **outer}


def published_output(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema as a tool definition carries it: the whole result model, typed field by
    field (a host's SDK validates each result against it), every field required (a result always
    has them all), nullable values spelled portably. It is not in the model's context, so it is
    not slimmed."""
    return portable(_all_required(compact_schema(schema)))


def _all_required(node: Any) -> Any:
    if isinstance(node, list):
        return [_all_required(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _all_required(value) if key != "required" else value for key, value in node.items()}
    if isinstance(node.get("properties"), dict):
        node["required"] = list(node["properties"])
    return node


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
    # No object is marked closed: the server refuses an unknown field by name, strict converters
    # close every object themselves, and Gemini drops the keyword.
    return {
        key: (value if key in ("enum", "required", "default", "type") else _slim(value))
        if key != "properties"
        else {name: _slim(sub) for name, sub in value.items()}
        for key, value in node.items()
        if key != "additionalProperties"
    }

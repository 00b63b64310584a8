"""Smaller tool schemas: tool definitions sit in the host's context on every turn.

Pydantic's JSON schemas carry a generated `title` on every node, spell an optional value as
`anyOf: [X, {type: null}]` with `default: null`, and put each model in `$defs`. Dropping the
titles, writing an optional parameter as plain X (left out of `required`) and inlining the
definitions keeps the meaning and more than halves the size.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compact_schema"]

_NULL = {"type": "null"}
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not")


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without generated titles, with optional values as plain types and definitions inlined."""
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
        merged = {**definitions[name], **{k: v for k, v in node.items() if k != "$ref"}}
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
    if (
        isinstance(options, list)
        and len(options) == 2
        and _NULL in options
        and node.get("default", 0) is None
    ):
        (only,) = [option for option in options if option != _NULL]
        node.pop("anyOf")
        node.pop("default")
        return _compact({**only, **node})
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

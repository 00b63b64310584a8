"""Smaller tool schemas: tool definitions sit in the host's context on every turn.

Pydantic's JSON schemas carry a generated `title` on every node and spell an optional value as
`anyOf: [X, {type: null}]` with `default: null`. Dropping the titles and writing an optional
parameter as plain X (left out of `required`) keeps the meaning and halves the size.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compact_schema"]

_NULL = {"type": "null"}
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not")


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    node = {key: value for key, value in schema.items() if key != "title"}
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
        node = {**only, **node}
    for key in _SCHEMA_MAPS:
        if isinstance(node.get(key), dict):
            node[key] = {name: compact_schema(sub) for name, sub in node[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(node.get(key), list):
            node[key] = [compact_schema(sub) for sub in node[key]]
    for key in _SCHEMA_VALUES:
        if isinstance(node.get(key), dict):
            node[key] = compact_schema(node[key])
    return node

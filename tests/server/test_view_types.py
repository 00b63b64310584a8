"""The view's TypeScript types are generated from the models `run_view` returns, and agree with them."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from research_mcp.run_document import RunView
from scripts.view_types import TYPES_FILE, typescript


def test_the_checked_in_view_types_are_those_the_run_view_schema_gives() -> None:
    written = TYPES_FILE.read_text(encoding="utf-8")

    assert written == typescript(RunView.model_json_schema(mode="serialization")), "run `make view-types`"


class Leaf(BaseModel):
    kind: Literal["web", "corpus"]
    score: float | None
    children: list[Leaf]


class Tree(BaseModel):
    """A tree."""

    leaves: list[Leaf | None]
    counts: dict[str, int]
    note: str = ""


def test_fields_unions_arrays_references_and_defaults_become_their_typescript() -> None:
    generated = typescript(Tree.model_json_schema(mode="serialization"))

    assert generated.split("\n\n", 1)[1] == (
        "/** A tree. */\n"
        "export interface Tree {\n"
        "  leaves: (Leaf | null)[];\n"
        "  counts: Record<string, number>;\n"
        "  note?: string;\n"
        "}\n\n"
        "export interface Leaf {\n"
        '  kind: "web" | "corpus";\n'
        "  score: number | null;\n"
        "  children: Leaf[];\n"
        "}\n"
    )


def test_a_schema_the_generator_cannot_translate_stops_it() -> None:
    class Odd(BaseModel):
        pair: tuple[int, str]

    with pytest.raises(ValueError, match="no TypeScript for the schema"):
        typescript(Odd.model_json_schema(mode="serialization"))

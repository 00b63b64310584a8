"""The ids research-mcp gives out and reads back: each kind formatted and parsed here only.

    plan_3fa2b4c5d6e7    a plan           (`new_id("plan")`)
    run_3fa2b4c5d6e7     a run            (`new_id("run")`)
    h_3fa2b4c5d6e7       a handoff        (`new_id("handoff")`)
    S12                  a stored source  (`source_label`, `source_number`)
    F12                  a fact           (`fact_label`, `fact_number`)
    corpus:12            a corpus document (`corpus_ref`, `corpus_number`)
    plan_3fa…/n.1        a plan node within a run (`NodeKey`); "final" joins a run's plans

How a fact is cited in a report (`[F12]`) is `citations.py`'s business.
"""

from __future__ import annotations

import re
import secrets
from typing import Literal, NamedTuple

from research_mcp.core.errors import InvalidInput, shown

__all__ = [
    "FINAL_NODE",
    "ID_SHAPES",
    "IdKind",
    "NodeKey",
    "corpus_number",
    "corpus_ref",
    "fact_label",
    "fact_number",
    "kind_of_id",
    "new_id",
    "source_label",
    "source_number",
]

IdKind = Literal["plan", "run", "handoff"]
_PREFIX: dict[IdKind, str] = {"plan": "plan", "run": "run", "handoff": "h"}

#: The shape of each kind of id a tool argument may hold, by the name an error message gives it.
ID_SHAPES = {
    "plan": re.compile(r"plan_[A-Za-z0-9_-]+"),
    "run": re.compile(r"run_[A-Za-z0-9_-]+"),
    "handoff": re.compile(r"h_[A-Za-z0-9_-]+"),
    "source": re.compile(r"S\d{1,12}"),
    "corpus document": re.compile(r"corpus:\d{1,12}"),
}
#: The node that joins the reports of a run of several plans; its key has no plan.
FINAL_NODE = "final"
_SOURCE = re.compile(r"S(\d+)")
_FACT = re.compile(r"F(\d+)")
_CORPUS = re.compile(r"corpus:(\d+)")


def new_id(kind: IdKind) -> str:
    return f"{_PREFIX[kind]}_{secrets.token_hex(6)}"


def kind_of_id(value: str) -> str | None:
    """Which kind of id the value is shaped as (a key of `ID_SHAPES`), None when none."""
    for kind, shape in ID_SHAPES.items():
        if shape.fullmatch(value):
            return kind
    return None


def source_label(source_id: int) -> str:
    return f"S{source_id}"


def fact_label(fact_id: int) -> str:
    return f"F{fact_id}"


def corpus_ref(document_id: int) -> str:
    return f"corpus:{document_id}"


def _number(shape: re.Pattern[str], text: str, what: str, example: str) -> int:
    match = shape.fullmatch(text.strip())
    if match is None:
        raise InvalidInput(f"{shown(text)} is not a {what}; give one like {example}.")
    return int(match.group(1))


def source_number(label: str) -> int:
    """The store's id of the source labelled `label` ("S12" → 12); InvalidInput for any other text."""
    return _number(_SOURCE, label, "source label", "S12")


def fact_number(label: str) -> int:
    """The store's id of the fact labelled `label` ("F12" → 12); InvalidInput for any other text."""
    return _number(_FACT, label, "fact label", "F12")


def corpus_number(ref: str) -> int:
    """The corpus document a `corpus:12` reference names; InvalidInput for any other text."""
    return _number(_CORPUS, ref, "corpus document reference", "corpus:12")


class NodeKey(NamedTuple):
    """A plan node as a run knows it: its plan's id and its id within the plan ("n.1")."""

    plan_id: str
    node_id: str

    def __str__(self) -> str:
        return f"{self.plan_id}/{self.node_id}" if self.plan_id else self.node_id

    @classmethod
    def parse(cls, key: str) -> NodeKey:
        """The key as the store holds it; a key without a plan (`FINAL_NODE`) has plan_id ""."""
        plan_id, slash, node_id = key.partition("/")
        if not slash:
            return cls("", key)
        if not plan_id or not node_id:
            raise InvalidInput(f"{shown(key)} is not a plan node key; give one like 'plan_3fa2/n.1'.")
        return cls(plan_id, node_id)

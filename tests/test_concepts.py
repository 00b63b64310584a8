"""One model per concept (issue 48.4): a gap, a confidence cap, a hop, a lead, a recovery and a
fact are each defined once, and code that needs one uses it rather than a copy with the same
fields. A concept is told by the fields that make it one: every pydantic model and dataclass of the
package holding them is listed, and must be the one.

A fact is `Fact`: an extraction makes it, the store keeps it as is and gives it back to every reader
(the synthesizer's payload included). Two other models hold a statement and a quote, and are not it:

- `ClaimedFact` is what an extractor model claims, before code checks it: the model's answer schema
  (`ExtractorOutput`, whose limits and field descriptions the model is shown, and the shape of a
  stored extraction). It names no source, its quote is not yet looked up in one, and its question is
  an index into those the model was asked; `roles.extractor.located_facts` makes the `Fact`.
- `ViewFact` is a fact as the run document publishes it: `run_view`'s output schema (the view's
  TypeScript types are generated from it) and the JSON export spell ids as the labels a reader sees
  (F12, S3) and add the other places the fact is quoted (`also_in`). It is a published format, not
  another kind of fact: it goes when those formats carry a `Fact` as it is.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

from pydantic import BaseModel

import research_mcp

#: A concept's defining fields, and the one model that may hold them all.
ONE_MODEL = {
    "gap": ({"kind", "question", "part"}, {"research_mcp.core.gaps.Gap"}),
    "confidence cap": ({"level", "reason"}, {"research_mcp.core.contracts.ConfidenceCap"}),
    "hop": ({"ref", "context", "question", "again"}, {"research_mcp.storage.events.HopChoice"}),
    # A lead is found (runs/leads.py), followed and recorded (`SecondHop.followed`) as one model.
    "lead": ({"kind", "text", "because"}, {"research_mcp.storage.events.Lead"}),
    # What a resume tidied: `Store.recover_run` answers the event the run records.
    "recovery": (
        {"nodes_completed", "handoffs_interrupted", "nodes_reset"},
        {"research_mcp.storage.events.Recovered"},
    ),
}
#: What makes a fact, and the models holding it: the fact, and the two forms the docstring tells apart.
FACT_FIELDS = {"statement", "quote"}
FACT_MODELS = {
    "research_mcp.core.contracts.Fact",
    "research_mcp.core.contracts.ClaimedFact",
    "research_mcp.run_document.ViewFact",
}


def package_models() -> dict[str, set[str]]:
    """Every pydantic model and dataclass defined in the package, by dotted name, with its field
    names (a copy as a dataclass is a copy too)."""
    found = {}
    for module_info in pkgutil.walk_packages(research_mcp.__path__, "research_mcp."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if not inspect.isclass(value) or value.__module__ != module.__name__:
                continue
            name = f"{value.__module__}.{value.__qualname__}"
            if issubclass(value, BaseModel):
                found[name] = set(value.model_fields)
            elif dataclasses.is_dataclass(value):
                found[name] = {field.name for field in dataclasses.fields(value)}
    return found


def holding(fields: set[str], models: dict[str, set[str]]) -> set[str]:
    """The models whose fields include `fields`."""
    return {name for name, own in models.items() if fields <= own}


def test_a_gap_a_cap_a_hop_a_lead_and_a_recovery_each_have_one_model() -> None:
    models = package_models()
    assert len(models) > 50  # the walk found the package's models
    for concept, (fields, one) in ONE_MODEL.items():
        assert holding(fields, models) == one, f"a second model of a {concept}: use {one}"


def test_a_fact_has_one_model_besides_a_models_claim_and_its_published_form() -> None:
    assert holding(FACT_FIELDS, package_models()) == FACT_MODELS


def test_no_gap_or_cap_is_a_bare_string_or_pair_in_a_signature() -> None:
    """The typed-in-name-only forms the models replaced: a cap as a (level, reason) pair, and the
    prefixes of a gap's text read back (`startswith`/`split` on them)."""
    source = Path(research_mcp.__file__).parent
    pair = re.compile(r"tuple\[ConfidenceLevel, str\]")
    read_back = re.compile(
        r"(startswith|removeprefix|split)\((UNANSWERED|NOT_ESTABLISHED|NEVER_MENTIONED)"
        r"|(UNANSWERED|NOT_ESTABLISHED|NEVER_MENTIONED) in "
    )
    found = [
        f"{path.relative_to(source)}:{number}"
        for path in sorted(source.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pair.search(line) or read_back.search(line)
    ]
    assert found == []

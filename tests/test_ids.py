from collections.abc import Callable

import pytest

from research_mcp.core.errors import InvalidInput
from research_mcp.core.ids import (
    NodeKey,
    corpus_number,
    corpus_ref,
    fact_label,
    fact_number,
    kind_of_id,
    new_id,
    source_label,
    source_number,
)


def test_each_new_id_is_of_its_kind_and_fresh() -> None:
    made = {kind: new_id(kind) for kind in ("plan", "run", "handoff")}
    assert {kind: kind_of_id(ident) for kind, ident in made.items()} == {
        "plan": "plan",
        "run": "run",
        "handoff": "handoff",
    }
    assert made["handoff"].startswith("h_")
    assert new_id("run") != new_id("run")


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("S12", "source"),
        ("corpus:7", "corpus document"),
        ("run_3fa2b4c5d6e7", "run"),
        ("F12", None),  # a fact is not an argument any tool takes
        ("s12", None),
        ("run_", None),
        ("S12 ", None),
    ],
)
def test_the_kind_of_an_id_is_read_off_its_whole_shape(value: str, kind: str | None) -> None:
    assert kind_of_id(value) == kind


def test_labels_and_references_round_trip() -> None:
    for number in (0, 1, 12, 10**11):
        assert source_number(source_label(number)) == number
        assert fact_number(fact_label(number)) == number
        assert corpus_number(corpus_ref(number)) == number
    assert (source_label(12), fact_label(12), corpus_ref(12)) == ("S12", "F12", "corpus:12")


@pytest.mark.parametrize(
    ("parse", "text", "says"),
    [
        (source_number, "F12", "'F12' is not a source label; give one like S12."),
        (fact_number, "S12", "'S12' is not a fact label; give one like F12."),
        (fact_number, "F", "'F' is not a fact label; give one like F12."),
        (
            corpus_number,
            "corpus:x",
            "'corpus:x' is not a corpus document reference; give one like corpus:12.",
        ),
    ],
)
def test_a_malformed_label_is_refused_saying_what_one_looks_like(
    parse: Callable[[str], int], text: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse(text)
    assert str(refused.value) == says


def test_a_node_key_joins_a_plan_and_a_node_and_parses_back() -> None:
    key = NodeKey("plan_3fa2", "n.1.2")
    assert str(key) == "plan_3fa2/n.1.2"
    assert NodeKey.parse(str(key)) == key
    assert NodeKey.parse("final") == NodeKey("", "final")  # the node joining a run's plans
    assert str(NodeKey.parse("final")) == "final"


@pytest.mark.parametrize("key", ["/n.1", "plan_3fa2/"])
def test_a_node_key_missing_its_plan_or_node_is_refused(key: str) -> None:
    with pytest.raises(InvalidInput, match="is not a plan node key"):
        NodeKey.parse(key)

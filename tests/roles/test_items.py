"""Which compared item a fact is about (roles/items.py)."""

from __future__ import annotations

from research_mcp.core.contracts import Fact, PlanNode
from research_mcp.roles.items import item_scope, names_item, of_item

COMPARISON = PlanNode(
    kind="executor",
    title="Compare the GPL-3 and the Apache-2.0 licence on patent grants",
    children=[
        PlanNode(id="n.1", kind="discovery", title="Sources on both", questions=["Compare them"]),
        PlanNode(
            id="n.2", kind="leaf", title="the GPL-3", questions=["What about patent grants for the GPL-3?"]
        ),
        PlanNode(
            id="n.3",
            kind="leaf",
            title="the Apache-2.0 licence",
            questions=["What about patent grants for the Apache-2.0 licence?"],
        ),
    ],
)


def _fact(statement: str) -> Fact:
    return Fact(
        id=1, statement=statement, quote=statement, source_id=1, location=None, confidence=0.5, verified=True
    )


def test_each_compared_leaf_is_about_its_own_item() -> None:
    gpl, apache = (item_scope(leaf, COMPARISON) for leaf in COMPARISON.children[1:])
    assert gpl is not None and (gpl.names, gpl.others) == (("GPL-3",), ("Apache-2.0",))
    assert apache is not None and apache.names == ("Apache-2.0",)
    lone = PlanNode(id="n", kind="executor", title="q", children=[COMPARISON.children[1]])
    assert item_scope(COMPARISON.children[1], lone) is None  # no sibling: no comparison


def test_a_name_is_said_with_its_number_close_after_its_letters() -> None:
    assert names_item("Apache License, Version 2.0", ["Apache-2.0"])
    assert not names_item("GNU GPL version 2", ["GPL-3"])


def test_a_fact_belongs_to_the_item_its_source_or_words_name() -> None:
    gpl = item_scope(COMPARISON.children[1], COMPARISON)
    assert gpl is not None
    grant = _fact("Each contributor grants you a patent license.")
    assert of_item(grant, "GPL-3", "", gpl)
    assert not of_item(grant, "MPL-2.0", "Mozilla Public License Version 2.0", gpl)  # another licence
    assert not of_item(grant, "LGPL-3", "version 3 of the GNU GPL", gpl)  # a variant of the item
    assert not of_item(grant, "Apache-2.0", "", gpl)  # the other item
    assert of_item(grant, "Patent clauses compared", "... the GPL 3 grants ...", gpl)  # an article on both
    assert of_item(_fact("The GPL-3 grants a patent license."), "MPL-2.0", "", gpl)


def test_parts_the_parent_does_not_name_are_no_compared_items() -> None:
    parts = PlanNode(
        kind="executor",
        title="energy",
        children=[
            PlanNode(id=f"n.{n}", kind="leaf", title=title, questions=[f"What is known about {title}?"])
            for n, title in enumerate(("solar", "wind", "hydro"), 1)
        ],
    )
    assert all(item_scope(leaf, parts) is None for leaf in parts.children)


def test_a_name_is_said_within_one_sentence() -> None:
    assert not names_item("Exception to Section 3 of the GNU GPL. Exception to Section 3.", ["GPL-3"])
    assert names_item("This is the GNU GPL version 3; it grants.", ["GPL-3"])


def test_lowercase_items_are_named_in_the_singular_or_the_plural() -> None:
    pets = PlanNode(
        kind="executor",
        title="Compare cats and dogs as pets",
        children=[
            PlanNode(id="n.1", kind="leaf", title="cats", questions=["What about cats as pets?"]),
            PlanNode(id="n.2", kind="leaf", title="dogs", questions=["What about dogs as pets?"]),
        ],
    )
    cats = item_scope(pets.children[0], pets)
    assert cats is not None and cats.names == ("cat",)  # its words, stemmed
    fact = _fact("It sleeps sixteen hours a day.")
    assert of_item(fact, "Feline behaviour", "A cat sleeps sixteen hours a day.", cats)
    assert not of_item(fact, "Dog care", "A dog sleeps twelve hours a day.", cats)


def test_the_parts_of_a_question_are_no_compared_items() -> None:
    parts = PlanNode(
        kind="executor",
        title="How fast does giant kelp grow per day, what do sea otters eat, and where do coral reefs grow?",
        children=[
            PlanNode(id=f"n.{n}", kind="leaf", title=question, questions=[question])
            for n, question in enumerate(
                (
                    "How fast does giant kelp grow per day?",
                    "What do sea otters eat?",
                    "Where do coral reefs grow?",
                ),
                1,
            )
        ],
    )
    assert all(item_scope(leaf, parts) is None for leaf in parts.children)

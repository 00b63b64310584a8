"""Which compared item a fact is about: a comparison's section cites only its own item's sources.

Used by a compared item's leaf (its facts and its prior findings) and by the synthesis over the
items (each fact under the question of the item it is about: `facts_of_items`).

A leaf is one item of a comparison when the leaves beside it each name things it does not (its
*item names*: the words of its title and questions that carry a capital or a digit, "GPL-3",
"Apache-2.0", "Rust", that no sibling says; for lowercase items, "cats" and "dogs", the distinctive
words of a short title that is no question), every leaf beside it is such an item too, and their
parent's title or questions name every one of them. A fact found for it, or given to it as a prior finding, belongs to it when

1. its statement or quote names the item; else
2. its source's title or path names the item; else
3. its source's title or path names another item of the comparison, or another version or variant
   of the item ("GPL-2" or "LGPL-3" for "GPL-3"), and it is left out; else
4. its source's text names the item somewhere (an article on both items, titled by neither).

A name is said when its words occur in order, a name's number at most `NUMBER_GAP` words after its
letters ("Apache License, Version 2.0" says "Apache-2.0"); "GPL-2" does not say "GPL-3".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from research_mcp.answering.questions import QUESTION_OPENERS
from research_mcp.answering.terms import stem
from research_mcp.core.contracts import Fact, PlanNode, Source

__all__ = ["ItemScope", "facts_of_items", "item_scope", "names_item", "of_item"]

NUMBER_GAP = 3
#: A title short enough to be the item itself ("cats"), whose distinctive words name it.
ITEM_TITLE_WORDS = 6
_TOKEN = re.compile(r"[^\W_][\w.+#-]*[\w+#]|[^\W_]")
_WORD = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"[.;:!?]\s+")
_IDENTIFIER = re.compile(r"(?<![\w-])([A-Za-z]{2,})[-\u2010\u2011]?v?(\d+(?:\.\d+)*)(?![\w.-]*\d)")
_QUESTION_WORDS = QUESTION_OPENERS | frozenset(
    # What else opens a question or joins what it names, besides a question's own opening words.
    [
        "a",
        "about",
        "an",
        "and",
        "between",
        "compare",
        "comparing",
        "for",
        "in",
        "of",
        "on",
        "or",
        "the",
        "to",
        "versus",
        "vs",
    ]
)


@dataclass(frozen=True)
class ItemScope:
    """The names of this leaf's item, and those of the other items it is compared with."""

    names: tuple[str, ...]
    others: tuple[str, ...]

    def about(self) -> str:
        return " / ".join(self.names)


def _words(text: str) -> list[str]:
    """A text's words as names are matched: casefolded and lightly stemmed ("cats" says "cat",
    "licence" says "license"); numbers as they are."""
    return [stem(word) for word in _WORD.findall(text.casefold())]


def _name_tokens(text: str) -> list[str]:
    """The tokens of a text that read as names: a capital or a digit somewhere, not a question word."""
    found = []
    for position, token in enumerate(_TOKEN.findall(text)):
        if token.casefold() in _QUESTION_WORDS:
            continue
        capital = any(ch.isupper() for ch in token[1:]) or (token[0].isupper() and position > 0)
        if capital or (any(ch.isdigit() for ch in token) and any(ch.isalpha() for ch in token)):
            found.append(token)
    return found


def _said(node: PlanNode) -> str:
    return " ".join([node.title, *node.questions])


def _names(node: PlanNode, siblings: Sequence[PlanNode]) -> tuple[str, ...]:
    """What names this leaf's item and no sibling: its name tokens the siblings never say, or, for
    a short title without any, its words the siblings' titles lack."""
    others = {word for sibling in siblings for word in _words(_said(sibling))}
    names = [token for token in _name_tokens(_said(node)) if not set(_words(token)) <= others]
    if not names and len(node.title.split()) <= ITEM_TITLE_WORDS and not node.title.rstrip().endswith("?"):
        titled = {word for sibling in siblings for word in _words(sibling.title)}
        names = [word for word in _words(node.title) if word not in titled and word not in _QUESTION_WORDS]
    return tuple(dict.fromkeys(names))


def item_scope(node: PlanNode, parent: PlanNode | None) -> ItemScope | None:
    """The item a leaf is about when it is one of several compared (see the module), else None."""
    if parent is None or node.kind != "leaf":
        return None
    siblings = [child for child in parent.children if child.kind == "leaf" and child.id != node.id]
    if not siblings:
        return None
    names = _names(node, siblings)
    named = [
        _names(sibling, [node, *(other for other in siblings if other is not sibling)])
        for sibling in siblings
    ]
    if not names or not all(named):  # every leaf beside it an item too, or these are parts
        return None
    others = [name for each in named for name in each]
    # The items are what the parent compares only when it names each of them ("Compare the GPL-3
    # and the Apache-2.0 licence ..."); parts of an "energy" plan (solar, wind, hydro) are no items.
    asked = _said(parent)
    if not names_item(asked, names) or not all(names_item(asked, [other]) for other in others):
        return None
    return ItemScope(names=names, others=tuple(dict.fromkeys(others)))


def names_item(text: str, names: Sequence[str]) -> bool:
    """Whether a text says one of these names (see the module), within one sentence: "... of the
    GNU GPL. Exception to Section 3" does not say "GPL-3"."""
    return any(
        _says(words, _words(name))
        for sentence in _SENTENCE_END.split(text)
        if (words := _words(sentence))
        for name in names
    )


def _says(words: list[str], name: list[str]) -> bool:
    if not name:
        return False
    letters = [part for part in name if not part.isdigit()]
    numbers = name[len(letters) :] if name[: len(letters)] == letters else []
    size = len(name)
    for start in range(len(words) - len(letters) + 1):
        if words[start : start + len(letters)] != letters:
            continue
        if not numbers:
            return True
        if words[start : start + size] == name:
            return True
        after = words[start + len(letters) : start + len(letters) + NUMBER_GAP + len(numbers)]
        for gap in range(len(after) - len(numbers) + 1):
            if after[gap : gap + len(numbers)] == numbers:
                return True
    return False


def of_item(fact: Fact, title: str, text: str, scope: ItemScope) -> bool:
    """Whether a fact is about the leaf's item, from its own words, then its source's title (and
    path) and text (see the module)."""
    if names_item(fact.statement, scope.names) or names_item(fact.quote, scope.names):
        return True
    if names_item(title, scope.names):
        return True
    if names_item(title, scope.others) or _another_version(title, scope.names):
        return False
    return names_item(text, scope.names)


def _another_version(title: str, names: Sequence[str]) -> bool:
    """Whether a title names another version or variant of the item: the same letters, or letters
    holding them, joined to a number, but not the item's ("GPL-2" or "LGPL-3" for "GPL-3")."""
    ours = {(letters.casefold(), number) for name in names for letters, number in _IDENTIFIER.findall(name)}
    theirs = {(letters.casefold(), number) for letters, number in _IDENTIFIER.findall(title)}
    return any(
        (letters, number) not in ours and mine in letters for letters, number in theirs for mine, _ in ours
    )


def facts_of_items(
    facts: Sequence[Fact], items: Mapping[str, ItemScope], source_of: Callable[[int], Source]
) -> list[Fact]:
    """The facts a synthesis over compared items may cite, order kept: `items` maps each question
    asked of one item to that item. A fact about none of the items is left out; a fact found for
    one item's question but about another item only goes under that item's question (a sweep
    for both items found it). No items: every fact. `source_of` reads a fact's source."""
    if not items:
        return list(facts)
    sources: dict[int, Source] = {}
    kept = []
    for fact in facts:
        if fact.source_id not in sources:
            sources[fact.source_id] = source_of(fact.source_id)
        source = sources[fact.source_id]
        title = f"{source.title} {source.metadata.path or source.ref}"
        about = [question for question, scope in items.items() if of_item(fact, title, source.text, scope)]
        if not about:
            continue
        if fact.question in items and fact.question not in about:
            fact = fact.model_copy(update={"question": about[0]})
        kept.append(fact)
    return kept

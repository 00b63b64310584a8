"""Contradictions found by code: two verified facts from different sources about the same subject
that give different numbers or dates, or where one denies what the other states, and that no
further source settles (more sources agreeing with one side than with the other).

Any backend's synthesis gets them added to its own (the no-model synthesizer finds none by itself),
so a phase's "contradictions resolved" criterion can fail, and an iteration then asks the question
that would settle each one (`settling_question`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from research_mcp.answering.terms import stem, terms
from research_mcp.core.contracts import Fact
from research_mcp.core.ids import fact_label

__all__ = ["Disagreement", "disagreements", "found_contradictions", "settling_question"]

#: How code words a contradiction; `settling_question` reads the subject back from it.
PREFIX = "Sources disagree on "
#: Contradictions code names in one synthesis.
MAX_FOUND = 5
#: Subject terms two facts must share, at least, to be about the same thing.
MIN_SHARED = 3
#: ... and the share of both facts' subject terms they must make up (numbers, dates).
SAME_SUBJECT = 0.5
#: ... and for a negation, where the rest of the two statements must be nearly the same.
SAME_CLAIM = 0.8
STATEMENT_CHARS = 160

_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_IDENTIFIER = re.compile(r"[A-Za-z]+\d+\w*|\d+[A-Za-z]+\w*")
#: Numbers read as years: a date that differs is a disagreement, a count in another year is not.
FIRST_YEAR, LAST_YEAR = 1000, 2100
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_NEGATION = re.compile(r"\b(?:not|no|never|none|neither|nor|without|cannot)\b|n't\b", re.IGNORECASE)


def _numbers(text: str) -> frozenset[str]:
    return frozenset(match.replace(",", "") for match in _NUMBER.findall(text))


def _years(numbers: frozenset[str]) -> frozenset[str]:
    return frozenset(n for n in numbers if n.isdigit() and FIRST_YEAR <= int(n) <= LAST_YEAR)


def _names(text: str) -> frozenset[str]:
    """What names the statement's subject: capitalized words after the first, and identifiers (K10)."""
    words = _WORD.findall(text)
    named = [w for w in words[1:] if w[0].isupper()] + [w for w in words if _IDENTIFIER.fullmatch(w)]
    return frozenset(word.casefold() for word in named)


def _numbers_disagree(a: str, b: str) -> bool:
    """Different numbers for one thing: the numbers differ, and not merely because the two speak of
    different years (a count in 2000 and another in 2010 is a series, not a contradiction)."""
    numbers_a, numbers_b = _numbers(a), _numbers(b)
    years_a, years_b = _years(numbers_a), _years(numbers_b)
    counts_a, counts_b = numbers_a - years_a, numbers_b - years_b
    if counts_a and counts_b:  # amounts disagree; the same year (or none given) makes it one claim
        return not counts_a & counts_b and years_a == years_b
    return bool(years_a and years_b) and not years_a & years_b  # dates: "opened in 1932", "in 1934"


def _subject(text: str) -> list[str]:
    """The statement's content terms, numbers left out."""
    return [term for term in dict.fromkeys(terms(text)) if not term.isdigit()]


def _shared(a: list[str], b: list[str]) -> tuple[list[str], float]:
    """The terms both hold, and their share of all the terms either holds."""
    shared = [term for term in a if term in b]
    return shared, len(shared) / max(1, len({*a, *b}))


def _agrees(fact: Fact, other: Fact) -> bool:
    """`other` says what `fact` says: the same subject, a number in common (or none on either side)
    and the same polarity."""
    shared, share = _shared(_subject(fact.statement), _subject(other.statement))
    if len(shared) < MIN_SHARED or share < SAME_SUBJECT:
        return False
    numbers, others = _numbers(fact.statement), _numbers(other.statement)
    same_numbers = bool(numbers & others) or not (numbers or others)
    return same_numbers and bool(_NEGATION.search(fact.statement)) == bool(_NEGATION.search(other.statement))


def _backing(fact: Fact, facts: Sequence[Fact], copies: Mapping[int, int]) -> int:
    """Sources saying what `fact` says: those of the facts agreeing with it, each counted with the
    sources its statement was found repeated in (a repeat is merged into one fact, corroborated);
    copies of one document (`copies`: each source's first copy) count once."""
    agreeing: dict[int, int] = {}
    for f in facts:
        if f is fact or _agrees(fact, f):
            document = copies.get(f.source_id, f.source_id)
            agreeing[document] = max(agreeing.get(document, 0), f.corroborations)
    return sum(max(1, count) for count in agreeing.values())


def _settled(a: Fact, b: Fact, facts: Sequence[Fact], copies: Mapping[int, int]) -> bool:
    """More sources agree with one side than with the other: a later source settled it."""
    return _backing(a, facts, copies) != _backing(b, facts, copies)


def _conflict(a: Fact, b: Fact) -> list[str] | None:
    """The subject terms two facts conflict on (their numbers differ, or one negates the other)."""
    first, second = _subject(a.statement), _subject(b.statement)
    shared, share = _shared(first, second)
    if len(shared) < MIN_SHARED:
        return None
    names_a, names_b = _names(a.statement), _names(b.statement)
    if names_a and names_b and names_a != names_b:  # the Alder bridge and the Elder bridge
        return None
    if share >= SAME_SUBJECT and _numbers_disagree(a.statement, b.statement):
        return shared
    numbers_a, numbers_b = _numbers(a.statement), _numbers(b.statement)
    negated = bool(_NEGATION.search(a.statement)) != bool(_NEGATION.search(b.statement))
    if share >= SAME_CLAIM and negated and numbers_a == numbers_b:
        return shared
    return None


def _in_words(statement: str, shared: list[str]) -> str:
    """The shared subject as the statement writes it (the terms are stemmed)."""
    words = [word for word in _WORD.findall(statement) if stem(word.casefold()) in shared]
    return " ".join(list(dict.fromkeys(words))[:6])


def _said(fact: Fact) -> str:
    statement = " ".join(fact.statement.split())
    if len(statement) > STATEMENT_CHARS:
        statement = statement[: STATEMENT_CHARS - 1] + "…"
    return f'"{statement}" [{fact_label(fact.id)}]'


@dataclass(frozen=True)
class Disagreement:
    """Two verified facts from different sources that contradict each other, on one subject."""

    subject: str
    first: Fact
    second: Fact

    @property
    def wording(self) -> str:
        """As the report lists it: "Sources disagree on harbour bridge opened: "…" [F3]; "…" [F7]"."""
        return f"{PREFIX}{self.subject}: {_said(self.first)}; {_said(self.second)}"

    @property
    def headline(self) -> str:
        """In one short line, what each side says: the numbers it gives, or that they oppose."""
        numbers = self._numbers()
        if numbers is None:
            return f"{PREFIX}{self.subject}: {self._first} and {self._second} say opposite things"
        return f"{PREFIX}{self.subject}: {numbers[0]} {self._first} vs {numbers[1]} {self._second}"

    @property
    def question(self) -> str:
        """The question that would settle it, for a follow-up: which side another source backs."""
        numbers = self._numbers()
        if numbers is None:
            return f"Which is right on {self.subject}: {self._first} or {self._second}?"
        return f"Which is right on {self.subject}: {numbers[0]} or {numbers[1]}?"

    @property
    def _first(self) -> str:
        return f"[{fact_label(self.first.id)}]"

    @property
    def _second(self) -> str:
        return f"[{fact_label(self.second.id)}]"

    def _numbers(self) -> tuple[str, str] | None:
        """The numbers each side gives and the other does not, when both give some."""
        first, second = _numbers(self.first.statement), _numbers(self.second.statement)
        mine, theirs = ", ".join(sorted(first - second)), ", ".join(sorted(second - first))
        return (mine, theirs) if mine and theirs else None


def disagreements(facts: Sequence[Fact], copies: Mapping[int, int] | None = None) -> list[Disagreement]:
    """Pairs of verified facts from different sources (copies of one document are one source:
    `copies` maps each source to its first copy) that contradict each other and that no further
    source settles; one a subject, at most MAX_FOUND."""
    copies = copies or {}
    # Sentence by sentence: a fact may quote a whole passage, and two passages disagree in one sentence.
    verified = [
        fact.model_copy(update={"statement": sentence})
        for fact in facts
        if fact.verified
        for sentence in _SENTENCE_END.split(" ".join(fact.statement.split()))
        if sentence
    ]
    found: list[Disagreement] = []
    subjects: set[str] = set()
    # In the order of what the facts say, not of their ids: the same facts give the same list.
    for a, b in combinations(sorted(verified, key=lambda fact: (fact.statement, fact.quote)), 2):
        if copies.get(a.source_id, a.source_id) == copies.get(b.source_id, b.source_id):
            continue
        if (shared := _conflict(a, b)) is None or _settled(a, b, verified, copies):
            continue
        subject = _in_words(a.statement, shared)
        if subject in subjects:  # one contradiction a subject, however many sources repeat a side
            continue
        subjects.add(subject)
        found.append(Disagreement(subject, a, b))
        if len(found) == MAX_FOUND:
            break
    return found


def found_contradictions(facts: Sequence[Fact], copies: Mapping[int, int] | None = None) -> list[str]:
    """The contradictions between the facts, worded for the report ("Sources disagree on harbour
    bridge opened: "…" [F3]; "…" [F7]")."""
    return [disagreement.wording for disagreement in disagreements(facts, copies)]


def settling_question(contradiction: str) -> str:
    """The question whose answer would settle a contradiction: its subject, asked of new sources."""
    if contradiction.startswith(PREFIX):
        subject = contradiction[len(PREFIX) :].split(":", 1)[0]
        return f"What is established about {subject}?"
    return f"Which is right: {contradiction[:200]}?"

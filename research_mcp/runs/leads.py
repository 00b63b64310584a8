"""Leads: what the facts found so far point to that the research has not read yet.

A leaf's first pass reads the sources its searches found; what those sources say often names the
thing that holds the answer. "Where is the director of Big Stone Gap based?" is answered in two
steps: the film's page names its director, the director's page says where she lives. Leads are read
from the extractions alone (their facts and the insights an extractor reported), never from how a
particular backend phrases things, so a model's findings and the extractive backend's lead on alike:

- **bridges**: names the verified facts mention that the questions do not (a person, a work, a
  place, a company), weighted by the confidence of the facts naming them; each is searched together
  with the question it bears on;
- **follow-ups**: the questions an extractor said a source left open, searched as asked;
- **links**: the sources an extractor found cited (linked candidate sources), read as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import zip_longest

from research_mcp.answering.names import NOT_NAMES, WORD_TOKEN, name_spans, named_entities
from research_mcp.answering.terms import said_terms, terms
from research_mcp.core.citations import normalize
from research_mcp.core.contracts import Fact
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.storage.events import Lead
from research_mcp.storage.outputs import StoredExtraction
from research_mcp.storage.store import Store

__all__ = [
    "Lead",
    "bridge_entities",
    "leads_from",
    "mentions",
    "name_spans",
    "named_entities",
    "open_terms",
    "still_open",
]


def mentions(text: str, name: str) -> bool:
    """Whether `text` mentions `name` (normalised, as words)."""
    pattern = r"(?<!\w)" + re.escape(normalize(name).casefold()) + r"(?!\w)"
    return re.search(pattern, normalize(text).casefold()) is not None


def _asked_about(name: str, asked: set[str]) -> bool:
    """A name the questions already use, or none at all: most of its words are the questions'
    ("Ralph Franklin Hefferline" when the question names Ralph Hefferline; "Columbia University"
    is not, for "a university"), or it is a month or a day."""
    words = set(terms(name))
    return not words or len(words & asked) * 2 > len(words) or name.casefold() in NOT_NAMES


def still_open(lead: Lead, question: str) -> str:
    """What a search following a bridge asks: its name and the words of the question the fact that
    named it does not answer ("Nixon president served years" for "... during the administration of
    a president that served during what years?", from "... during the Nixon administration")."""
    said = set(terms(lead.because)) | set(terms(lead.text))
    words = [w for w in WORD_TOKEN.findall(question) if (found := terms(w)) and not set(found) <= said]
    return " ".join([lead.text, *dict.fromkeys(words)]) if words else f"{lead.text} {question}"


def _distance(statement: str, start: int, end: int, asked: set[str]) -> int:
    """Words between a name and the nearest word of the questions in the statement: the name the
    statement gives in answer sits next to what was asked ("a professor at Columbia University")."""
    positions = [m.start() for m in WORD_TOKEN.finditer(statement) if set(terms(m.group())) & asked]
    words = [m.start() for m in WORD_TOKEN.finditer(statement)]
    inside = [index for index, at in enumerate(words) if start <= at < end]
    if not inside:
        return len(words)
    near = [words.index(at) for at in positions if not start <= at < end]
    return min((min(abs(index - inside[0]), abs(index - inside[-1])) for index in near), default=len(words))


def bridge_entities(
    facts: Iterable[Fact],
    questions: Sequence[str],
    known: Iterable[str] = (),
    titles: Mapping[int, str] | None = None,
) -> list[Lead]:
    """The names the verified facts mention that neither the questions nor `known` (names not to
    follow) do, strongest first: a name every source uses after one only one source gives
    ("American" after "Adriana Trigiani"); each fact's name nearest to the words of the questions
    before any fact's second; the most confident fact's first.

    `titles` are the titles of the sources read, by source id: a fact's own source's title is no
    bridge (it is what that source is about), another source's is ("Tata Consultancy Services",
    named by the singer's page, is the title of a page the first search read with the leaf's
    question, which it did not answer): the hop asks that source what the name leads to ask."""
    asked = {term for question in questions for term in terms(question)}
    seen = {normalize(title).casefold() for title in known if title}
    own = {source: normalize(title).casefold() for source, title in (titles or {}).items()}
    verified = sorted((f for f in facts if f.verified), key=lambda fact: (-fact.confidence, fact.id))
    sources: dict[str, set[int]] = {}
    for fact in verified:
        for name in named_entities(fact.statement):
            sources.setdefault(normalize(name).casefold(), set()).add(fact.source_id)
    ranked: dict[str, tuple[tuple[int, int, int, int], Lead]] = {}
    for rank, fact in enumerate(verified):
        names = [
            (_distance(fact.statement, start, end, asked), start, name)
            for name, start, end in name_spans(fact.statement)
            if normalize(name).casefold() not in seen
            and normalize(name).casefold() != own.get(fact.source_id)
            and not _asked_about(name, asked)
        ]
        for nearness, (_, start, name) in enumerate(sorted(names)):
            key = normalize(name).casefold()
            if key in ranked:
                continue
            # Each fact's nearest name first, then each fact's second...: one fact with many names
            # (dates, places) does not crowd out the bridge another fact names.
            order = (len(sources[key]), nearness, rank, start)
            weight = round(fact.confidence / len(sources[key]), 4)
            ranked[key] = (
                order,
                Lead(
                    kind="bridge", text=name, weight=weight, source_id=fact.source_id, because=fact.statement
                ),
            )
    return [lead for _, lead in sorted(ranked.values(), key=lambda item: item[0])]


def leads_from(
    store: Store, extraction_ids: Sequence[str], questions: Sequence[str], known: Iterable[str] = ()
) -> list[Lead]:
    """Every lead of these extractions: links first (a source cited is the most direct lead), then
    the bridges the facts name and the sources that answered part of the questions, in turn (another
    source may say the rest about them: "the fight song of the University of Kansas"; each kind
    finds what the other misses, and a few searches should try both), then follow-up questions not
    already among `questions`."""
    links: list[Lead] = []
    answered: list[Lead] = []
    follow_ups: list[Lead] = []
    fact_ids: list[int] = []
    asked = {normalize(question).casefold() for question in questions}
    for handoff_id in extraction_ids:
        handoff = store.get_handoff(handoff_id)
        output = handoff.output_as(StoredExtraction)
        source = handoff.input_as(ExtractorInput)
        if handoff.status != "done" or output is None or source is None:
            continue
        fact_ids.extend(output.fact_ids)
        for link in sorted(output.linked_candidate_sources, key=lambda item: item.priority):
            links.append(
                Lead(
                    kind="link",
                    text=link.ref,
                    weight=1 / link.priority,
                    source_id=source.source_id,
                    because=link.context,
                )
            )
        for item in output.follow_up_questions:
            if normalize(item.question).casefold() not in asked:
                follow_ups.append(
                    Lead(
                        kind="follow_up",
                        text=item.question,
                        weight=item.confidence,
                        source_id=source.source_id,
                        because=item.rationale,
                    )
                )
    facts = sorted(store.get_facts(fact_ids), key=lambda fact: (-fact.confidence, fact.id))
    titles: dict[int, str] = {}
    for handoff_id in extraction_ids:
        if (source := store.get_handoff(handoff_id).input_as(ExtractorInput)) is not None:
            titles[source.source_id] = source.source_title
    for fact in facts:
        title = titles.get(fact.source_id, "")
        if fact.verified and title and terms(title):
            answered.append(
                Lead(
                    kind="bridge",
                    text=title,
                    weight=fact.confidence,
                    source_id=fact.source_id,
                    because=fact.statement,
                )
            )
    # A name that titles a source already read is a bridge all the same (the hop asks that source
    # again, runs/hops.py), unless the fact naming it comes from that source.
    read = {normalize(title).casefold() for title in titles.values()}
    bridges = bridge_entities(
        facts, questions, [title for title in known if normalize(title).casefold() not in read], titles
    )
    in_turn = [
        lead for pair in zip_longest(bridges, _distinct(answered)) for lead in pair if lead is not None
    ]
    unique: dict[tuple[str, str], Lead] = {}
    for lead in [*links, *in_turn, *follow_ups]:
        unique.setdefault((lead.kind, normalize(lead.text).casefold()), lead)
    return list(unique.values())


def _distinct(leads: Iterable[Lead]) -> list[Lead]:
    """The first lead of each text, in order."""
    first: dict[str, Lead] = {}
    for lead in leads:
        first.setdefault(normalize(lead.text).casefold(), lead)
    return list(first.values())


def open_terms(store: Store, extraction_ids: Sequence[str], questions: Sequence[str]) -> list[str]:
    """The words of the questions that no verified fact of these extractions says (in order, each
    once): what the first sources left open ("coastal area" when they told where the fortress is
    but named no coast)."""
    fact_ids: list[int] = []
    for handoff_id in extraction_ids:
        output = store.get_handoff(handoff_id).output_as(StoredExtraction)
        fact_ids.extend(output.fact_ids if output is not None else [])
    said = {term for fact in store.get_facts(fact_ids) if fact.verified for term in terms(fact.statement)}
    asked = dict.fromkeys(term for question in questions for term in terms(question))
    known = set(said_terms(asked, said))
    return [term for term in asked if term not in known]

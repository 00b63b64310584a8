"""The second hop: a leaf follows what its first sources found, then synthesizes over both.

After the first extractions, the words of the leaf's question that no verified fact says (what the
first sources left open, `open_terms`) are searched for first: the question's own search, whose
best results the leaf read, often lists the page that says them further down; the result that says
most of them is read (as a bridge's source, if it names one of the leads). Then the leaf's leads
(runs/leads.py) are followed in order until `HOP_SOURCES` new sources are chosen: a linked source is read as it is (the fetcher's allow-list
and the run's source budget hold as for any source); a bridge name is searched together with the
question it bears on, and the first result not read yet that mentions the name is taken; a
follow-up question is searched as asked. A source that a source read by an earlier run cites,
bearing on the leaf's questions (runs/prior.py), is followed as a link, after the leaf's own. Each new source is told the fact that led to it as
context, so the answer that needs both sources can be put together.

A bridge a source already read is about (its title names it: "Brown County" and the first pass's
"Brown County, Kansas") is not searched: that source is asked again, the bridge's question in
place of the leaf's, without counting against the source budget a second time. A source a bridge
led to is asked only what the bridge leaves open (with a leaf's task specs, their questions and
then that one, unless they only restate the leaf's): the leaf's own questions went to the sources
found for them.

A leaf about one compared item (its title a name its question uses) that has read the item's own
source follows only links: what it asks is there, and the names that source gives lead away from it.
A leaf given its own sources follows their links but does not search or ask again (its calls stay
those the plan's estimate counted). The choice is recorded (a
`second_hop` event) before the new sources are read, so a resumed run reads the same ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from research_mcp.answering.terms import said_terms, terms
from research_mcp.core.citations import cited_in
from research_mcp.core.contracts import PlanNode
from research_mcp.core.errors import NotFound
from research_mcp.core.feasibility import HOP_SOURCES
from research_mcp.core.ids import source_label
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.runs.context import RunContext
from research_mcp.runs.leads import leads_from, mentions, open_terms, still_open
from research_mcp.runs.reading import extract_sources, ref_key
from research_mcp.sources.library import Candidate
from research_mcp.sources.ranking import Page
from research_mcp.storage.events import HopChoice, Lead, Searched, SecondHop
from research_mcp.storage.models import KnownInsight

__all__ = ["HOP_SOURCES", "follow_leads"]

#: Leads tried (each costing a search) before the hop gives up looking.
MAX_LEADS = 6


async def follow_leads(
    rc: RunContext,
    node: PlanNode,
    key: str,
    questions: list[str],
    refs: list[str],
    extractions: list[str],
    insights: Sequence[KnownInsight] = (),
) -> list[str]:
    """The second hop's extractions (none when nothing leads anywhere new), in the order chosen.
    `insights`: what sources read by earlier runs left open, bearing on the leaf: the sources they cite
    (their "linked_source" insights) are followed after the links of the leaf's own sources."""
    chosen = _chosen_before(rc, key)
    if chosen is None:
        chosen = await _choose(rc, node, key, questions, refs, extractions, insights)
    found: dict[int, list[str]] = {}

    async def read(position: int, hop: HopChoice) -> None:
        # A source a bridge led to is asked what the bridge leaves open (the leaf's questions were put
        # to the sources found for them): its other sentences are not quoted as answers to them. A
        # leaf's task specs are asked as given, the bridge's question after them.
        # Task specs that only restate the leaf's questions (the no-model planner's) ask nothing more.
        restated = all(spec.questions == node.questions for spec in node.task_specs)
        bridge_only = bool(hop.question) and restated
        found[position] = await extract_sources(
            rc,
            node.model_copy(update={"task_specs": []}) if bridge_only else node,
            key,
            [hop.ref],
            questions=[hop.question] if bridge_only else questions,
            added_questions=[hop.question] if hop.question and not bridge_only else [],
            already_read=[hop.ref] if hop.again else [],
            contexts={hop.ref: hop.context},
        )

    async with anyio.create_task_group() as group:
        for position, hop in enumerate(chosen):
            group.start_soon(read, position, hop)
    return [handoff for position in sorted(found) for handoff in found[position]]


def _limit(node: PlanNode, first: int) -> int:
    """How many sources the hop may add: HOP_SOURCES, within the leaf's own source budget."""
    if node.budget is not None and node.budget.max_sources is not None:
        return max(0, min(HOP_SOURCES, node.budget.max_sources - first))
    return HOP_SOURCES


@dataclass
class _Choosing:
    """The hop's choice as it is made: what is read already, and what is chosen, why."""

    read: set[str]
    limit: int
    chosen: list[HopChoice] = field(default_factory=list)
    followed: list[Lead] = field(default_factory=list)
    asked_again: set[str] = field(default_factory=set)
    tried: int = 0  # leads that cost a search

    @property
    def done(self) -> bool:
        return len(self.chosen) >= self.limit or self.tried >= MAX_LEADS

    def take(self, hop: HopChoice, followed: Lead) -> None:
        self.chosen.append(hop)
        self.followed.append(followed)


async def _choose(
    rc: RunContext,
    node: PlanNode,
    key: str,
    questions: list[str],
    refs: list[str],
    extractions: list[str],
    insights: Sequence[KnownInsight],
) -> list[HopChoice]:
    store = rc.deps.store
    first = [
        asked
        for handoff_id in extractions
        if (asked := store.get_handoff(handoff_id).input_as(ExtractorInput)) is not None
    ]
    leads = _ranked_leads(rc, extractions, questions, first, insights)
    if (about := _subject_read(node, first)) is not None:
        # The leaf asks about one thing and has read that thing's own source: what the leaf asks is
        # there, and the names it gives lead away from it. A source it cites is still read.
        leads = [lead for lead in leads if lead.kind == "link"]
    choosing = _Choosing(read={ref_key(ref) for ref in refs}, limit=_limit(node, len(refs)))
    # What the first sources left open is searched for first: the question's own search often
    # found the page that says it, below the ones the leaf read (runs/leads.py `open_terms`). Not
    # when nothing was read, or a search of the leaf failed: that search is not made again.
    searched = first and not rc.failures.get(key) and not node.sources
    gap = open_terms(store, extractions, questions) if searched and about is None and choosing.limit else []
    if gap:
        await _follow_open(rc, key, questions[0], gap, leads, choosing)
    for at, lead in enumerate(leads):
        if choosing.done:
            if choosing.limit < HOP_SOURCES and len(choosing.chosen) >= choosing.limit:
                # The leaf's own max_sources, not HOP_SOURCES, stopped the hop: the leaf says so.
                left = [other for other in leads[at:] if other.kind == "link" or not node.sources]
                rc.leads_beyond_budget[key] = len(left)
            break
        if lead.kind != "link" and node.sources:
            continue  # a leaf given its sources reads their links, it does not search
        await _follow(rc, key, lead, questions, first, choosing)
    why = (
        ""
        if about is None
        else f" (no search: {source_label(about.source_id)} {about.source_title!r} is about it)"
    )
    store.add_event(
        rc.run_id,
        SecondHop(
            message=f"second hop of {node.title!r}: {len(choosing.chosen)} sources from {len(leads)} leads{why}",
            node_id=key,
            chosen=choosing.chosen,
            followed=choosing.followed,
            beyond_budget=rc.leads_beyond_budget.get(key, 0),
        ),
    )
    return choosing.chosen


def _ranked_leads(
    rc: RunContext,
    extractions: list[str],
    questions: list[str],
    first: list[ExtractorInput],
    insights: Sequence[KnownInsight],
) -> list[Lead]:
    """The leaf's leads in the order they are followed: the links its own sources give, then those
    sources read by earlier runs cite, then the rest (bridges, follow-ups)."""
    leads = leads_from(rc.deps.store, extractions, questions, known=[asked.source_title for asked in first])
    own_links = sum(1 for lead in leads if lead.kind == "link")
    cited = {lead.text for lead in leads if lead.kind == "link"}
    earlier = [
        Lead(
            kind="link",
            text=link.text,
            weight=0.5,
            source_id=link.source_id,
            because=f"read by an earlier run: {link.context}",
        )
        for link in insights
        if link.kind == "linked_source" and link.text not in cited
    ]
    texts: dict[int, str] = {}
    return [lead for lead in [*leads[:own_links], *earlier, *leads[own_links:]] if _given(rc, lead, texts)]


def _given(rc: RunContext, lead: Lead, texts: dict[int, str]) -> bool:
    """A link is followed only when the text of the source citing it gives it, whole: the
    extractor keeps no other (roles/extractor.py), and this holds for what a store written before
    that rule kept, whatever an extraction or an earlier run's insight says. `texts`: the citing
    sources' texts read so far, by id."""
    if lead.kind != "link":
        return True
    citing = lead.source_id
    if citing is None:
        return False  # a link is found in a source; one that names none is not followed
    if citing not in texts:
        try:
            texts[citing] = rc.deps.store.get_source(citing).text
        except NotFound:
            texts[citing] = ""
    return cited_in(texts[citing], lead.text)


async def _follow_open(
    rc: RunContext, key: str, question: str, gap: list[str], leads: list[Lead], choosing: _Choosing
) -> None:
    """Search for what the first sources left open; the result that says most of it is chosen, as
    a bridge's source when it names one of the leads."""
    choosing.tried += 1
    found = await _search_open(rc, key, question, gap, choosing.read)
    if found is None:
        return
    choosing.read.add(ref_key(found.ref))
    said = f"{found.title} {found.snippet}"
    bridge = next((lead for lead in leads if lead.kind == "bridge" and mentions(said, lead.text)), None)
    if bridge is not None:
        hop = HopChoice(ref=found.ref, context=_context(bridge), question=_hop_question(bridge, question))
    else:
        hop = HopChoice(
            ref=found.ref, context=f"Found by searching for what the first sources left open: {' '.join(gap)}"
        )
    choosing.take(hop, Lead(kind="open", text=" ".join(gap), ref=found.ref))


async def _follow(
    rc: RunContext,
    key: str,
    lead: Lead,
    questions: list[str],
    first: list[ExtractorInput],
    choosing: _Choosing,
) -> None:
    """Follow one lead: a bridge a source already read is about asks that source again; a link is
    read as it is; anything else is searched for, and a result not read yet is chosen."""
    if lead.kind == "bridge" and (again := _about(lead, first, choosing.asked_again)) is not None:
        choosing.asked_again.add(again)
        choosing.take(
            HopChoice(
                ref=again, context=_context(lead), question=_hop_question(lead, questions[0]), again=True
            ),
            lead.model_copy(update={"ref": again}),
        )
        return
    choosing.tried += lead.kind != "link"
    ref = lead.text if lead.kind == "link" else await _search(rc, key, lead, questions, choosing.read)
    if ref is None or ref_key(ref) in choosing.read:
        return
    choosing.read.add(ref_key(ref))
    choosing.take(
        HopChoice(ref=ref, context=_context(lead), question=_hop_question(lead, questions[0])),
        lead.model_copy(update={"ref": ref}),
    )


def _subject_read(node: PlanNode, first: list[ExtractorInput]) -> ExtractorInput | None:
    """The source read first that is about the one thing the leaf asks about, if any: a leaf whose
    title is a name its questions use, not one of them (a compared item's leaf, "Local H", asked
    "Are Local H and For Against both from the United States?"), is about that name; a source whose
    title names it ("Local H", "Freakonomics (film)") is that thing's own source. A leaf given its
    sources reads what they cite, whatever they are about."""
    if node.sources or not node.title.strip() or node.title in node.questions:
        return None
    if not any(mentions(question, node.title) for question in node.questions):
        return None
    return next((asked for asked in first if mentions(asked.source_title, node.title)), None)


def _about(lead: Lead, first: list[ExtractorInput], taken: set[str]) -> str | None:
    """A source the first pass read whose title names the bridge, or whose title (of two words or
    more) the bridge names ("David Weissman" in "David Diamond and David Weissman"; "Big Stone Gap
    (town)" is not in "Big Stone Gap (film)"); not the source that gave it, nor one already asked
    again: the bridge's question is put to it."""
    for asked in first:
        if asked.source_id == lead.source_id or asked.source_ref in taken:
            continue
        title = asked.source_title
        if mentions(title, lead.text) or (len(title.split()) > 1 and mentions(lead.text, title)):
            return asked.source_ref
    return None


async def _search(rc: RunContext, key: str, lead: Lead, questions: list[str], read: set[str]) -> str | None:
    """The first search result not read yet; for a bridge, the first that mentions its name."""
    query = lead.text if lead.kind == "follow_up" else still_open(lead, questions[0])
    failed: list[str] = []
    found = await rc.deps.sources.search(query[:300], limit=len(read) + 3, failures=failed)
    rc.deps.store.add_event(
        rc.run_id, Searched(message=f"{query[:300]!r}: {len(found)} candidates", node_id=key, query=query)
    )
    pages = _pages(rc, read)  # a page read in one format is read in every format
    for candidate in found:
        if ref_key(candidate.ref) in read or rc.deps.sources.page_of(candidate.ref) in pages:
            continue
        if lead.kind == "bridge" and not mentions(f"{candidate.title} {candidate.snippet}", lead.text):
            continue
        return candidate.ref
    return None


async def _search_open(
    rc: RunContext, key: str, question: str, gap: list[str], read: set[str]
) -> Candidate | None:
    """The first result of the question's search not read yet whose title and snippet say most of
    what the first sources left open."""
    failed: list[str] = []
    found = await rc.deps.sources.search(question[:300], limit=len(read) + 3, failures=failed)
    rc.deps.store.add_event(
        rc.run_id,
        Searched(message=f"{question[:300]!r}: {len(found)} candidates", node_id=key, query=question),
    )
    best: tuple[int, Candidate] | None = None
    pages = _pages(rc, read)  # a page read in one format is read in every format
    for candidate in found:
        if ref_key(candidate.ref) in read or rc.deps.sources.page_of(candidate.ref) in pages:
            continue
        said = set(terms(f"{candidate.title} {candidate.snippet}"))
        covered = len(said_terms(gap, said))
        if 2 * covered >= len(gap) and (best is None or covered > best[0]):
            best = (covered, candidate)
    return best[1] if best is not None else None


def _pages(rc: RunContext, read: set[str]) -> set[Page]:
    """The corpus pages of the sources read, whatever their format (looked up once a search)."""
    return {page for ref in read if (page := rc.deps.sources.page_of(ref)) is not None}


def _hop_question(lead: Lead, question: str) -> str:
    """What a bridge's source is asked besides the leaf's questions: the name, and what the question
    still leaves open about it ("Nixon: president served years")."""
    if lead.kind != "bridge":
        return ""
    return f"{lead.text}: {still_open(lead, question)[len(lead.text) :].strip()}"[:500]


def _context(lead: Lead) -> str:
    """What the extractor of the new source is told: which lead brought it there, and from where
    (every lead but an open gap's comes from a source)."""
    source = "" if lead.source_id is None else f" {source_label(lead.source_id)}"
    if lead.kind == "bridge":
        return f"Found by following {lead.text!r}, which source{source} names: {lead.because}"
    if lead.kind == "link":
        return f"Cited by source{source}: {lead.because}"
    return f"Found by searching for a question source{source} left open: {lead.text}"


def _chosen_before(rc: RunContext, key: str) -> list[HopChoice] | None:
    """The second hop this leaf chose in an earlier attempt of the run, if any."""
    for recorded in reversed(rc.deps.store.events_for_run(rc.run_id, SecondHop)):
        if recorded.node_id == key:
            rc.leads_beyond_budget[key] = recorded.beyond_budget
            return recorded.chosen
    return None

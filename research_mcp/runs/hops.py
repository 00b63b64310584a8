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
then that one): the leaf's own questions went to the sources found for them.

A leaf about one compared item (its title a name its question uses) that has read the item's own
source follows only links: what it asks is there, and the names that source gives lead away from it.
A leaf given its own sources follows their links but does not search or ask again (its calls stay
those the plan's estimate counted). The choice is recorded (a
`second_hop` event) before the new sources are read, so a resumed run reads the same ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import anyio

from research_mcp.contracts import PlanNode
from research_mcp.feasibility import HOP_SOURCES
from research_mcp.ids import source_label
from research_mcp.matching.terms import said_terms, terms
from research_mcp.role_inputs import ExtractorInput
from research_mcp.runs.context import RunContext
from research_mcp.runs.leads import Lead, leads_from, mentions, open_terms, still_open
from research_mcp.runs.reading import extract_sources, ref_key
from research_mcp.sources.library import Candidate
from research_mcp.storage.events import FollowedLead, HopChoice, Searched, SecondHop

__all__ = ["HOP_SOURCES", "follow_leads"]

#: Leads tried (each costing a search) before the hop gives up looking.
MAX_LEADS = 6


@dataclass(frozen=True)
class Hop:
    """A source the second hop reads: why (the context its extractor is told) and what it is asked
    besides the leaf's questions (for a bridge, the question with the name that led there)."""

    ref: str
    context: str
    question: str = ""
    # A source the first pass read, asked again with what a bridge leads to ask it.
    again: bool = False


async def follow_leads(
    rc: RunContext,
    node: PlanNode,
    key: str,
    questions: list[str],
    refs: list[str],
    extractions: list[str],
    known_links: Sequence[tuple[str, str, int]] = (),
) -> list[str]:
    """The second hop's extractions (none when nothing leads anywhere new), in the order chosen.
    `known_links`: sources that sources read by earlier runs cite (address, context, citing source),
    bearing on the leaf: followed after the links of the leaf's own sources."""
    chosen = _chosen_before(rc, key)
    if chosen is None:
        chosen = await _choose(rc, node, key, questions, refs, extractions, known_links)
    found: dict[int, list[str]] = {}

    async def read(position: int, hop: Hop) -> None:
        # A source a bridge led to is asked what the bridge leaves open (the leaf's questions were put
        # to the sources found for them): its other sentences are not quoted as answers to them. A
        # leaf's task specs are asked as given, the bridge's question after them.
        bridge_only = bool(hop.question) and not node.task_specs
        found[position] = await extract_sources(
            rc,
            node,
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


async def _choose(
    rc: RunContext,
    node: PlanNode,
    key: str,
    questions: list[str],
    refs: list[str],
    extractions: list[str],
    known_links: Sequence[tuple[str, str, int]],
) -> list[Hop]:
    store = rc.deps.store
    read = {ref_key(ref) for ref in refs}
    first = [
        asked
        for handoff_id in extractions
        if (asked := store.get_handoff(handoff_id).input_as(ExtractorInput)) is not None
    ]
    leads = leads_from(store, extractions, questions, known=[asked.source_title for asked in first])
    own_links = sum(1 for lead in leads if lead.kind == "link")
    cited = {lead.text for lead in leads if lead.kind == "link"}
    earlier = [
        Lead("link", ref, 0.5, source_id, f"read by an earlier run: {context}")
        for ref, context, source_id in known_links
        if ref not in cited
    ]
    leads = [*leads[:own_links], *earlier, *leads[own_links:]]
    if (about := _subject_read(node, first)) is not None:
        # The leaf asks about one thing and has read that thing's own source: what the leaf asks is
        # there, and the names it gives lead away from it. A source it cites is still read.
        leads = [lead for lead in leads if lead.kind == "link"]
    why = (
        ""
        if about is None
        else f" (no search: {source_label(about.source_id)} {about.source_title!r} is about it)"
    )
    asked_again: set[str] = set()
    limit = _limit(node, len(refs))
    chosen: list[Hop] = []
    followed: list[FollowedLead] = []
    tried = 0
    # What the first sources left open is searched for first: the question's own search often
    # found the page that says it, below the ones the leaf read (runs/leads.py `open_terms`). Not
    # when nothing was read, or a search of the leaf failed: that search is not made again.
    searched = first and not rc.failures.get(key) and not node.sources
    gap = open_terms(store, extractions, questions) if searched and about is None and limit else []
    if gap:
        tried += 1
        if (found := await _search_open(rc, key, questions[0], gap, read)) is not None:
            read.add(ref_key(found.ref))
            said = f"{found.title} {found.snippet}"
            # A result that names a bridge is read as that bridge's source would be.
            bridge = next(
                (lead for lead in leads if lead.kind == "bridge" and mentions(said, lead.text)), None
            )
            if bridge is not None:
                chosen.append(Hop(found.ref, _context(bridge), _hop_question(bridge, questions[0])))
            else:
                chosen.append(
                    Hop(
                        found.ref, f"Found by searching for what the first sources left open: {' '.join(gap)}"
                    )
                )
            followed.append(FollowedLead(kind="open", text=" ".join(gap), ref=found.ref))
    for lead in leads:
        if len(chosen) >= limit or tried >= MAX_LEADS:
            break
        if lead.kind != "link" and node.sources:
            continue  # a leaf given its sources reads their links, it does not search
        if lead.kind == "bridge" and (again := _about(lead, first, asked_again)) is not None:
            # A source already read is about the name: ask it what the name leads to ask.
            asked_again.add(again)
            chosen.append(Hop(again, _context(lead), _hop_question(lead, questions[0]), again=True))
            followed.append(FollowedLead(**asdict(lead), ref=again))
            continue
        tried += lead.kind != "link"
        ref = lead.text if lead.kind == "link" else await _search(rc, key, lead, questions, read)
        if ref is None or ref_key(ref) in read:
            continue
        read.add(ref_key(ref))
        question = _hop_question(lead, questions[0])
        chosen.append(Hop(ref, _context(lead), question))
        followed.append(FollowedLead(**asdict(lead), ref=ref))
    store.add_event(
        rc.run_id,
        SecondHop(
            message=f"second hop of {node.title!r}: {len(chosen)} sources from {len(leads)} leads{why}",
            node_id=key,
            chosen=[HopChoice(**asdict(hop)) for hop in chosen],
            followed=followed,
        ),
    )
    return chosen


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
    for candidate in found:
        if ref_key(candidate.ref) in read:
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
    for candidate in found:
        if ref_key(candidate.ref) in read:
            continue
        said = set(terms(f"{candidate.title} {candidate.snippet}"))
        covered = len(said_terms(gap, said))
        if 2 * covered >= len(gap) and (best is None or covered > best[0]):
            best = (covered, candidate)
    return best[1] if best is not None else None


def _hop_question(lead: Lead, question: str) -> str:
    """What a bridge's source is asked besides the leaf's questions: the name, and what the question
    still leaves open about it ("Nixon: president served years")."""
    if lead.kind != "bridge":
        return ""
    return f"{lead.text}: {still_open(lead, question)[len(lead.text) :].strip()}"[:500]


def _context(lead: Lead) -> str:
    """What the extractor of the new source is told: which lead brought it there, and from where."""
    if lead.kind == "bridge":
        return f"Found by following {lead.text!r}, which source {source_label(lead.source_id)} names: {lead.because}"
    if lead.kind == "link":
        return f"Cited by source {source_label(lead.source_id)}: {lead.because}"
    return f"Found by searching for a question source {source_label(lead.source_id)} left open: {lead.text}"


def _chosen_before(rc: RunContext, key: str) -> list[Hop] | None:
    """The second hop this leaf chose in an earlier attempt of the run, if any."""
    for recorded in reversed(rc.deps.store.events_for_run(rc.run_id, SecondHop)):
        if recorded.node_id == key:
            return [Hop(**choice.model_dump()) for choice in recorded.chosen]
    return None

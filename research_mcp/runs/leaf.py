"""Leaf work: choose a leaf's sources, read them (runs/reading.py), take the second hop
(runs/hops.py), then synthesize over both, given prior findings and known insights (runs/prior.py).

The sources chosen are recorded (`SourcesChosen`), so a resumed leaf reads the same ones instead of
searching anew, unless a search failed then or found nothing. An extraction finished before an
interruption is read back, never run again, and the synthesizer gets every extraction in the order
of the sources, as an uninterrupted run would have given them.
"""

from __future__ import annotations

import anyio

from research_mcp.core.contracts import PlanNode
from research_mcp.core.gaps import Gap
from research_mcp.core.ids import source_label
from research_mcp.roles.acceptance import numbered_criteria
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, leaf_questions
from research_mcp.runs.hops import follow_leads
from research_mcp.runs.prior import compared_items, known_insights, known_questions, prior_findings
from research_mcp.runs.reading import choose_sources, extract_sources, ref_key, stored_ref, taking_turn
from research_mcp.sources.library import classify_ref
from research_mcp.storage.events import NoSources, SourcesChosen, SpecBudgetSpent

__all__ = ["rubric", "run_leaf"]

#: Known facts a rubric names (the best first), and the characters each is given.
RUBRIC_FACTS = 5
RUBRIC_FACT_CHARS = 240


def _chosen_before(rc: RunContext, key: str) -> SourcesChosen | None:
    """The sources this leaf chose in an earlier attempt of the run, the searches that failed then,
    and how many its budget left unread."""
    for recorded in reversed(rc.deps.store.events_for_run(rc.run_id, SourcesChosen)):
        if recorded.node_id == key:
            return recorded
    return None


async def leaf_sources(rc: RunContext, node: PlanNode, key: str, discovered: list[str]) -> list[str]:
    """The leaf's sources: those it chose before an interruption, else a new choice, recorded."""
    chosen = _chosen_before(rc, key)
    # A choice whose searches failed, or that found nothing, is made again (a retry is meant to).
    if chosen is not None and chosen.refs and not chosen.failures:
        for ref in chosen.refs:
            rc.taken_by.setdefault(ref_key(ref), key)
        rc.beyond_budget[key] = chosen.beyond_budget
        await taking_turn(rc, key, done=True)
        return chosen.refs
    refs = await choose_sources(rc, node, discovered, skip=set())
    rc.deps.store.add_event(
        rc.run_id,
        SourcesChosen(
            message=f"{len(refs)} sources chosen for {node.title!r}",
            node_id=key,
            refs=refs,
            failures=list(rc.failures.get(key, [])),
            beyond_budget=rc.beyond_budget.get(key, 0),
        ),
    )
    return refs


def budget_note(rc: RunContext, node: PlanNode, key: str) -> list[str]:
    """What the leaf says when its own `max_sources` stopped it: how many sources it found were not
    read, and how many leads its second hop did not follow."""
    unread, unfollowed = rc.beyond_budget.get(key, 0), rc.leads_beyond_budget.get(key, 0)
    if not (unread or unfollowed) or node.budget is None or node.budget.max_sources is None:
        return []
    cap = node.budget.max_sources
    left = [
        *([f"{unread} more found {'were' if unread != 1 else 'was'} not read"] if unread else []),
        *([f"{unfollowed} lead{'s' * (unfollowed != 1)} not followed"] if unfollowed else []),
    ]
    return [f"Stopped at its budget of {cap} source{'s' * (cap != 1)} (max_sources): {'; '.join(left)}."]


async def run_leaf(rc: RunContext, node: PlanNode, key: str, discovered: list[str]) -> str:
    questions = leaf_questions(node)
    refs = await leaf_sources(rc, node, key, discovered)
    if not refs:
        rc.deps.store.add_event(
            rc.run_id, NoSources(message=f"no sources found for {node.title!r}", node_id=key)
        )
    prior = await prior_findings(rc, node, key, questions)
    # What sources read by earlier runs left open, bearing on the leaf: asked of its sources too.
    insights = await known_insights(rc, node, key, questions, refs)
    contexts, known = rubric(rc, node, prior, refs)
    extractions = await extract_sources(
        rc,
        node,
        key,
        refs,
        questions=questions,
        added_questions=known_questions(insights),
        contexts=contexts,
        known=known,
    )
    extractions += await follow_leads(rc, node, key, questions, refs, extractions, insights=insights)
    result = await synthesize(
        rc.deps,
        title=node.title,
        questions=questions,
        input_handoffs=extractions,
        run_id=rc.run_id,
        node_id=key,
        prior_facts=prior,
        failures=rc.failures.get(key, []),
        task_specs=node.task_specs,
        notes=[
            *budget_note(rc, node, key),
            *(
                e.message
                for e in rc.deps.store.events_for_run(rc.run_id, SpecBudgetSpent)
                if e.node_id == key
            ),
            *await _never_mentioned(rc, questions, refs),
        ],
        known=insights,
        items=compared_items(rc, node),
    )
    return result.handoff_id


async def _never_mentioned(rc: RunContext, questions: list[str], refs: list[str]) -> list[Gap]:
    """A note for each question asking about words no document of the corpus holds, where the corpus
    is all the leaf reads ("umask" of "What is the default umask for new users?" over man pages
    that never say it): the answer is not in the documents, whatever shares the question's other
    words. With web search configured, or sources given that are no corpus documents, the answer
    may be elsewhere, and nothing is said."""
    corpus = rc.deps.sources.corpus
    if corpus is None or rc.deps.sources.web_configured:
        return []
    if not all(classify_ref(ref) in ("corpus", "path") for ref in refs):
        return []
    notes: list[Gap] = []
    for question in questions:
        words = await anyio.to_thread.run_sync(corpus.unmentioned, question)
        if words:
            notes.append(Gap.never_mentioned(words, question))
    return notes


def rubric(
    rc: RunContext, node: PlanNode, prior: list[int], refs: list[str]
) -> tuple[dict[str, str], list[str]]:
    """What each source's extractor is told besides its questions: what the leaf's findings must
    meet (its task specs' acceptance criteria, and a format code cannot give), by source, and what earlier research
    found in other sources (prior findings from the knowledge base, to add to or contradict)."""
    facts = [fact for fact in rc.deps.store.get_facts(prior) if fact.verified]
    refs_of = rc.deps.store.source_refs({fact.source_id for fact in facts})
    own = {stored_ref(ref) for ref in refs}
    known = [
        fact.statement[:RUBRIC_FACT_CHARS]
        for fact in facts
        if stored_ref(refs_of.get(fact.source_id, "")) not in own and source_label(fact.source_id) not in own
    ][:RUBRIC_FACTS]
    # A format code gives the report itself (a table, a list: roles/acceptance.py) is no concern of
    # the extractors; one it cannot is among the criteria, labelled "expected format: ...".
    criteria = [criterion.label for criterion in numbered_criteria(node.task_specs)]
    if not criteria:
        return {}, known
    must = "The findings must meet:\n" + "\n".join(f"- {line}" for line in dict.fromkeys(criteria))
    return {ref: must for ref in refs}, known

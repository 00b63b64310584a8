"""Leaf work: choose a leaf's sources, read them (runs/reading.py), follow what they found to new
sources (the second hop, runs/hops.py), then synthesize over both.

The sources a leaf chose are recorded (a `sources_chosen` event, with the searches' failures), so a
leaf resumed after an interrupt or a crash reads the same sources again instead of searching anew
(unless a search failed then, or found nothing: that choice is made again); so is its second hop.
An extraction finished before the interruption is read back, never run again, one cancelled is run
again, and the synthesizer gets every one of them, in the order of the sources, as an uninterrupted
run would have given them.
"""

from __future__ import annotations

from research_mcp.contracts import PlanNode
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, leaf_questions
from research_mcp.runs.hops import follow_leads
from research_mcp.runs.prior import prior_findings
from research_mcp.runs.reading import choose_sources, extract_sources, ref_key

__all__ = ["run_leaf"]


def _chosen_before(rc: RunContext, key: str) -> dict[str, list[str]] | None:
    """The sources this leaf chose in an earlier attempt of the run, and the searches that failed then."""
    for event in reversed(rc.deps.store.events_for_run(rc.run_id, "sources_chosen")):
        if event.node_id == key and event.data:
            return {"refs": list(event.data["refs"]), "failures": list(event.data["failures"])}
    return None


async def leaf_sources(rc: RunContext, node: PlanNode, key: str, discovered: list[str]) -> list[str]:
    """The leaf's sources: those it chose before an interruption, else a new choice, recorded."""
    chosen = _chosen_before(rc, key)
    # A choice whose searches failed, or that found nothing, is made again (a retry is meant to).
    if chosen is not None and chosen["refs"] and not chosen["failures"]:
        for ref in chosen["refs"]:
            rc.taken_by.setdefault(ref_key(ref), key)
        return chosen["refs"]
    refs = await choose_sources(rc, node, discovered, skip=set())
    rc.deps.store.add_event(
        rc.run_id,
        "sources_chosen",
        f"{len(refs)} sources chosen for {node.title!r}",
        node_id=key,
        data={"refs": refs, "failures": list(rc.failures.get(key, []))},
    )
    return refs


async def run_leaf(rc: RunContext, node: PlanNode, key: str, discovered: list[str]) -> str:
    questions = leaf_questions(node)
    refs = await leaf_sources(rc, node, key, discovered)
    if not refs:
        rc.deps.store.add_event(rc.run_id, "no_sources", f"no sources found for {node.title!r}", node_id=key)
    prior = await prior_findings(rc, node, key, questions)
    extractions = await extract_sources(rc, node, key, refs, questions=questions)
    extractions += await follow_leads(rc, node, key, questions, refs, extractions)
    result = await synthesize(
        rc.deps,
        title=node.title,
        questions=questions,
        input_handoffs=extractions,
        run_id=rc.run_id,
        node_id=key,
        prior_facts=prior,
        failures=rc.failures.get(key, []),
    )
    return result.handoff_id

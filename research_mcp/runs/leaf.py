"""Leaf work: choose a leaf's sources, fan out one extractor per (source, task spec), synthesize.

A source that fails is named in the run context's failures and skipped, so its siblings finish.
The sources a leaf chose are recorded (a `sources_chosen` event, with the searches' failures), so a
leaf resumed after an interrupt or a crash reads the same sources again instead of searching anew
(unless a search failed then, or found nothing: that choice is made again):
an extraction finished before the interruption is read back, never run again, one cancelled is run
again, and the synthesizer gets every one of them, in the order of the sources, as an uninterrupted
run would have given them.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

import anyio

from research_mcp.contracts import ExtractorInput, ExtractorTaskSpec, PlanNode, Source
from research_mcp.errors import ModelError, NotConfigured, SourceError
from research_mcp.roles.extractor import asked_questions, extract
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, leaf_questions, node_key
from research_mcp.runs.prior import prior_findings
from research_mcp.sources.library import canonical_url, classify_ref

__all__ = ["choose_sources", "extract_sources", "run_leaf"]

logger = logging.getLogger(__name__)

SOURCES_PER_LEAF = 3


def ref_key(ref: str) -> str:
    """How a reference is compared: web addresses in canonical form."""
    return canonical_url(ref) if classify_ref(ref) == "web" else ref.strip()


async def choose_sources(
    rc: RunContext, node: PlanNode, discovered: list[str], *, skip: set[str]
) -> list[str]:
    """The leaf's own sources, else those its discovery siblings found, else the best of a search."""
    skip = {ref_key(ref) for ref in skip}
    if node.sources:
        return [ref for ref in node.sources if ref_key(ref) not in skip]
    limit = SOURCES_PER_LEAF
    if node.budget is not None and node.budget.max_sources is not None:
        limit = min(limit, node.budget.max_sources)
    if discovered:
        return [ref for ref in discovered if ref_key(ref) not in skip][:limit]
    queries = list(node.search_queries) or leaf_questions(node)[:2]
    refs: list[str] = []
    key = node_key(rc.plan_id, node.id)
    for query in queries:
        failed: list[str] = []
        found = await rc.deps.sources.search(query, limit=limit + len(skip), failures=failed)
        rc.deps.store.add_event(
            rc.run_id, "search", f"{query!r}: {len(found)} candidates", data={"query": query}
        )
        for failure in failed:
            rc.failures.setdefault(key, []).append(failure)
            rc.deps.store.add_event(rc.run_id, "search_failed", failure, node_id=key)
        for candidate in found:
            if ref_key(candidate.ref) not in skip and candidate.ref not in refs:
                refs.append(candidate.ref)
    return refs[:limit]


async def extract_sources(
    rc: RunContext,
    node: PlanNode,
    key: str,
    refs: list[str],
    *,
    questions: list[str],
    iteration: int = 0,
    added_questions: Sequence[str] = (),
    already_read: Collection[str] = (),
) -> list[str]:
    """One extractor per (source, task spec), in parallel; a source that fails is logged and skipped.
    `added_questions` (an iteration's) follow each task spec's own questions. A source already asked
    the same questions is not asked again: its extraction is reused. A source in `already_read` is
    not counted against the run's source budget again."""
    specs: list[ExtractorTaskSpec | None] = list(node.task_specs) or [None]
    done = _done_extractions(rc, key)
    handoffs: dict[tuple[int, int], str] = {}

    async def one(slot: tuple[int, int], ref: str, spec: ExtractorTaskSpec | None) -> None:
        if ref not in already_read and not rc.deps.budget.take_source():
            rc.failures.setdefault(key, []).append(
                f"Source not read: {ref}: the run's budget of {rc.deps.budget.max_sources} sources was reached"
            )
            return
        try:
            source: Source = await rc.deps.sources.read(ref)
            asked = tuple(asked_questions(spec, questions, added_questions))
            reuse = done.get((source.id, asked))
            if reuse is not None:
                handoffs[slot] = reuse
                return
            result = await extract(
                rc.deps,
                source,
                questions=questions,
                task_spec=spec,
                added_questions=added_questions,
                run_id=rc.run_id,
                node_id=key,
                iteration=iteration,
            )
            handoffs[slot] = result.handoff_id
        except (SourceError, ModelError, NotConfigured) as error:
            rc.failures.setdefault(key, []).append(f"Source not read: {ref}: {error}")
            rc.deps.store.add_event(rc.run_id, "source_failed", f"{ref}: {error}", node_id=key)

    async with anyio.create_task_group() as group:
        for position, ref in enumerate(refs):
            for index, spec in enumerate(specs):
                group.start_soon(one, (position, index), ref, spec)
    # In the order of the sources, not of completion: the same sources give the synthesizer the same inputs.
    return [handoffs[slot] for slot in sorted(handoffs)]


def _done_extractions(rc: RunContext, key: str) -> dict[tuple[int, tuple[str, ...]], str]:
    """Extractions this node finished before a restart, by (source, questions)."""
    found = {}
    for handoff in rc.deps.store.handoffs_for_run(rc.run_id, role="extractor", node_id=key):
        asked = handoff.input_as(ExtractorInput)
        if handoff.status == "done" and asked is not None:
            found[(asked.source_id, tuple(asked.questions))] = handoff.id
    return found


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

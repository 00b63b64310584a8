"""Reading a leaf's sources: choosing them (its own, its discovery siblings', or a search's best)
and one extractor per (source, task spec), in parallel.

A source that fails is named in the run context's failures and skipped, so its siblings finish. A
source already asked the same questions by this node (before an interruption) is not asked again:
its extraction is read back.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from research_mcp.core.contracts import ExtractorTaskSpec, PlanNode, Source
from research_mcp.core.errors import ModelError, NodeBudgetExhausted, NotConfigured, SourceError
from research_mcp.core.feasibility import SOURCES_PER_LEAF, leaf_reading
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.roles.extractor import SpecSpending, asked_questions, extract
from research_mcp.roles.node_budgets import node_budget_spent
from research_mcp.runs.context import RunContext, leaf_questions, node_key
from research_mcp.sources.library import classify_ref, ref_key
from research_mcp.sources.ranking import one_per_page
from research_mcp.storage.events import (
    NodeBudgetSpent,
    Searched,
    SearchFailed,
    SourceFailed,
    SourcesChosen,
    SpecBudgetSpent,
)

__all__ = [
    "SOURCES_PER_LEAF",
    "choose_sources",
    "extract_sources",
    "ref_key",
    "stored_ref",
    "take",
    "taking_turn",
]

logger = logging.getLogger(__name__)


async def choose_sources(
    rc: RunContext, node: PlanNode, discovered: list[str], *, skip: set[str]
) -> list[str]:
    """The leaf's own sources, else those its discovery siblings found, else the best of a search.

    Sibling leaves searching the same pool get different candidates: a source another node of the
    run took is handed to this one only when nothing else is left (it goes last, not first)."""
    read = list(skip)
    skip = {ref_key(ref) for ref in skip}
    key = node_key(rc.plan_id, node.id)
    limit = leaf_reading(node)[0]  # the leaf's sources, or SOURCES_PER_LEAF, within the node's budget
    if node.sources:
        await taking_turn(rc, key, done=True)
        return _within_budget(rc, node, key, [ref for ref in node.sources if ref_key(ref) not in skip], limit)
    if discovered:
        await taking_turn(rc, key)
        candidates = _new_pages(rc, [ref for ref in discovered if ref_key(ref) not in skip], read)
        return _within_budget(rc, node, key, candidates, limit, take(rc, key, candidates, limit, turn=True))
    queries = list(node.search_queries) or leaf_questions(node)[:2]
    refs: list[str] = []
    for query in queries:
        failed: list[str] = []
        # Twice the sources wanted: room for those a sibling took to go last.
        found = await rc.deps.sources.search(query, limit=2 * limit + len(skip), failures=failed)
        rc.deps.store.add_event(
            rc.run_id, Searched(message=f"{query!r}: {len(found)} candidates", query=query)
        )
        for failure in failed:
            rc.failures.setdefault(key, []).append(failure)
            rc.deps.store.add_event(rc.run_id, SearchFailed(message=failure, node_id=key))
        for candidate in found:
            if ref_key(candidate.ref) not in skip and candidate.ref not in refs:
                refs.append(candidate.ref)
    refs = _new_pages(rc, refs, read)
    await taking_turn(rc, key)
    return _within_budget(rc, node, key, refs, limit, take(rc, key, refs, limit, turn=True))


def _new_pages(rc: RunContext, refs: list[str], read: Collection[str]) -> list[str]:
    """`refs` without the pages read already in another format, each page once (its first ref):
    ``git-reset.html`` after ``git-reset.txt`` is the same page again, and reading it would take the
    place of a source that could say something new."""
    page_of = rc.deps.sources.page_of
    return one_per_page(refs, page_of, seen=[page_of(ref) for ref in read])


def _within_budget(
    rc: RunContext,
    node: PlanNode,
    key: str,
    candidates: list[str],
    limit: int,
    chosen: list[str] | None = None,
) -> list[str]:
    """The sources chosen (the first `limit` candidates unless given), counting in `rc.beyond_budget`
    the candidates the node's own `max_sources` left unread: the leaf says so (runs/leaf.py)."""
    chosen = candidates[:limit] if chosen is None else chosen
    cap = node.budget.max_sources if node.budget is not None else None
    if cap is not None and len(chosen) >= cap and len(candidates) > len(chosen):
        rc.beyond_budget[key] = rc.beyond_budget.get(key, 0) + len(candidates) - len(chosen)
    return chosen


async def taking_turn(rc: RunContext, key: str, *, done: bool = False) -> None:
    """Wait until the leaf's earlier siblings have taken their sources (`done`: this leaf takes none,
    its turn passes at once)."""
    earlier, mine = rc.take_turns.get(key, ([], None))
    if done and mine is not None:
        mine.set()
    for event in earlier:
        await event.wait()


def take(rc: RunContext, key: str, refs: list[str], limit: int, *, turn: bool = False) -> list[str]:
    """The first `limit` of `refs`, those no other node took first before those one did; taken
    (`turn`: the leaf's turn to take passes to its next sibling). What earlier attempts of the run
    took is read from its events first, so a resumed run hands out sources as an uninterrupted one did."""
    if not rc.taken_by:
        for recorded in rc.deps.store.events_for_run(rc.run_id, SourcesChosen):
            for ref in recorded.refs:
                rc.taken_by.setdefault(ref_key(ref), recorded.node_id or "")
    others = [ref for ref in refs if rc.taken_by.get(ref_key(ref), key) != key]
    chosen = [ref for ref in refs if ref not in others][:limit]
    chosen += others[: limit - len(chosen)]
    for ref in chosen:
        rc.taken_by.setdefault(ref_key(ref), key)
    if turn and (mine := rc.take_turns.get(key, ([], None))[1]) is not None:
        mine.set()
    return chosen


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
    contexts: Mapping[str, str] | None = None,
    known: Sequence[str] = (),
) -> list[str]:
    """One extractor per (source, task spec), in parallel; a source that fails is logged and skipped.
    `added_questions` (an iteration's) follow each task spec's own questions. A source already asked
    the same questions is not asked again: its extraction is reused. A source in `already_read` is
    not counted against the run's source budget again. `contexts` gives a source what the extractor
    is told about why it is read (the lead that brought a second hop to it); `known`, what earlier
    research established elsewhere (roles/extractor.py)."""
    specs: list[ExtractorTaskSpec | None] = list(node.task_specs) or [None]
    # A task spec's own budget: the sources it may be asked of, chosen before the parallel fan-out.
    spending = {
        index: SpecSpending(rc.deps, rc.run_id, key, spec)
        for index, spec in enumerate(specs)
        if spec is not None and spec.budget is not None
    }
    fan_out = _FanOut(
        rc,
        key,
        questions=questions,
        iteration=iteration,
        added_questions=added_questions,
        already_read=already_read,
        contexts=contexts or {},
        known=known,
        done=_done_extractions(rc, key),
        spending=spending,
        allowed={index: spent.allowed(refs) for index, spent in spending.items()},
        # A spec with a token or cost budget is asked of one source at a time, its spending checked before each.
        locks={index: anyio.Lock() for index, spent in spending.items() if spent.metered},
    )
    # Task specs by priority, 1 first: a wave of higher priority finishes before the next starts, so
    # a node budget running out leaves the lower priorities unasked.
    for wave in sorted({_priority(spec) for spec in specs}):
        async with anyio.create_task_group() as group:
            for position, ref in enumerate(refs):
                for index, spec in enumerate(specs):
                    if _priority(spec) == wave:
                        group.start_soon(fan_out.one, (position, index), ref, spec)
    # In the order of the sources, not of completion: the same sources give the synthesizer the same inputs.
    return [fan_out.handoffs[slot] for slot in sorted(fan_out.handoffs)]


@dataclass
class _FanOut:
    """What every (source, task spec) read of one node's fan-out shares, and the handoffs it made,
    by slot: (the source's position, the task spec's index)."""

    rc: RunContext
    key: str
    questions: list[str]
    iteration: int
    added_questions: Sequence[str]
    already_read: Collection[str]
    contexts: Mapping[str, str]
    known: Sequence[str]
    #: Extractions this node finished before a restart, by (source, questions).
    done: dict[tuple[int, tuple[str, ...]], str]
    spending: dict[int, SpecSpending]
    allowed: dict[int, set[str]]
    locks: dict[int, anyio.Lock]
    handoffs: dict[tuple[int, int], str] = field(default_factory=dict)

    async def one(self, slot: tuple[int, int], ref: str, spec: ExtractorTaskSpec | None) -> None:
        """One source asked one task spec, unless the spec's budget leaves it out."""
        spent = self.spending.get(slot[1])
        async with self.locks.get(slot[1]) or contextlib.nullcontext():
            if spent is not None and (reason := spent.refused(ref, self.allowed[slot[1]], self.already_read)):
                # Left out on purpose, not failed: named in the leaf's gaps, not retried.
                note = f"Task spec {slot[1] + 1} not asked of {ref}: {reason}"
                self.rc.deps.store.add_event(self.rc.run_id, SpecBudgetSpent(message=note, node_id=self.key))
                return
            await self.read(slot, ref, spec, spent)

    async def read(
        self, slot: tuple[int, int], ref: str, spec: ExtractorTaskSpec | None, spent: SpecSpending | None
    ) -> None:
        """The source read (within the node's and the run's budgets) and its extraction made or
        reused; a source that fails is named in the node's failures."""
        rc, key = self.rc, self.key
        if (spent_node := node_budget_spent()) is not None:
            _node_out_of_budget(rc, key, ref, spent_node)
            return
        if ref not in self.already_read and not rc.deps.budget.take_source():
            rc.failures.setdefault(key, []).append(
                f"Source not read: {ref}: the run's budget of {rc.deps.budget.max_sources} sources was reached"
            )
            return
        try:
            source: Source = await rc.deps.sources.read(ref)
            reuse = self.done.get(
                (source.id, tuple(asked_questions(spec, self.questions, self.added_questions)))
            )
            if reuse is not None:
                self.handoffs[slot] = reuse
                return
            await self.extract(slot, ref, source, spec, spent)
        except NodeBudgetExhausted as error:
            _node_out_of_budget(rc, key, ref, error.what)
        except (SourceError, ModelError, NotConfigured) as error:
            rc.failures.setdefault(key, []).append(f"Source not read: {ref}: {error}")
            logger.warning("run %s: source not read: %s: %s", rc.run_id, ref, error)
            rc.deps.store.add_event(rc.run_id, SourceFailed(message=f"{ref}: {error}", node_id=key))

    async def extract(
        self,
        slot: tuple[int, int],
        ref: str,
        source: Source,
        spec: ExtractorTaskSpec | None,
        spent: SpecSpending | None,
    ) -> None:
        """The extractor asked of a source read, within the task spec's time limit; its spending
        charged to the spec's budget."""
        rc = self.rc
        seconds = spent.spec.budget.max_seconds if spent is not None and spent.spec.budget else None
        with anyio.move_on_after(seconds) as limit:
            result = await extract(
                rc.deps,
                source,
                questions=self.questions,
                task_spec=spec,
                added_questions=self.added_questions,
                context=self.contexts.get(ref, ""),
                known=self.known,
                run_id=rc.run_id,
                node_id=self.key,
                iteration=self.iteration,
            )
            self.handoffs[slot] = result.handoff_id
            if spent is not None:
                spent.add(result.usage.tokens_in + result.usage.tokens_out, result.usage.cost_usd)
        if limit.cancelled_caught:
            note = f"Task spec {slot[1] + 1} not answered from {ref}: its {seconds:g} s time limit reached"
            rc.deps.store.add_event(rc.run_id, SpecBudgetSpent(message=note, node_id=self.key))


DEFAULT_PRIORITY = ExtractorTaskSpec.model_fields["priority"].default


def _priority(spec: ExtractorTaskSpec | None) -> int:
    return spec.priority if spec is not None else DEFAULT_PRIORITY


def _node_out_of_budget(rc: RunContext, key: str, ref: str, reason: str) -> None:
    """A source left unread because a node's own budget is spent: named in the leaf's failures (so
    the node ends partial, saying why) and logged as a `node_budget` event."""
    rc.failures.setdefault(key, []).append(f"Source not read: {ref}: budget exhausted: {reason}")
    rc.deps.store.add_event(rc.run_id, NodeBudgetSpent(message=f"{ref} not read: {reason}", node_id=key))


def _done_extractions(rc: RunContext, key: str) -> dict[tuple[int, tuple[str, ...]], str]:
    """Extractions this node finished before a restart, by (source, questions)."""
    found = {}
    for handoff in rc.deps.store.handoffs_for_run(rc.run_id, role="extractor", node_id=key):
        asked = handoff.input_as(ExtractorInput)
        if handoff.status == "done" and asked is not None:
            found[(asked.source_id, tuple(asked.questions))] = handoff.id
    return found


def stored_ref(ref: str) -> str:
    """The address a reference is stored under, as sources/library.py stores it: a text given inline
    under its hash, a web address in canonical form, the others as given."""
    kind = classify_ref(ref)
    if kind == "text":
        return f"text:{hashlib.sha256(ref.strip().encode()).hexdigest()[:16]}"
    return ref_key(ref)

"""A leaf's acceptance criteria judged again after a phase iteration grew its extractions.

The leaf is synthesized again over all its extractions, prior findings and known insights, and its
criteria are judged on that synthesis as on the first (roles/acceptance.py). Judging them on the
phase node's synthesis instead would count the siblings' sources toward a leaf's "at least 2
sources". The phase node then reads the leaf's new synthesis in place of the old one. An
`AcceptanceRejudged` event records the verdicts before and after; a criterion still unmet is asked
in the next iteration, as a missing theme is.
"""

from __future__ import annotations

from collections.abc import Sequence

from research_mcp.core.contracts import PlanNode, SynthesisOutput
from research_mcp.core.errors import ModelError
from research_mcp.core.role_inputs import SynthesisInput
from research_mcp.roles.acceptance import numbered_criteria
from research_mcp.roles.base import RoleResult
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, leaf_questions
from research_mcp.runs.prior import recorded_insights
from research_mcp.storage.events import AcceptanceRejudged, SpecBudgetSpent
from research_mcp.storage.outputs import AcceptanceCheck, StoredSynthesis

__all__ = ["MAX_CRITERIA_QUESTIONS", "criteria_questions", "judged_leaves", "rejudge", "unmet_acceptance"]

#: Unmet acceptance criteria of one leaf asked in one iteration.
MAX_CRITERIA_QUESTIONS = 2


def judged_leaves(
    rc: RunContext, inputs: Sequence[str], leaves: Sequence[PlanNode], keys: Sequence[str]
) -> dict[str, str]:
    """The synthesis of each leaf with acceptance criteria among a phase node's inputs, by leaf key."""
    wanted = {key for leaf, key in zip(leaves, keys, strict=True) if numbered_criteria(leaf.task_specs)}
    found = {}
    for handoff_id in inputs:
        handoff = rc.deps.store.get_handoff(handoff_id)
        if handoff.role == "synthesizer" and handoff.node_id in wanted:
            found[handoff.node_id] = handoff_id
    return found


def _checks(rc: RunContext, handoff_id: str) -> list[AcceptanceCheck]:
    output = rc.deps.store.get_handoff(handoff_id).output_as(StoredSynthesis)
    return list(output.acceptance) if output is not None else []


def criteria_questions(rc: RunContext, leaf: PlanNode, handoff_id: str | None) -> list[str]:
    """The leaf's unmet acceptance criteria as what an iteration asks: the leaf's question, and the
    criterion its answer must meet (a search for it finds what could meet it), at most
    MAX_CRITERIA_QUESTIONS."""
    if handoff_id is None:
        return []
    unmet = [check.criterion for check in _checks(rc, handoff_id) if check.met is False]
    question = leaf_questions(leaf)[0]
    return [f"{question} (to meet: {criterion})"[:500] for criterion in unmet[:MAX_CRITERIA_QUESTIONS]]


def unmet_acceptance(output: StoredSynthesis) -> int:
    """How many acceptance criteria a synthesis (or those below it) left unmet."""
    return sum(1 for gap in output.evidence_gaps if gap.kind == "criterion_unmet")


async def rejudge(
    rc: RunContext, leaf: PlanNode, leaf_key: str, before_id: str, added: Sequence[str], iteration: int
) -> str | None:
    """The leaf synthesized again with the extractions an iteration `added`, its criteria judged
    again and the verdicts recorded; returns the new synthesis handoff, or None when that synthesis
    failed (named in the leaf's failures: the phase node reads the new extractions as they are)."""
    store = rc.deps.store
    before = store.get_handoff(before_id)
    asked, output = before.input_as(SynthesisInput), before.output_as(StoredSynthesis)
    if asked is None or output is None:
        raise ValueError(f"handoff {before_id} is no finished synthesis")
    try:
        result = await _synthesize_again(rc, leaf, leaf_key, asked, output, added, iteration)
    except ModelError as error:
        note = f"The acceptance criteria of {leaf.title!r} were not judged again in iteration {iteration}: {error}"
        rc.failures.setdefault(leaf_key, []).append(note)
        return None
    after = _checks(rc, result.handoff_id)
    met = sum(1 for check in after if check.met)
    store.add_event(
        rc.run_id,
        AcceptanceRejudged(
            message=f"{leaf.title!r}: acceptance criteria judged again after iteration {iteration}: "
            f"{met} of {len(after)} met (before: {sum(1 for check in output.acceptance if check.met)})",
            node_id=leaf_key,
            iteration=iteration,
            handoff_id=result.handoff_id,
            before=output.acceptance,
            after=after,
        ),
    )
    return result.handoff_id


async def _synthesize_again(
    rc: RunContext,
    leaf: PlanNode,
    leaf_key: str,
    asked: SynthesisInput,
    output: StoredSynthesis,
    added: Sequence[str],
    iteration: int,
) -> RoleResult[SynthesisOutput]:
    """The leaf's synthesis over what it was given and the extractions added, as run_leaf made it."""
    notes = [
        e.message for e in rc.deps.store.events_for_run(rc.run_id, SpecBudgetSpent) if e.node_id == leaf_key
    ]
    return await synthesize(
        rc.deps,
        title=leaf.title,
        questions=leaf_questions(leaf),
        input_handoffs=[*asked.input_handoffs, *(h for h in added if h not in asked.input_handoffs)],
        run_id=rc.run_id,
        node_id=leaf_key,
        iteration=iteration,
        prior_facts=output.prior_fact_ids,
        failures=rc.failures.get(leaf_key, []),
        task_specs=leaf.task_specs,
        notes=notes,
        known=recorded_insights(rc, leaf_key),
    )

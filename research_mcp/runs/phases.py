"""Phase gates: after a synthesis, check the phase's success criteria; while unmet, within
`max_iterations` and the phase's budget, widen the node's leaves (the scout sweeps for the missing
themes, the gaps and the follow-ups; its sources are read, and those already read asked again) and
synthesize again, at the same level: the tree never deepens. Each iteration's delta is an event.
A leaf with acceptance criteria whose extractions grew is synthesized again and its criteria judged
again (runs/rejudge.py); a criterion still unmet is asked in the next iteration, as a missing theme is.

The best synthesis of the phase is kept, not the last: the one meeting most criteria (runs/gates.py
judges them), then leaving fewest leaf acceptance criteria unmet, then citing most verified facts. A phase that stops with criteria unmet (max_iterations reached, or its budget
spent) does not pass silently: the kept synthesis is committed again by code with one gap per unmet
criterion, naming the evidence it was judged on, and its confidence capped (`medium` when some
criteria were met, `low` when none were); the run stays `done` and its handle says so.
"""

from __future__ import annotations

from research_mcp.core.citations import WRITTEN_CITATION
from research_mcp.core.contracts import ConfidenceLevel, Phase, PlanNode, SynthesisOutput
from research_mcp.core.errors import BudgetExhausted, NodeBudgetExhausted
from research_mcp.core.gaps import Gap
from research_mcp.roles.base import RoleResult
from research_mcp.roles.node_budgets import node_budget_spent
from research_mcp.roles.synthesizer import gate_synthesis, synthesize
from research_mcp.runs.context import RunContext, leaf_questions, node_key, report_outline
from research_mcp.runs.gates import PhaseSpending, answered, criteria_status, unmet_gap
from research_mcp.runs.leaf import RUBRIC_FACTS
from research_mcp.runs.rejudge import judged_leaves, unmet_acceptance
from research_mcp.runs.widening import Asking, Widened, gap_questions, settling_questions, widen
from research_mcp.storage.events import (
    IterationDone,
    PhaseBudgetSpent,
    PhaseGate,
    PhaseMet,
    PhaseUnmet,
    RetryStarted,
    StopReason,
)
from research_mcp.storage.outputs import StoredSynthesis

__all__ = ["run_phases"]


class _PhaseBudgetSpent(Exception):
    """The phase's own budget is spent: the phase stops, the run goes on."""


def _synthesis(rc: RunContext, handoff_id: str) -> tuple[StoredSynthesis, dict[int, tuple[int, int]]]:
    """A synthesis handoff's output, and the source and corroborations of each fact in its scope."""
    store = rc.deps.store
    output = store.get_handoff(handoff_id).output_as(StoredSynthesis)
    if output is None:
        raise ValueError(f"handoff {handoff_id} is no finished synthesis")
    return output, {f.id: (f.source_id, f.corroborations) for f in store.get_facts(output.fact_ids)}


def _status(
    rc: RunContext, phase: Phase, output: StoredSynthesis, source_of: dict[int, tuple[int, int]]
) -> dict[str, bool]:
    """The phase's criteria judged on a synthesis, its themes on what the verified facts it cites say
    (each one's statement and quote) and on the questions they were extracted for that it answered."""
    cited = [f for f in rc.deps.store.get_facts(output.cited) if f.verified]
    said = [f"{f.statement} {f.quote}" for f in cited]
    return criteria_status(
        phase, output, source_of, said, answered(output, [f.question for f in cited if f.question])
    )


def _merit(status: dict[str, bool], output: StoredSynthesis) -> tuple[int, int, int]:
    """How good a phase's synthesis is: criteria met, then its leaves' acceptance criteria left
    unmet (fewer is better), then verified facts cited."""
    return sum(status.values()), -unmet_acceptance(output), output.citations.verified


#: The synthesis a phase keeps: its handoff, the criteria it met, and the iteration it came from.
_Kept = tuple[str, dict[str, bool], int]


async def run_phases(
    rc: RunContext, node: PlanNode, key: str, child_handoffs: list[str], result: RoleResult[SynthesisOutput]
) -> str:
    handoff_id = result.handoff_id
    inputs = list(child_handoffs)
    gates = _recorded_gates(rc, key)
    for phase in node.phases:
        best, stopped = await _run_phase(rc, node, key, phase, handoff_id, inputs, gates)
        handoff_id = _close_phase(rc, key, phase, best, stopped)
    return handoff_id


#: Why a phase stopped with criteria unmet, and how it says so; None: every criterion was met.
_Stopped = tuple[StopReason, str] | None


def _stop_reason(rc: RunContext, phase: Phase, iteration: int, spending: PhaseSpending) -> _Stopped:
    """Why no further iteration starts (None: one may)."""
    if iteration == phase.max_iterations:
        return StopReason.MAX_ITERATIONS, f"stopped at max_iterations={phase.max_iterations}"
    if reason := spending.stop_reason(rc) or node_budget_spent():
        return StopReason.BUDGET, f"budget spent: {reason}"
    return None


async def _run_phase(
    rc: RunContext,
    node: PlanNode,
    key: str,
    phase: Phase,
    handoff_id: str,
    inputs: list[str],
    gates: dict[tuple[str, int], PhaseGate],
) -> tuple[_Kept, _Stopped]:
    """Iterate one phase while a criterion is unmet and its budget allows: the synthesis it keeps,
    and why it stopped short (None when every criterion was met)."""
    store = rc.deps.store
    spending = PhaseSpending(phase.budget, rc.deps.budget.tokens, rc.deps.budget.cost_usd)
    output, source_of = _synthesis(rc, handoff_id)
    status = _gate_status(gates, phase, 0) or _status(rc, phase, output, source_of)
    best: _Kept = (handoff_id, status, 0)
    for iteration in range(1, phase.max_iterations + 1):
        unmet = [name for name, met in status.items() if not met]
        if not unmet:
            store.add_event(
                rc.run_id, PhaseMet(message=f"phase {phase.name!r} met", node_id=key, criteria=status)
            )
            return best, None
        if stopped := _stop_reason(rc, phase, iteration, spending):
            return best, stopped
        # The decision to iterate is recorded with the criteria it was taken on and what it asks to
        # settle them: a run resumed in the iteration takes it again on them, not on a store the
        # iteration had already added to (its reads corroborate findings: the weakest changes).
        recorded = gates.get((phase.name, iteration - 1))
        settling = (
            recorded.settling
            if recorded is not None and recorded.settling is not None
            else settling_questions(unmet, output, source_of)
        )
        store.add_event(
            rc.run_id,
            PhaseGate(
                message=f"phase {phase.name!r}: {unmet} unmet, iteration {iteration} starts",
                node_id=key,
                phase=phase.name,
                iteration=iteration - 1,
                status=status,
                settling=settling,
            ),
        )
        try:
            handoff_id, delta = await _iterate(
                rc, node, key, phase, output, unmet, settling, inputs, iteration, spending
            )
        except (_PhaseBudgetSpent, NodeBudgetExhausted) as spent:
            why = spent.what if isinstance(spent, NodeBudgetExhausted) else str(spent)
            return best, (StopReason.BUDGET, f"budget spent: {why}")
        except BudgetExhausted:
            store.add_event(
                rc.run_id, PhaseBudgetSpent(message=f"budget spent in phase {phase.name!r}", node_id=key)
            )
            raise
        before = status
        output, source_of = _synthesis(rc, handoff_id)
        status = _gate_status(gates, phase, iteration) or _status(rc, phase, output, source_of)
        if _merit(status, output) > _merit(best[1], _synthesis(rc, best[0])[0]):
            best = (handoff_id, status, iteration)
        store.add_event(
            rc.run_id,
            IterationDone(
                message=f"phase {phase.name!r} iteration {iteration}: {len(delta['sources_added'])} sources, "
                f"{len(delta['extractions_added'])} extractions added",
                node_id=key,
                iteration=iteration,
                why=unmet,
                changed=delta,
                criteria_before=before,
                criteria_after=status,
                kept_iteration=best[2],
            ),
        )
    return best, None


def _close_phase(rc: RunContext, key: str, phase: Phase, best: _Kept, stopped: _Stopped) -> str:
    """The kept synthesis; with criteria unmet, committed again by code with a gap for each and its
    confidence capped."""
    store = rc.deps.store
    handoff_id, status, kept_at = best
    unmet = [name for name, met in status.items() if not met]
    if not unmet:
        return handoff_id
    stop, said = stopped if stopped is not None else (None, "stopped")
    store.add_event(
        rc.run_id,
        PhaseUnmet(
            message=f"phase {phase.name!r} {said} with {unmet} unmet; kept the synthesis of iteration {kept_at}",
            node_id=key,
            criteria=status,
            stopped=stop,
        ),
    )
    output, source_of = _synthesis(rc, handoff_id)
    cap: ConfidenceLevel = "medium" if len(unmet) < len(status) else "low"
    gaps = [Gap(kind="requirement", text=unmet_gap(phase, name, output, source_of)) for name in unmet]
    if stop is StopReason.BUDGET:
        store.add_event(rc.run_id, PhaseBudgetSpent(message=f"phase {phase.name!r} {said}", node_id=key))
        gaps.append(Gap(kind="requirement", text=f"Phase {phase.name!r} {said}"))
    return gate_synthesis(
        rc.deps,
        handoff_id,
        unmet=[f"{phase.name}: {name}" for name in unmet],
        gaps=gaps,
        cap=cap,
        run_id=rc.run_id,
        node_id=key,
        iteration=kept_at,
    )


def _recorded_gates(rc: RunContext, key: str) -> dict[tuple[str, int], PhaseGate]:
    """How each iteration of this node's phases was decided in an earlier attempt of the run (the
    criteria and what it asks), since its last retry (a retry of failed parts judges its gates afresh)."""
    gates: dict[tuple[str, int], PhaseGate] = {}
    for event in rc.deps.store.events_for_run(rc.run_id):
        if isinstance(event, RetryStarted):
            gates.clear()
        elif isinstance(event, PhaseGate) and event.node_id == key:
            gates[(event.phase, event.iteration)] = event
    return gates


def _gate_status(gates: dict[tuple[str, int], PhaseGate], phase: Phase, iteration: int) -> dict[str, bool]:
    """The criteria recorded after `iteration` of the phase in an earlier attempt ({} if none was)."""
    recorded = gates.get((phase.name, iteration))
    return recorded.status if recorded is not None else {}


async def _iterate(
    rc: RunContext,
    node: PlanNode,
    key: str,
    phase: Phase,
    output: StoredSynthesis,
    unmet: list[str],
    settling: list[str],
    inputs: list[str],
    iteration: int,
    spending: PhaseSpending,
) -> tuple[str, dict[str, list[str]]]:
    """One iteration: widen each leaf with the missing themes, what would settle an unmet criterion
    (`settling`, as its gate recorded it) and the gaps, then synthesize again. `inputs` grows with
    the new extractions. Returns the new synthesis handoff and the delta."""
    leaves = [child for child in node.children if child.kind == "leaf"]
    asking = Asking(
        themes=[name.split(":", 1)[1] for name in unmet if name.startswith("theme:")],
        settling=settling,
        gaps=gap_questions(output)[:2],
        known=[WRITTEN_CITATION.sub("", f.statement).strip() for f in output.key_findings[:RUBRIC_FACTS]],
    )
    widened = Widened()
    judged = judged_leaves(rc, inputs, leaves, [node_key(rc.plan_id, leaf.id) for leaf in leaves])
    for leaf in leaves:
        if reason := spending.exceeded(rc):
            raise _PhaseBudgetSpent(reason)
        await widen(rc, leaf, asking, judged, inputs, iteration, spending, widened)
    if reason := spending.exceeded(rc):
        raise _PhaseBudgetSpent(reason)
    result = await synthesize(
        rc.deps,
        title=node.title,
        questions=list(node.questions) or [q for leaf in leaves for q in leaf_questions(leaf)],
        input_handoffs=inputs,
        run_id=rc.run_id,
        node_id=key,
        iteration=iteration,
        outline=report_outline(rc, node),
        failures=[
            *rc.failures.get(key, []),
            *(f for leaf in leaves for f in rc.failures.get(node_key(rc.plan_id, leaf.id), [])),
        ],
    )
    delta = {
        "sources_added": widened.sources,
        "extractions_added": widened.extractions,
        "questions_added": asking.themes + asking.settling + asking.gaps,
        "follow_ups_asked": list(dict.fromkeys(widened.follow_ups)),
        "criteria_asked": list(dict.fromkeys(widened.criteria)),
    }
    return result.handoff_id, delta

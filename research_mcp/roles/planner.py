"""The planner: a query (and maybe a suggested plan) into a feasible plan tree, with an estimate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from research_mcp.core.contracts import Budget, PlannerOutput, PlanNode
from research_mcp.core.errors import InvalidInput
from research_mcp.core.feasibility import assign_ids, check_feasible, leaf_reading
from research_mcp.core.role_inputs import PlannerInput
from research_mcp.roles.base import Role, RoleDeps, cache_key, perform
from research_mcp.roles.extractor import MAX_SOURCE_CHARS
from research_mcp.sources.library import classify_ref
from research_mcp.storage.models import PlanEstimate
from research_mcp.storage.outputs import StoredPlanning
from research_mcp.storage.store import new_id

__all__ = ["PlanRecord", "Planning", "estimate_plan", "plan_research"]

MAX_PLAN_REPAIRS = 2
# Figures behind the estimate (see docs/how-it-works.md, "Estimates"): the typical size of each role's prompt and
# answer in tokens. The sources a leaf reads, first and on its second hop, are feasibility.leaf_reading's.
TOKENS = {
    "planner": (1_500, 800),
    "extractor": (6_000, 900),
    "synthesizer": (3_000, 1_200),
    "scout": (2_000, 600),
}
EXTRACTOR_PROMPT_TOKENS = 700  # the extractor's system prompt, questions and framing
# Seconds per call by backend. The extractive figure is measured: bench.answers' real documents take
# 2.8-2.9 s a question on a quiet 2-core machine for about 6 calls (BENCHMARKS.md before 0.2.0, "Answers a person
# can use"), HotpotQA's one-paragraph documents 0.5 s.
SECONDS_PER_CALL = {"anthropic": 12.0, "sampling": 15.0, "extractive": 0.5}
#: Backends that run no language model: their calls cost no tokens and no money.
TOKENLESS = frozenset({"extractive"})
DEFAULT_SECONDS_PER_CALL = 10.0


@dataclass
class PlanRecord:
    plan_id: str
    status: str  # feasible | infeasible
    root: PlanNode | None
    reasons: list[str]
    estimate: PlanEstimate
    handoff_id: str
    reused: bool = False  # the plan an identical earlier request was given, read back: no model call


def _source_tokens(ref: str | None) -> int:
    """Input tokens of one extraction: a given text is counted (chars / 4), anything else is typical."""
    if ref is None or classify_ref(ref) != "text":
        return TOKENS["extractor"][0]
    return min(len(ref), MAX_SOURCE_CHARS) // 4 + EXTRACTOR_PROMPT_TOKENS


def estimate_plan(
    root: PlanNode,
    *,
    backend: str,
    price: tuple[float, float],
    concurrency: int,
    pace: Mapping[str, float] | None = None,
) -> PlanEstimate:
    """Model calls, tokens, cost and wall time the plan should take before anything runs. `pace`:
    seconds a call of each role measured on this machine (`Store.seconds_per_call`); a role it
    lacks takes the backend's typical figure."""
    calls: dict[str, int] = {"extractor": 0, "synthesizer": 0, "scout": 0}
    extractor_in = [0]
    typical = SECONDS_PER_CALL.get(backend, DEFAULT_SECONDS_PER_CALL)

    def seconds(role: str) -> float:
        return (pace or {}).get(role, typical)

    def visit(node: PlanNode) -> float:
        """Seconds on the longest chain of calls through this node."""
        if node.kind == "executor":
            calls["synthesizer"] += 1
            return seconds("synthesizer") + max((visit(child) for child in node.children), default=0.0)
        if node.kind == "discovery":
            calls["scout"] += 1
            return seconds("scout")
        first, hop = leaf_reading(node)
        # A searching leaf's second hop reads after its first sources: one more call on its chain.
        refs: list[str | None] = list(node.sources) or [None] * (first + hop)
        specs = max(1, len(node.task_specs))
        calls["extractor"] += len(refs) * specs
        extractor_in[0] += specs * sum(_source_tokens(ref) for ref in refs)
        calls["synthesizer"] += 1
        return seconds("extractor") * (2 if hop else 1) + seconds("synthesizer")

    critical = visit(root)
    tokens_in = extractor_in[0] + sum(
        TOKENS[role][0] * count for role, count in calls.items() if role != "extractor"
    )
    tokens_out = sum(TOKENS[role][1] * count for role, count in calls.items())
    if backend in TOKENLESS:
        tokens_in = tokens_out = 0
    total_calls = sum(calls.values())
    wall = max(critical, sum(seconds(role) * count for role, count in calls.items()) / concurrency)
    cost = (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    return PlanEstimate(
        model_calls=total_calls,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=round(cost, 4),
        wall_s=round(wall, 1),
        calls_by_role=calls,
    )


def _summary(output: PlannerOutput) -> list[str]:
    nodes = output.root.walk()
    leaves = [node for node in nodes if not node.children]
    return [
        f"{len(nodes)} nodes, {len(leaves)} leaves: " + "; ".join(node.title for node in leaves[:4])[:180]
    ]


async def plan_research(
    deps: RoleDeps,
    query: str,
    *,
    suggested: PlannerOutput | None = None,
    budget: Budget | None = None,
    known_facts: int = 0,
    price: tuple[float, float] = (0.0, 0.0),
) -> PlanRecord:
    """Ask the planner; feed feasibility violations back at most MAX_PLAN_REPAIRS times; store the plan.
    The query was checked at the tool boundary (server/inputs.py)."""
    query = query.strip()
    if suggested is not None:
        reasons = check_feasible(suggested.root)
        if reasons:
            raise InvalidInput(
                "The suggested plan is infeasible: " + "; ".join(reasons) + ". Fix it or omit it."
            )
    violations: list[str] = []
    result = None
    for attempt in range(MAX_PLAN_REPAIRS + 1):
        planner_input = PlannerInput(
            query=query,
            suggested_plan=suggested,
            budget=budget,
            known_facts=known_facts,
            violations=violations,
        )
        result = await perform(deps, Planning(planner_input))
        violations = check_feasible(result.output.root)
        if not violations:
            if attempt and deps.knowledge is not None:  # the repaired plan answers the request itself
                key = cache_key(deps, Planning.name, _request_material(planner_input))
                deps.knowledge.remember_output(key, Planning.name, result.handoff_id)
            break
    assert result is not None
    plan_id = new_id("plan")
    root = assign_ids(result.output.root) if not violations else result.output.root
    estimate = estimate_plan(
        root,
        backend=deps.model.name,
        price=price,
        concurrency=deps.settings.concurrency,
        pace=deps.store.seconds_per_call(deps.model.name),
    )
    status = "infeasible" if violations else "feasible"
    deps.store.save_plan(
        plan_id=plan_id,
        query=query,
        tree=PlannerOutput(root=root, rationale=result.output.rationale),
        status=status,
        reasons=violations,
        estimate=estimate,
        suggested=suggested,
        backend=deps.model.name,
        handoff_id=result.handoff_id,
        budget=budget,
        caller=deps.caller,
    )
    reused = result.stored is not None and result.stored.cached
    return PlanRecord(plan_id, status, root, violations, estimate, result.handoff_id, reused)


class Planning(Role[PlannerOutput, StoredPlanning]):
    """A query into a plan tree; feasibility is checked by `plan_research`, which may ask again."""

    name = "planner"
    output_type = PlannerOutput
    stored_type = StoredPlanning

    def __init__(self, planner_input: PlannerInput) -> None:
        super().__init__(planner_input)
        self.planner_input = planner_input

    def prompt(self) -> str:
        return _prompt(self.planner_input)

    def summary(self, output: PlannerOutput) -> list[str]:
        return _summary(output)

    def reuse_key(self, deps: RoleDeps) -> str | None:
        """The same request is given the same plan. The count of known facts is left out of the key:
        it grows with every run, so a question asked again would be planned anew (a model's plan
        differs), and every extraction and synthesis below it with it. A plan's leaves meet the
        knowledge base's facts when they run (prior findings), whatever the count said. A repair is
        asked afresh: the same violations asked again may be fixed the second time."""
        if self.planner_input.violations:
            return None
        return cache_key(deps, self.name, _request_material(self.planner_input))

    def worth_reusing(self, output: PlannerOutput) -> bool:
        return not check_feasible(output.root)


def _request_material(planner_input: PlannerInput) -> dict[str, Any]:
    return planner_input.model_dump(mode="json", exclude={"known_facts", "violations"})


def _prompt(planner_input: PlannerInput) -> str:
    parts = [f"Research query:\n{planner_input.query}"]
    if planner_input.suggested_plan is not None:
        parts.append(
            "Suggested plan (JSON):\n" + planner_input.suggested_plan.model_dump_json(exclude_defaults=True)
        )
    if planner_input.budget is not None:
        parts.append("Budget: " + planner_input.budget.model_dump_json(exclude_none=True))
    if planner_input.known_facts:
        parts.append(
            f"The knowledge base already holds {planner_input.known_facts} facts bearing on this query."
        )
    if planner_input.violations:
        parts.append(
            "Your previous plan was infeasible. Fix these violations:\n- "
            + "\n- ".join(planner_input.violations)
        )
    return "\n\n".join(parts)

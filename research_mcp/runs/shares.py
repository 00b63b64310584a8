"""Priority shares of a run's budget: when the leaves of a plan differ in priority (their task specs'
highest, 1 the highest), each leaf without a budget of its own is held to a share of the run's
tokens, cost and sources in proportion to its weight, ``6 - priority`` (priority 1 weighs 5,
priority 5 weighs 1), so the leaves that matter most may spend most. A share is never below one
source or one token. Leaves of one priority share the run's budget first come, first served, as
they would without this rule; the run's own limits hold over all of them either way.
"""

from __future__ import annotations

from research_mcp.core.contracts import Budget, ExtractorTaskSpec, PlanNode

__all__ = ["leaf_priority", "priority_shares"]

DEFAULT_PRIORITY = ExtractorTaskSpec.model_fields["priority"].default


def leaf_priority(node: PlanNode) -> int:
    """A leaf's priority: its task specs' highest (the smallest number), else the default."""
    return min((spec.priority for spec in node.task_specs), default=DEFAULT_PRIORITY)


def priority_shares(root: PlanNode, budget: Budget | None) -> dict[str, Budget]:
    """Each sharing leaf's share of `budget`, by node id; empty when no division applies."""
    if budget is None or (budget.max_tokens, budget.max_cost_usd, budget.max_sources) == (None, None, None):
        return {}
    leaves = [node for node in root.walk() if node.kind != "executor" and node.budget is None]
    weights = {node.id: 6 - leaf_priority(node) for node in leaves}
    if len(set(weights.values())) < 2:
        return {}
    total = sum(weights.values())
    shares = {}
    for ident, weight in weights.items():
        part = weight / total
        shares[ident] = Budget(
            max_tokens=max(1, int(budget.max_tokens * part)) if budget.max_tokens else None,
            max_cost_usd=budget.max_cost_usd * part if budget.max_cost_usd else None,
            max_sources=max(1, int(budget.max_sources * part)) if budget.max_sources else None,
        )
    return shares

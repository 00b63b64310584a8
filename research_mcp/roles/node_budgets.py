"""Node budgets: a plan node's own `max_tokens`, `max_cost_usd` and `max_seconds`, held while the
node works (its children's work included: the budgets in force pass down the task tree).

Every model call is checked against the budgets in force before it is made and charged to them
after, as the run's budget is. A node out of budget asks nothing more of extractors or the scout:
the sources it has not read are named with the reason, and its closing synthesis still runs over
what it has, so the node ends partial instead of empty.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from research_mcp.core.contracts import Budget
from research_mcp.core.errors import NodeBudgetExhausted
from research_mcp.llm.base import Usage

__all__ = ["NodeSpending", "charge_nodes", "check_nodes", "node_budget", "node_budget_spent"]

#: The role that closes a node over what it has read; never refused by a node budget.
CLOSING_ROLE = "synthesizer"


@dataclass
class NodeSpending:
    """What one node has spent of its own budget."""

    title: str
    limits: Budget
    tokens: int = 0
    cost_usd: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def exceeded(self) -> str | None:
        limits = self.limits
        if limits.max_tokens is not None and self.tokens >= limits.max_tokens:
            return f"{self.tokens} of its {limits.max_tokens} tokens spent"
        if limits.max_cost_usd is not None and self.cost_usd >= limits.max_cost_usd:
            return f"${self.cost_usd:.4f} of its ${limits.max_cost_usd:.4f} spent"
        if limits.max_seconds is not None and time.monotonic() - self.started >= limits.max_seconds:
            return f"its {limits.max_seconds:g} s time limit reached"
        return None


_IN_FORCE: ContextVar[tuple[NodeSpending, ...]] = ContextVar("node_budgets", default=())


@contextmanager
def node_budget(title: str, limits: Budget | None) -> Iterator[None]:
    """Hold `limits` (when it limits tokens, cost or time) over the work done inside."""
    if limits is None or (limits.max_tokens, limits.max_cost_usd, limits.max_seconds) == (None, None, None):
        yield
        return
    token = _IN_FORCE.set((*_IN_FORCE.get(), NodeSpending(title, limits)))
    try:
        yield
    finally:
        _IN_FORCE.reset(token)


def node_budget_spent() -> str | None:
    """Why the innermost node out of budget is out of it ("the budget of leaf 'x': ..."), or None."""
    for spending in reversed(_IN_FORCE.get()):
        if (reason := spending.exceeded()) is not None:
            return f"the budget of {spending.title!r}: {reason}"
    return None


def check_nodes(role: str) -> None:
    """Refuse a model call that a node budget in force no longer allows."""
    if role != CLOSING_ROLE and (reason := node_budget_spent()) is not None:
        raise NodeBudgetExhausted(reason)


def charge_nodes(usage: Usage) -> None:
    for spending in _IN_FORCE.get():
        spending.tokens += usage.tokens_in + usage.tokens_out
        spending.cost_usd += usage.cost_usd

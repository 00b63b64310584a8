"""A run's spending against its limits (tokens, cost, seconds, sources): checked before each model call
and each source read, charged with each call's usage. The node budgets a part holds are
roles/node_budgets.py."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from research_mcp.core.errors import BudgetExhausted
from research_mcp.llm.base import Usage

if TYPE_CHECKING:
    from research_mcp.core.contracts import Budget
    from research_mcp.storage.models import RunUsage

__all__ = ["BudgetTracker"]


@dataclass
class BudgetTracker:
    """Spending of one run against its limits; checked before each model call and each source read."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None
    max_sources: int | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    sources: int = 0
    sources_skipped: int = 0  # sources not read because max_sources was reached
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def from_limits(cls, limits: Budget | None, *, spent: RunUsage | None = None) -> BudgetTracker:
        tracker = cls(**(limits.model_dump() if limits else {}))
        if spent:
            tracker.tokens = spent.tokens_in + spent.tokens_out
            tracker.cost_usd = spent.cost_usd
        return tracker

    def exceeded(self) -> str | None:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"{self.tokens} of {self.max_tokens} tokens spent"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"${self.cost_usd:.4f} of ${self.max_cost_usd:.4f} spent"
        if self.max_seconds is not None and time.monotonic() - self.started >= self.max_seconds:
            return f"{self.max_seconds:.0f} s time limit reached"
        return None

    def check(self) -> None:
        reason = self.exceeded()
        if reason:
            raise BudgetExhausted(reason)

    def take_source(self) -> bool:
        """Count a source about to be read; False, and counted as skipped, once max_sources is reached.

        A source budget does not stop the run: the sources already read are extracted and synthesized
        (they are paid for), further ones are skipped and named, and the run ends `budget_exhausted`."""
        if self.max_sources is not None and self.sources >= self.max_sources:
            self.sources_skipped += 1
            return False
        self.sources += 1
        return True

    def source_limit_reached(self) -> str | None:
        if not self.sources_skipped:
            return None
        return f"Budget exhausted: {self.max_sources} sources read, {self.sources_skipped} more not read."

    def spend(self, usage: Usage) -> None:
        self.tokens += usage.tokens_in + usage.tokens_out
        self.cost_usd += usage.cost_usd

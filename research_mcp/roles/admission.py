"""Admission of interactive planning: slots of its own, and a plain "at capacity" past a bound.

plan_research is interactive (a person waits on it), so its model calls take `planning_slots` slots
of their own, never the slots the background runs share. Calls beyond the slots wait for one, as
long as the wait stays short: a call is refused at once (AtCapacity) when the plans ahead of it
would keep it waiting more than `MAX_WAIT_S` at the pace planning has had (the median of the last
plans), or when `QUEUE_PER_SLOT` times the slots are under way whatever the pace.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from research_mcp.core.errors import AtCapacity

__all__ = ["MAX_WAIT_S", "QUEUE_PER_SLOT", "PlanningDesk"]

MAX_WAIT_S = 20.0  # well inside the ~60 s a host waits on a tool call
QUEUE_PER_SLOT = 8
PACE_SAMPLES = 20


class PlanningDesk:
    """The planning slots and the plans under way."""

    def __init__(self, slots: int) -> None:
        self.slots = anyio.CapacityLimiter(slots)  # held by each planning model call
        self.under_way = 0
        self.most = QUEUE_PER_SLOT * slots
        self._seconds: deque[float] = deque(maxlen=PACE_SAMPLES)  # how long the last plans took

    def expected_wait(self) -> float:
        """Seconds a plan arriving now would wait for a slot, at the pace of the last plans (each
        plan's time counted without the rounds it waited)."""
        if not self._seconds:
            return 0.0
        rounds = math.floor(self.under_way / self.slots.total_tokens)
        return rounds * statistics.median(self._seconds)

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        """Make one plan, or raise AtCapacity at once."""
        wait = self.expected_wait()
        if self.under_way >= self.most or wait > MAX_WAIT_S:
            raise AtCapacity(
                f"The server is at capacity: {self.under_way} plans are being made now"
                + (f" (about {wait:.0f} s of planning ahead)" if wait else "")
                + ". Call plan_research again in a minute."
            )
        rounds = math.floor(self.under_way / self.slots.total_tokens)  # plans ahead, per slot
        self.under_way += 1
        started = time.monotonic()
        try:
            yield
            self._seconds.append((time.monotonic() - started) / (1 + rounds))  # its own share
        finally:
            self.under_way -= 1

"""Background runs: start, wait, cancel, resume.

A run lives in the server's task group, not in the tool call that started it, so it outlives the
host's ~60 s tool timeout; `execute_plan` waits on it for at most `wait_seconds`. Everything a run
does is in the store, so a run whose process died resumes when it is executed again: finished
nodes are read back, never re-run, and what the dead process left half-done is tidied first
(`Store.recover_run`). A run that finished with failed parts (a leaf, a source, a search, a plan) is
`partial`: executing it again with `retry` reruns those parts alone (`Store.reopen_failed_nodes`),
reusing every node that finished whole, and its ancestors synthesize again over the new inputs. A
run has one owner process at a time (`Store.claim_run`): another process on the same data folder
waits on it through the store instead of running it a second time.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc

from research_mcp.core.contracts import FINISHED, RETRYABLE, Budget, PlanNode
from research_mcp.core.errors import BudgetExhausted, InvalidInput, ResearchError
from research_mcp.core.ids import FINAL_NODE
from research_mcp.core.memory import give_back_freed_memory
from research_mcp.core.retry import BACKGROUND, patience
from research_mcp.roles.base import BudgetTracker, RoleDeps
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, node_key, plan_nodes
from research_mcp.runs.engine import execute_node
from research_mcp.runs.partial import partial_report
from research_mcp.runs.shares import priority_shares
from research_mcp.runs.snapshot import node_counts
from research_mcp.storage.events import AttemptStarted, NodeBudgetSpent, RetryStarted
from research_mcp.storage.models import NewNode, Run, StoredPlan
from research_mcp.storage.sqlite import owner_alive
from research_mcp.storage.store import Store, now, process_owner

__all__ = ["FINISHED", "RETRYABLE", "RunManager"]

logger = logging.getLogger(__name__)

CANCELLED = "cancelled by the host"
PROGRESS_EVERY_S = 5.0
PROGRESS_SEND_S = 1.0  # at most this long for one progress notification to be written
POLL_OTHER_PROCESS_S = 0.5  # how often a run owned by another process is read back while waiting on it

Progress = Callable[[float, int, str], Awaitable[None]]


@dataclass
class LiveRun:
    run_id: str
    retry: bool = False  # rerun the parts that failed (a partial run, retried on request)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)
    cancelled_by: str = CANCELLED  # the run's error once cancelled: who cancelled it

    def notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


def planned_budget(plans: list[StoredPlan]) -> Budget | None:
    """The budget the plans were made for (given to plan_research): each limit the tightest any
    plan set. None when no plan set one."""
    limits = [plan.budget for plan in plans if plan.budget is not None]
    if not limits:
        return None
    fields = {
        name: min(values)
        for name in Budget.model_fields
        if (values := [value for limit in limits if (value := getattr(limit, name)) is not None])
    }
    return Budget(**fields)


class RunManager:
    """Owns the runs of one server process."""

    def __init__(self, store: Store, task_group: anyio.abc.TaskGroup) -> None:
        self.store = store
        self.task_group = task_group
        self.live: dict[str, LiveRun] = {}
        self.owner = process_owner()
        # Runs that stopped on a store failure (disk full, read-only) that could not be recorded either.
        self.unrecorded: dict[str, str] = {}

    def check_plans(self, plan_ids: list[str]) -> list[StoredPlan]:
        plans = [self.store.get_plan(plan_id) for plan_id in plan_ids]
        for plan in plans:
            if plan.status != "feasible":
                raise InvalidInput(
                    f"plan {plan.id} is infeasible ({'; '.join(plan.reasons)}); "
                    "plan again with a narrower query or a corrected suggested plan."
                )
        return plans

    def start(
        self,
        plan_ids: list[str],
        deps: RoleDeps,
        budget: Budget | None = None,
        *,
        retry: bool = False,
    ) -> str:
        """Start a run of these plans, or resume the last unfinished one, or (with `retry`) retry the
        failed parts of a partial one; a finished run is otherwise returned as is."""
        plans = self.check_plans(plan_ids)
        budget = budget or planned_budget(plans)
        existing = self.store.latest_run_for(plan_ids)
        if existing is not None and (existing.id in self.live or not self.resumable(existing, retry=retry)):
            return existing.id
        run_id = (
            existing.id
            if existing is not None
            else self.store.create_run(plan_ids, deps.model.name, budget, caller=deps.caller)
        )
        self.resume(run_id, deps, retry=retry)
        return run_id

    @staticmethod
    def resumable(run: Run, *, retry: bool) -> bool:
        """An unfinished run resumes; a partial one is retried only when asked to (a retry costs model
        calls, so a host that is only waiting on a run must never start one by polling)."""
        return run.status not in FINISHED or (retry and run.status in RETRYABLE)

    def resume(self, run_id: str, deps: RoleDeps, *, retry: bool = False) -> None:
        run = self.store.get_run(run_id)
        if run_id in self.live or not self.resumable(run, retry=retry):
            return
        self.unrecorded.pop(run_id, None)
        other = self.store.claim_run(run_id, self.owner)
        if other is not None:
            logger.info("run %s is being executed by process %s; waiting on it", run_id, other)
            return
        deps.budget = BudgetTracker.from_limits(run.budget, spent=self.store.run_usage(run_id))
        live = LiveRun(run_id, retry=retry and run.status in RETRYABLE)
        self.live[run_id] = live
        self.task_group.start_soon(self._run, live, deps)

    async def cancel(self, run_id: str, *, wait: float = 5.0, by: str | None = None) -> None:
        """Cancel a run and record it `cancelled`: a live run is stopped (its finished work kept, what
        was under way cancelled) and waited on for at most `wait` s; a run left `running` by a process
        that is gone is recorded cancelled at once. A finished run is left as it is. `by` names who
        cancelled it in the run's error ("cancelled by the host (tasks/cancel)")."""
        reason = f"cancelled by {by}" if by else CANCELLED
        live = self.live.get(run_id)
        if live is not None:
            live.cancelled_by = reason
            live.scope.cancel()
            with anyio.move_on_after(wait):
                await live.done.wait()
            if live.done.is_set():
                return
        run = self.store.get_run(run_id)
        if run.status not in ("pending", "running"):
            return
        owner = run.owner
        if live is None and owner and owner != self.owner and owner_alive(owner):
            raise InvalidInput(
                f"run {run_id} is being executed by another research-mcp process ({owner}); "
                "cancel it through that process."
            )
        self.store.update_run(run_id, status="cancelled", finished_at=now(), error=reason)

    async def wait(self, run_id: str, seconds: float, progress: Progress | None = None) -> Run:
        """Wait at most `seconds` for the run to finish, reporting progress at each node and every 5 s.

        Progress values strictly increase (MCP requires it): nodes done, and between two nodes a
        heartbeat creeping toward the next whole number. Each notification is sent whole before the
        deadline or not at all, and none once the run has finished, so none follows the response."""
        live = self.live.get(run_id)
        if live is None:
            return self._as_known(await self._wait_elsewhere(run_id, seconds))
        deadline = anyio.current_time() + seconds
        last: float | None = None

        async def report() -> None:
            nonlocal last
            if progress is None or live.done.is_set():
                return
            done, total = node_counts(self.store, self.store.get_run(run_id))
            value = next_progress(last, done, total)
            room = deadline - anyio.current_time()
            if value is None or room <= 0:  # no nodes yet (the plan is being laid out), or nothing new
                return
            last = value
            with anyio.CancelScope(shield=True), anyio.move_on_after(min(room, PROGRESS_SEND_S)):
                await progress(value, total, progress_message(value, total))

        with anyio.move_on_after(seconds):
            await report()  # where the run stands, at once: the host sees it is alive
            while not live.done.is_set():
                changed = live.changed
                with anyio.move_on_after(PROGRESS_EVERY_S):
                    await changed.wait()
                await report()
        return self._as_known(self.store.get_run(run_id))

    def _as_known(self, run: Run) -> Run:
        """The run as the store has it, unless it stopped on a failure the store could not record."""
        error = self.unrecorded.get(run.id)
        if error is None or run.id in self.live:
            return run
        return run.model_copy(update={"status": "failed", "error": error})

    async def _wait_elsewhere(self, run_id: str, seconds: float) -> Run:
        """A run this process does not execute: read it back until it leaves 'running' or time is up."""
        run = self.store.get_run(run_id)
        with anyio.move_on_after(seconds):
            while run.status == "running" and run.owner and run.owner != self.owner:
                await anyio.sleep(POLL_OTHER_PROCESS_S)
                run = self.store.get_run(run_id)
        return run

    async def _run(self, live: LiveRun, deps: RoleDeps) -> None:
        store = self.store
        run_id = live.run_id
        try:
            run = store.get_run(run_id)
            attempt = run.attempt + 1
            store.update_run(run_id, status="running", started_at=now(), attempt=attempt, error=None)
            # The corpus folders this attempt searches: a resume from a terminal searches them again.
            corpus = [str(path) for path in deps.settings.corpus]
            store.add_event(run_id, AttemptStarted(message=f"attempt {attempt} started", corpus=corpus))
            # A background run has no one waiting on it: it rides out an overload of minutes.
            with patience(BACKGROUND), live.scope:
                result_id = await self._execute(run_id, run.plan_ids, deps, live)
                # Failures reach the top synthesis from every node below it (see synthesizer.py).
                failed = store.get_handoff(result_id).failures
                limited = deps.budget.source_limit_reached()
                # Nothing read, and not because a node's budget refused to read what there was.
                nothing = (
                    not limited
                    and store.sources_read(run_id) == 0
                    and store.count_facts(run_id) == 0
                    and not store.events_for_run(run_id, NodeBudgetSpent)
                )
                status = (
                    "budget_exhausted"
                    if limited
                    else "no_sources"
                    if nothing
                    else "partial"
                    if failed
                    else "done"
                )
                store.update_run(
                    run_id,
                    status=status,
                    finished_at=now(),
                    result_handoff_id=result_id,
                    error=limited or (deps.sources.nothing_found() if nothing else None),
                )
                if status != "done":
                    why = limited or "; ".join(failed[:2]) or deps.sources.nothing_found()
                    logger.warning("run %s ended %s: %s", run_id, status, why)
            if live.scope.cancelled_caught:
                store.update_run(run_id, status="cancelled", finished_at=now(), error=live.cancelled_by)
        except Exception as raised:  # top-level boundary of a background task: record, never crash the server
            try:
                self._record_failure(run_id, first_error(raised), deps)
            except ResearchError as unrecorded:  # the store itself fails (disk full, read-only)
                logger.error("run %s stopped and could not be recorded: %s", run_id, unrecorded)
                self.unrecorded[run_id] = str(unrecorded)
        finally:
            self.live.pop(run_id, None)
            if not self.live:  # the last run ended: what it freed goes back to the system
                give_back_freed_memory()
            with anyio.CancelScope(shield=True):
                try:
                    store.release_run(run_id, self.owner)
                except ResearchError:
                    logger.exception("run %s: could not release it", run_id)
            live.done.set()
            live.notify()

    def _record_failure(self, run_id: str, error: BaseException, deps: RoleDeps) -> None:
        store = self.store
        if isinstance(error, BudgetExhausted):
            partial = partial_report(store, run_id, str(error), deps.model.name)
            store.update_run(
                run_id,
                status="budget_exhausted",
                finished_at=now(),
                error=str(error),
                result_handoff_id=partial,
            )
        elif isinstance(error, ResearchError):
            store.update_run(run_id, status="failed", finished_at=now(), error=str(error))
        else:
            logger.exception("run %s failed", run_id, exc_info=error)
            store.update_run(run_id, status="failed", finished_at=now(), error=f"internal error: {error!r}")

    async def _execute(self, run_id: str, plan_ids: list[str], deps: RoleDeps, live: LiveRun) -> str:
        plans = self.check_plans(plan_ids)
        roots = []
        finishing: dict[str, str] = {FINAL_NODE: "synthesizer"} if len(plans) > 1 else {}
        for plan in plans:
            root = plan.tree.root
            self.store.ensure_nodes(run_id, plan_nodes(plan.id, root))
            roots.append((plan, root))
            finishing.update(final_roles(plan.id, root))
        recovered = self.store.recover_run(run_id, finishing)
        if recovered is not None:
            logger.info("run %s resumed after an interruption: %s", run_id, recovered)
            self.store.add_event(run_id, recovered)
        # Asked to retry: what failed last time runs again, with the nodes above it; nodes that
        # finished whole do not. A plain resume (after a crash) never reruns a node that finished.
        reopened = self.store.reopen_failed_nodes(run_id) if live.retry else []
        failed = [node.node_id for node in self.store.nodes_for_run(run_id) if node.status == "failed"]
        if reopened or failed:
            logger.info("run %s retries %s (failed) and synthesizes %s again", run_id, failed, reopened)
            self.store.add_event(
                run_id,
                RetryStarted(
                    message=f"retrying what failed: {len(failed)} failed nodes, {len(reopened)} nodes with failed parts",
                    failed=failed,
                    reopened=reopened,
                ),
            )
        if len(roots) > 1:
            self.store.ensure_nodes(
                run_id,
                [NewNode(node_id=FINAL_NODE, plan_id=None, parent_id=None, kind="executor", title="final")],
            )
        results: dict[int, str] = {}
        failures: list[str] = []  # with several plans, one that fails is named and the others go on
        errors: list[ResearchError] = []

        async def run_plan(index: int, plan: StoredPlan, root: PlanNode) -> None:
            context = RunContext(
                deps=deps,
                run_id=run_id,
                plan_id=plan.id,
                on_node_done=live.notify,
                shares=priority_shares(root, self.store.get_run(run_id).budget),
            )
            try:
                results[index] = await execute_node(context, root)
            except BudgetExhausted:
                raise
            except ResearchError as error:
                if len(roots) == 1:
                    raise
                errors.append(error)
                failures.append(f"Not researched: plan {plan.id} ({plan.query!r}) failed: {error}")

        async with anyio.create_task_group() as group:
            for index, (plan, root) in enumerate(roots):
                group.start_soon(run_plan, index, plan, root)
        if len(roots) == 1:
            return results[0]
        if not results:
            raise errors[0]
        final = self.store.get_node(run_id, FINAL_NODE)
        if final is not None and final.status == "done" and final.handoff_id:
            return final.handoff_id
        self.store.start_node(run_id, FINAL_NODE)
        questions = [plan.query for plan, _ in roots]
        result = await synthesize(
            deps,
            title="Answer to all subqueries",
            questions=questions,
            input_handoffs=[results[index] for index in sorted(results)],
            run_id=run_id,
            node_id=FINAL_NODE,
            failures=failures,
        )
        self.store.finish_node(run_id, FINAL_NODE, "done", result.handoff_id)
        live.notify()
        return result.handoff_id


def final_roles(plan_id: str, root: PlanNode) -> dict[str, str]:
    """Node ids whose work ends in one handoff of a known role: once that handoff is done, so is the node.

    Leaves and executors end in their synthesis, discovery leaves in the synthesis of their scout's
    curation. An executor with phases may synthesize several times, so it is left out (it is run again).
    """
    roles = {}
    for node in root.walk():
        if not node.phases:
            roles[node_key(plan_id, node.id)] = "synthesizer"
    return roles


def next_progress(last: float | None, done: int, total: int) -> float | None:
    """The next progress value, strictly above `last` and never above `total`: the nodes done when
    that is new, else halfway from the last value to the next whole number (a heartbeat that still
    increases); None when there is nothing to say. A node reopened (a retry, a phase iteration) can
    lower `done`: the value then waits until `done` passes it again."""
    if total <= 0:
        return None
    reached = float(min(done, total))
    if last is None or reached > last:
        return reached
    ceiling = min(math.floor(last) + 1, total)
    value = last + (ceiling - last) / 2
    return value if last < value < ceiling else None


def progress_message(value: float, total: int) -> str:
    """What a progress value says, in words that agree with it: its whole part is the nodes done."""
    done = math.floor(value)
    return f"{done}/{total} nodes done" + ("; the next under way" if value > done else "")


def first_error(error: BaseException) -> BaseException:
    """The error behind task-group wrapping: a budget stop first, then any research error, else the first."""
    if not isinstance(error, BaseExceptionGroup):
        return error
    leaves = [first_error(inner) for inner in error.exceptions]
    for kind in (BudgetExhausted, ResearchError):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return leaves[0]

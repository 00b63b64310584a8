"""The research service: what each MCP tool does, in domain terms, returning compact handles.

The server wires tools to these methods and nothing else. Arguments arrive checked and typed (the
tool boundary, server/inputs.py, holds every limit) with the model backend already chosen. Every
method returns a `CompactReturn` (worded by `handles`, at most 1,000 bytes of JSON whatever the work
behind it) or a `ReportPage` (under `max_tokens`). The few queries the server's task and resource
handlers need (a run, a page of runs, a handoff, the corpus status) are methods here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from research_mcp import handles
from research_mcp.core.callers import SHARED_KINDS, USER, may_read
from research_mcp.core.config import Settings
from research_mcp.core.contracts import (
    Budget,
    CompactReturn,
    ExtractorTaskSpec,
    PlannerOutput,
    PlanNode,
    ReportPage,
    View,
)
from research_mcp.core.errors import InvalidInput, NotFound
from research_mcp.core.ids import kind_of_id, source_label, source_number
from research_mcp.llm.base import ModelBackend
from research_mcp.llm.pricing import FALLBACK_PRICE, price_for
from research_mcp.reports import page_of, report_markdown, view_items
from research_mcp.roles.admission import PlanningDesk
from research_mcp.roles.base import BudgetTracker, RoleDeps
from research_mcp.roles.extractor import extract
from research_mcp.roles.planner import plan_research
from research_mcp.roles.scout import scout
from research_mcp.run_document import RunView, live_snapshot
from research_mcp.runs.manager import Progress, RunManager
from research_mcp.runs.snapshot import read_snapshot
from research_mcp.sources.index_progress import CorpusStatus
from research_mcp.sources.library import SourceLibrary
from research_mcp.storage.events import KeptAsTask
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.models import Run, StoredPlan
from research_mcp.storage.outputs import Handoff, StoredCuration, StoredExtraction
from research_mcp.storage.store import Store

__all__ = ["ResearchService"]

logger = logging.getLogger(__name__)


@dataclass
class ResearchService:
    settings: Settings
    store: Store
    sources: SourceLibrary
    runs: RunManager
    knowledge: KnowledgeBase | None = None
    # One limit on model calls for the whole server, shared by every run and tool call but planning.
    limiter: anyio.CapacityLimiter = field(init=False)
    # Planning is interactive (a person waits on it): its model calls have slots of their own, so a
    # plan never queues behind background runs; past a short wait it is refused at once.
    planning: PlanningDesk = field(init=False)

    def __post_init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(self.settings.concurrency)
        self.planning = PlanningDesk(self.settings.planning_slots)

    def deps(
        self,
        model: ModelBackend,
        budget: Budget | None = None,
        *,
        interactive: bool = False,
        caller: str | None = None,
    ) -> RoleDeps:
        return RoleDeps(
            store=self.store,
            model=model,
            sources=self.sources,
            settings=self.settings,
            limiter=self.planning.slots if interactive else self.limiter,
            budget=BudgetTracker.from_limits(budget),
            knowledge=self.knowledge,
            caller=caller,
        )

    def _price(self, model: ModelBackend) -> tuple[float, float]:
        """USD per million input and output tokens of the model a run would use (0 without a paid model)."""
        if model.name != "anthropic":
            return (0.0, 0.0)
        price = price_for(self.settings.anthropic_model) or FALLBACK_PRICE
        return (price.input_per_mtok, price.output_per_mtok)

    def _searches_nothing(self, root: PlanNode) -> bool:
        """A leaf must search, and there is neither web search nor a corpus to search."""
        searching = any(not node.children and not node.sources for node in root.walk())
        return searching and not self.sources.web_configured and self.sources.corpus is None

    # --- plan_research -------------------------------------------------------------------------

    async def plan(
        self,
        query: str,
        *,
        suggested: PlannerOutput | None,
        budget: Budget | None,
        model: ModelBackend,
        caller: str | None = None,
    ) -> CompactReturn:
        if suggested is not None:
            self._check_stored_sources(
                [ref for node in suggested.root.walk() for ref in node.sources], caller
            )
        async with self.planning.admitted():
            known = 0
            if self.knowledge is not None:
                known = await anyio.to_thread.run_sync(self.knowledge.count_known, query, caller)
            record = await plan_research(
                self.deps(model, interactive=True, caller=caller),
                query,
                suggested=suggested,
                budget=budget,
                known_facts=known,
                price=self._price(model),
            )
        searches_nothing = record.root is not None and self._searches_nothing(record.root)
        return handles.plan_handle(
            record, query, known=known, searches_nothing=searches_nothing, backend=model.name
        )

    # --- execute_plan --------------------------------------------------------------------------

    def authorization_question(self, plan_ids: list[str], caller: str | None = None) -> str | None:
        """What the user is asked before a run of `plan_ids` starts: each plan's query, its leaves,
        its estimate and any scope warning; None when a run of them exists already (it was asked
        for then: execute_plan waits on it or resumes it). Raises NotFound or InvalidInput for
        a plan that cannot run."""
        plans = [self.plan_of(plan_id, caller) for plan_id in plan_ids]
        if self.store.latest_run_for(plan_ids) is not None:
            return None
        for plan in plans:
            if plan.status != "feasible":
                raise InvalidInput(f"plan {plan.id} is infeasible; nothing to authorize")
        return handles.authorization_question(plans)

    def declined(self, plan_ids: list[str], *, cancelled: bool, caller: str | None = None) -> CompactReturn:
        """The result of an execute_plan whose run the user did not authorize: nothing ran."""
        backend = self.plan_of(plan_ids[0], caller).backend
        return handles.declined_handle(plan_ids, cancelled=cancelled, backend=backend)

    async def execute(
        self,
        *,
        plan_ids: list[str],
        run_id: str | None,
        wait_seconds: float,
        cancel: bool,
        progress: Progress | None,
        model: Callable[[], ModelBackend],
        retry: bool = False,
        caller: str | None = None,
    ) -> CompactReturn:
        """Start a run of `plan_ids` within the budget they were planned with, or wait on, resume or
        cancel `run_id` (one of the two is given). `model` is called only when a run starts or resumes.
        `caller` reads and runs only its own."""
        if run_id is None:
            for plan_id in plan_ids:
                self.plan_of(plan_id, caller)
            run_id = self.runs.start(plan_ids, self.deps(model(), caller=caller), retry=retry)
        else:
            run = self.run(run_id, caller)
            if cancel:
                await self.runs.cancel(run_id)
                return self.run_handle(self.store.get_run(run_id))
            # Unfinished: resume it. Partial and asked to retry: rerun the parts that failed only.
            if run_id not in self.runs.live and self.runs.resumable(run, retry=retry):
                self.runs.resume(run_id, self.deps(model(), caller=run.caller), retry=retry)
        return self.run_handle(await self.runs.wait(run_id, wait_seconds, progress))

    def resume_interrupted(self, model: ModelBackend) -> list[str]:
        """Resume the runs a process now gone left unfinished, each as its caller's, where `model` is
        the backend the run was started with (a run on a client's sampling waits for execute_plan
        from a client). A run another live process executes is left to it. The ids resumed."""
        resumed = []
        for run in self.store.unfinished_runs():
            if run.id in self.runs.live:
                continue
            if run.backend != model.name:
                logger.info(
                    "run %s was interrupted; it resumes on execute_plan(run_id) (its backend is %s)",
                    run.id,
                    run.backend,
                )
                continue
            self.runs.resume(run.id, self.deps(model, caller=run.caller))
            if run.id in self.runs.live:
                logger.info("run %s was interrupted; resumed", run.id)
                resumed.append(run.id)
        return resumed

    def run_handle(self, run: Run) -> CompactReturn:
        result = self.store.get_handoff(run.result_handoff_id) if run.result_handoff_id else None
        return handles.run_handle(read_snapshot(self.store, run), result, run.error)

    async def cancel(self, run_id: str, *, by: str) -> None:
        """Stop the run, recording who stopped it."""
        await self.runs.cancel(run_id, by=by)

    # --- queries the server's task and resource handlers make ------------------------------------

    def run(self, run_id: str, caller: str | None = None) -> Run:
        """The run, if `caller` may read it; NotFound (as for an unknown id) if not."""
        run = self.store.get_run(run_id)
        if not may_read(run.caller, caller):
            raise NotFound("run", run_id)
        return run

    def plan_of(self, plan_id: str, caller: str | None = None) -> StoredPlan:
        """The plan, if `caller` may read it; NotFound (as for an unknown id) if not."""
        plan = self.store.get_plan(plan_id)
        if not may_read(plan.caller, caller):
            raise NotFound("plan", plan_id)
        return plan

    def owner_of(self, ident: str) -> str | None:
        """The caller a run, plan or handoff belongs to (a run's handoffs are the run's)."""
        kind = kind_of_id(ident)
        if kind == "run":
            return self.store.get_run(ident).caller
        if kind == "plan":
            return self.store.get_plan(ident).caller
        if kind == "handoff":
            handoff = self.store.get_handoff(ident)
            return self.store.get_run(handoff.run_id).caller if handoff.run_id else handoff.caller
        raise NotFound("run, plan or handoff", ident)

    def _check_stored_sources(self, refs: list[str], caller: str | None) -> None:
        """A user names a stored source (S12) only if every caller may read it, or they read it."""
        if caller is None or not caller.startswith(USER):
            return
        for ref in refs:
            if kind_of_id(ref.strip()) != "source":
                continue
            number = source_number(ref.strip())
            source = self.store.get_source(number)
            if source.kind not in SHARED_KINDS and not self.store.source_read_by(number, caller):
                raise NotFound("source", ref.strip())

    def _readable(self, ident: str, caller: str | None) -> None:
        if caller is not None and not may_read(self.owner_of(ident), caller):
            raise NotFound(kind_of_id(ident) or "run, plan or handoff", ident)

    def runs_page(self, limit: int, *, after: str | None = None) -> list[Run]:
        """Runs newest first, `limit` at most, after the run `after` (NotFound for an unknown one)."""
        return self.store.runs_page(limit, after=after)

    def task_runs_page(self, caller: str, limit: int, *, after: str | None = None) -> list[Run]:
        """The runs `caller` started as tasks, newest first (NotFound for an unknown `after`)."""
        return self.store.task_runs_page(caller, limit, after=after)

    def keep_as_task(self, run_id: str, ttl_ms: int) -> None:
        """Record how long the run is kept as a protocol task."""
        self.store.add_event(run_id, KeptAsTask(message=f"kept as a task for {ttl_ms} ms", ttl_ms=ttl_ms))

    def task_ttl_ms(self, run_id: str) -> int | None:
        """How long the run is kept as a task, as recorded when it started as one; None if it did not."""
        kept = self.store.events_for_run(run_id, KeptAsTask)
        return kept[-1].ttl_ms if kept else None

    def handoff(self, handoff_id: str, caller: str | None = None) -> Handoff:
        self._readable(handoff_id, caller)
        return self.store.get_handoff(handoff_id)

    def report_markdown(self, run_id: str, caller: str | None = None) -> str:
        self.run(run_id, caller)
        return report_markdown(self.store, run_id)

    def corpus_status(self) -> CorpusStatus | None:
        """How far indexing of the local corpus has got; None when no corpus is configured."""
        return self.sources.corpus.status() if self.sources.corpus is not None else None

    # --- extract_source and scout_sources ------------------------------------------------------

    async def extract(
        self,
        source: str,
        questions: list[str],
        *,
        task_spec: ExtractorTaskSpec | None,
        model: ModelBackend,
        caller: str | None = None,
    ) -> CompactReturn:
        self._check_stored_sources([source], caller)
        deps = self.deps(model, caller=caller)
        read = await self.sources.read(source)
        result = await extract(deps, read, questions=questions, task_spec=task_spec)
        handoff = self.store.get_handoff(result.handoff_id)
        output = handoff.output_as(StoredExtraction)
        facts, verified = (len(output.fact_ids), output.verified) if output else (0, 0)
        source = f"{source_label(read.id)}: {read.title or read.ref}"
        return handles.extraction_handle(result.handoff_id, source, handoff, facts, verified, model.name)

    async def scout(
        self, topic: str, queries: list[str], limit: int, *, model: ModelBackend, caller: str | None = None
    ) -> CompactReturn:
        await self.sources.corpus_scanned()
        coverage = self.sources.corpus_coverage()  # taken before searching: what the searches saw
        # The queries given are also what the sources are for: each is tagged with those it covers.
        result = await scout(
            self.deps(model, caller=caller), topic, queries=queries, questions=queries, limit=limit
        )
        output = self.store.get_handoff(result.handoff_id).output_as(StoredCuration) or StoredCuration()
        return handles.curation_handle(
            result.handoff_id,
            output,
            coverage=coverage,
            nothing_found=self.sources.nothing_found(),
            backend=model.name,
        )

    # --- report_results ------------------------------------------------------------------------

    def report(
        self, ident: str, view: View, cursor: str | None, max_tokens: int, caller: str | None = None
    ) -> ReportPage:
        self._readable(ident, caller)
        return page_of(ident, view, view_items(self.store, ident, view), cursor, max_tokens)

    def run_view(self, run_id: str, caller: str | None = None) -> RunView:
        """The run as the MCP App view shows it (read by the view through the host, never by the model)."""
        self.run(run_id, caller)
        return live_snapshot(self.store, run_id)

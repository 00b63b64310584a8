"""runs/manager.py: a run of stored plans started in the server's task group, waited on and
recorded as it ends; the budget a plan was made with; progress that never goes back; the error
behind a task group's wrapping."""

from __future__ import annotations

import anyio

from research_mcp.core.contracts import Budget, PlannerOutput
from research_mcp.core.errors import BudgetExhausted, ModelError
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.manager import RunManager, final_roles, first_error, next_progress, planned_budget
from research_mcp.storage.models import PlanEstimate, StoredPlan
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR
from tests.runs.walk import PLAN_ID, deps_for, leaf, tree


def save(store: Store, plan_id: str = PLAN_ID, budget: Budget | None = None) -> None:
    store.save_plan(
        plan_id=plan_id,
        query="How do panels work?",
        tree=PlannerOutput(root=tree(leaf("solar", SOLAR))),
        status="feasible",
        reasons=[],
        estimate=PlanEstimate(model_calls=2, tokens_in=1, tokens_out=1, cost_usd=0, wall_s=1),
        suggested=None,
        backend="scripted",
        handoff_id="h_000000000000",
        budget=budget,
    )


async def test_a_started_run_goes_on_in_the_task_group_and_ends_done(temp_store: Store) -> None:
    save(temp_store)
    deps = deps_for(temp_store, ScriptedModel(team_script))
    async with anyio.create_task_group() as group:
        manager = RunManager(temp_store, group)
        run_id = manager.start([PLAN_ID], deps)
        run = await manager.wait(run_id, 30, None)
    assert run.status == "done" and run.result_handoff_id is not None
    assert manager.start([PLAN_ID], deps) == run_id  # a finished run is returned, not run again


async def test_a_run_given_no_budget_spends_within_its_plans(temp_store: Store) -> None:
    save(temp_store, budget=Budget(max_sources=1, max_tokens=900))
    deps = deps_for(temp_store, ScriptedModel(team_script))
    async with anyio.create_task_group() as group:
        run_id = RunManager(temp_store, group).start([PLAN_ID], deps)
        group.cancel_scope.cancel()
    assert temp_store.get_run(run_id).budget == Budget(max_sources=1, max_tokens=900)


def test_the_planned_budget_is_each_limit_at_its_tightest(temp_store: Store) -> None:
    save(temp_store, "plan_000000000002", Budget(max_tokens=500, max_cost_usd=1.0))
    save(temp_store, "plan_000000000003", Budget(max_tokens=900, max_sources=4))
    save(temp_store, "plan_000000000004")
    plans: list[StoredPlan] = [temp_store.get_plan(f"plan_00000000000{n}") for n in (2, 3, 4)]
    assert planned_budget(plans) == Budget(max_tokens=500, max_cost_usd=1.0, max_sources=4)
    assert planned_budget(plans[2:]) is None


def test_progress_steps_forward_as_nodes_finish_and_creeps_up_between() -> None:
    assert next_progress(None, 0, 3) == 0.0
    assert next_progress(0.0, 0, 3) == 0.5 and next_progress(0.5, 0, 3) == 0.75
    assert next_progress(0.75, 2, 3) == 2.0
    assert next_progress(3.0, 3, 3) is None and next_progress(None, 0, 0) is None


def test_the_error_behind_a_task_group_is_a_budget_stop_first_then_a_research_error() -> None:
    stop, refused, bug = (
        BudgetExhausted("100 of 100 tokens spent"),
        ModelError("refused"),
        RuntimeError("bug"),
    )
    assert first_error(ExceptionGroup("g", [bug, refused, ExceptionGroup("h", [stop])])) is stop
    assert first_error(ExceptionGroup("g", [bug, refused])) is refused
    assert first_error(bug) is bug


def test_a_node_with_phases_is_no_final_synthesis_of_one_handoff() -> None:
    root = tree(leaf("a"), phases=[])
    assert set(final_roles(PLAN_ID, root).values()) == {"synthesizer"}
    phased = tree(leaf("a"), phases=[{"name": "p"}])  # type: ignore[list-item]
    assert f"{PLAN_ID}/n" not in final_roles(PLAN_ID, phased)

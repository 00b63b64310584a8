import json
import typing
from pathlib import Path

from research_mcp.core.config import Settings
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.context import node_key
from research_mcp.runs.leaf import leaf_sources
from research_mcp.storage import events
from research_mcp.storage.events import (
    AcceptanceRejudged,
    HopChoice,
    IterationDone,
    Lead,
    PhaseGate,
    PhaseMet,
    PhaseUnmet,
    SecondHop,
    SourcesChosen,
    StopReason,
    UnreadEvent,
)
from research_mcp.storage.outputs import AcceptanceCheck
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR, WIND
from tests.runs.walk import PLAN_ID, leaf, tree, walk

NODE = "plan_1/n.1"

ONE_OF_EACH: list[events.Event] = [
    events.AttemptStarted(message="attempt 1 started", corpus=["/notes"]),
    events.Recovered(message="resumed", nodes_reset=2),
    events.RetryStarted(message="retrying", failed=[NODE], reopened=["plan_1/root"]),
    events.KeptAsTask(message="kept", ttl_ms=60_000),
    events.NodeStarted(message="leaf started", node_id=NODE),
    events.NodeDone(message="leaf done", node_id=NODE),
    events.NodeFailed(message="leaf failed", node_id=NODE),
    events.NodeBudgetSpent(message="corpus:3 not read", node_id=NODE),
    events.Searched(message="'tidal': 4 candidates", node_id=NODE, query="tidal"),
    events.SearchFailed(message="search failed", node_id=NODE),
    SourcesChosen(message="2 chosen", node_id=NODE, refs=["corpus:1", "corpus:2"], failures=["x"]),
    events.NoSources(message="none", node_id=NODE),
    events.SourceFailed(message="corpus:9: gone", node_id=NODE),
    events.SpecBudgetSpent(message="Task spec 1 not asked of corpus:2", node_id=NODE),
    events.PriorFindings(message="3 known facts", node_id=NODE, fact_ids=[1, 2, 3]),
    events.InsightsGiven(message="1 left open", node_id=NODE, insight_ids=[7]),
    SecondHop(
        message="second hop",
        node_id=NODE,
        chosen=[HopChoice(ref="corpus:4", context="cited by S1", again=True)],
        followed=[Lead(kind="bridge", text="Ada", ref="corpus:4", weight=1.5, source_id=1)],
    ),
    PhaseGate(
        message="gate",
        node_id=NODE,
        phase="coverage",
        iteration=0,
        status={"theme:a": False},
        settling=["Solar panels convert sunlight"],
    ),
    PhaseMet(message="met", node_id=NODE, criteria={"theme:a": True}),
    PhaseUnmet(message="unmet", node_id=NODE, criteria={"theme:a": False}, stopped=StopReason.BUDGET),
    events.PhaseBudgetSpent(message="budget spent", node_id=NODE),
    IterationDone(
        message="iteration 1",
        node_id=NODE,
        iteration=1,
        why=["theme:a"],
        changed={"sources_added": ["corpus:5"]},
        criteria_before={"theme:a": False},
        criteria_after={"theme:a": True},
        kept_iteration=1,
    ),
    AcceptanceRejudged(
        message="judged again",
        node_id=NODE,
        iteration=1,
        handoff_id="h_2",
        after=[AcceptanceCheck(spec=0, criterion="names a year", met=True, by="code")],
    ),
]


def store_with_run(tmp_path: Path) -> tuple[Store, str]:
    store = Store(tmp_path / "r.db")
    return store, store.create_run(["plan_1"], "scripted", None)


def insert_row(store: Store, run_id: str, kind: str, data: object, node_id: str | None = NODE) -> None:
    """An `events` row as an earlier version wrote it, bypassing the typed `add_event`."""
    row = {"run_id": run_id, "node_id": node_id, "kind": kind, "message": f"old {kind}", "at": "t"}
    with store.write():
        store.db.table("events").insert({**row, "data": None if data is None else json.dumps(data)})


def test_every_kind_of_event_reads_back_as_it_was_written(tmp_path: Path) -> None:
    kinds = [events.kind_of(member) for member in typing.get_args(typing.get_args(events.Event)[0])]
    assert sorted(kinds) == sorted(event.kind for event in ONE_OF_EACH)  # one example of each kind
    store, run_id = store_with_run(tmp_path)
    for event in ONE_OF_EACH:
        store.add_event(run_id, event)
    assert store.events_for_run(run_id) == ONE_OF_EACH
    assert store.events_for_run(run_id, SourcesChosen) == [ONE_OF_EACH[10]]


def test_the_data_column_holds_the_fields_but_the_columns(tmp_path: Path) -> None:
    store, run_id = store_with_run(tmp_path)
    store.add_event(run_id, SourcesChosen(message="chosen", node_id=NODE, refs=["corpus:1"]))
    store.add_event(run_id, events.NodeDone(message="done", node_id=NODE))
    rows = store.db.execute("SELECT kind, message, node_id, data FROM events ORDER BY id").fetchall()
    assert [(*row[:3], row[3] and json.loads(row[3])) for row in rows] == [
        ("sources_chosen", "chosen", NODE, {"refs": ["corpus:1"], "failures": [], "beyond_budget": 0}),
        ("node_done", "done", NODE, None),
    ]


def test_rows_written_before_events_were_typed_are_read_into_their_events(tmp_path: Path) -> None:
    store, run_id = store_with_run(tmp_path)
    insert_row(store, run_id, "phase_met", {"theme:a": True, "theme:b": True})
    insert_row(store, run_id, "phase_unmet", {"theme:a": False})
    insert_row(
        store, run_id, "second_hop", {"chosen": [], "followed": [{"kind": "open", "text": "t", "ref": "r"}]}
    )
    insert_row(store, run_id, "task", {"ttl_ms": 5})
    insert_row(store, run_id, "spec_budget", None)
    assert store.events_for_run(run_id) == [
        PhaseMet(message="old phase_met", node_id=NODE, criteria={"theme:a": True, "theme:b": True}),
        PhaseUnmet(message="old phase_unmet", node_id=NODE, criteria={"theme:a": False}),
        SecondHop(
            message="old second_hop",
            node_id=NODE,
            chosen=[],
            followed=[Lead(kind="open", text="t", ref="r")],
        ),
        events.KeptAsTask(message="old task", node_id=NODE, ttl_ms=5),
        events.SpecBudgetSpent(message="old spec_budget", node_id=NODE),
    ]


def test_an_unknown_kind_or_unreadable_data_is_kept_aside_and_never_taken_as_a_decision(
    tmp_path: Path,
) -> None:
    store, run_id = store_with_run(tmp_path)
    insert_row(store, run_id, "sources_chosen", {"refs": "corpus:1"})  # not a list
    insert_row(store, run_id, "hop_budget", {"spent": 3})  # a kind this version does not know
    unread = store.events_for_run(run_id)
    assert [type(event) for event in unread] == [UnreadEvent, UnreadEvent]
    assert [(event.kind, event.data) for event in unread] == [  # type: ignore[union-attr]
        ("sources_chosen", {"refs": "corpus:1"}),
        ("hop_budget", {"spent": 3}),
    ]
    assert "hop_budget" in unread[1].problem  # type: ignore[union-attr]
    assert store.events_for_run(run_id, SourcesChosen) == []  # a resumed leaf chooses its sources anew


async def test_a_resumed_leaf_whose_recorded_choice_cannot_be_read_chooses_its_sources_anew() -> None:
    store = Store(Settings().database_path)
    try:
        root = tree(leaf("energy", SOLAR))
        rc = walk(store, ScriptedModel(team_script), root)
        key = node_key(PLAN_ID, "n.1")
        insert_row(store, rc.run_id, "sources_chosen", {"refs": WIND}, node_id=key)  # a string, not a list
        assert await leaf_sources(rc, root.children[0], key, []) == [SOLAR]
        [chosen] = store.events_for_run(rc.run_id, SourcesChosen)
        assert chosen.refs == [SOLAR]
    finally:
        store.close()


def test_a_followed_lead_and_a_recovery_are_stored_in_the_shape_earlier_versions_wrote(
    tmp_path: Path,
) -> None:
    """A lead is one model from `leads_from` to the `second_hop` row, and a recovery one from
    `recover_run` to the `recovered` row: the rows keep the keys the copies they replace wrote, and
    rows those wrote read back."""
    store, run_id = store_with_run(tmp_path)
    followed = {
        "kind": "bridge",
        "text": "Ada",
        "ref": "corpus:4",
        "weight": 0.9,
        "source_id": 1,
        "because": "b",
    }
    insert_row(store, run_id, "second_hop", {"chosen": [], "followed": [followed], "beyond_budget": 0})
    tidied = {"nodes_completed": 1, "handoffs_interrupted": 2, "nodes_reset": 0}
    insert_row(store, run_id, "recovered", tidied, node_id=None)
    hop, recovered = store.events_for_run(run_id)
    assert isinstance(hop, SecondHop) and hop.followed == [Lead(**followed)]
    assert recovered == events.Recovered(message="old recovered", **tidied)
    store.add_event(run_id, hop)
    store.add_event(run_id, recovered)
    rows = store.db.execute("SELECT data FROM events ORDER BY id").fetchall()
    assert [json.loads(data) for (data,) in rows[2:]] == [
        {"chosen": [], "followed": [followed], "beyond_budget": 0},
        tidied,
    ]

"""Bad tool input never crashes the server: every tool, through a real client session, gets inputs
generated from its own `inputSchema` (hypothesis-jsonschema) and broken variants of them.

Broken variants: a wrong type at any field, a missing field, an unknown field, a 1 MB string, 200-
and 500-deep nesting, NUL bytes, lone surrogates, control characters, negative / NaN / infinite /
huge numbers, unknown ids and real ids of the wrong kind (a run id where a plan id belongs, a plan
id as a source, ...). For every input the call returns in bounded time, with either a success whose
structured content validates against the tool's `outputSchema`, or an `isError` result that names
the field (or says what to give) in under 2,000 characters, and the server still answers a cheap
call afterwards.

What the transports do with the inputs no server sees: the in-memory client refuses to serialize
nesting deeper than about 250 levels (so 500-deep arguments never leave the client); over a JSON
wire the SDK's parser refuses lone-surrogate escapes and nesting deeper than about 200 levels and
drops the line unanswered (see the stdio test at the end). A lone surrogate does reach the server
in memory, where it is refused by name.

The counts (inputs tried, isError, ok, refused by the client, crashes, unhelpful errors, per tool)
are printed at the end of the module; `python -m bench.input_fuzz` runs the same strategies with more
examples.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from mcp import Client
from mcp.types import CallToolResult, Tool

from research_mcp.core.config import Settings
from research_mcp.core.contracts import BUDGET_CAPS
from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.reports import MAX_MAX_TOKENS, MIN_MAX_TOKENS
from research_mcp.server import inputs
from research_mcp.server.app import create_server
from tests.server.indexing import wait_until_indexed

TOOLS = ("plan_research", "execute_plan", "extract_source", "scout_sources", "report_results")
CALL_TIMEOUT = 30  # seconds; a call that takes longer counts as a hang
MAX_ERROR_CHARS = 2000
UNHELPFUL = ("an error", "an error that names no argument and says nothing to give")
MEGABYTE = 1_000_001

TEXT = (
    "Penguins live almost exclusively in the Southern Hemisphere. Emperor penguins breed during the "
    "Antarctic winter on sea ice. Galapagos penguins live near the equator, the northernmost of all. "
    "Little penguins, the smallest species, nest in burrows along the coasts of Australia."
)
CORPUS_DOCS = {
    "penguins.md": "# Penguins\n\n" + TEXT,
    "krill.md": "# Krill\n\nAntarctic krill are small crustaceans. Penguins and whales eat krill in summer.",
}
PLAN = {
    "root": {
        "kind": "executor",
        "title": "penguins",
        "children": [
            {
                "kind": "leaf",
                "title": "where penguins live",
                "questions": ["Where do penguins live?"],
                "sources": [TEXT],
                "task_specs": [{"questions": ["Where do penguins live?"], "priority": 2}],
            }
        ],
    },
    "rationale": "one leaf over a given text",
}
BUDGET = {"max_tokens": 50_000, "max_cost_usd": 1.0, "max_seconds": 60, "max_sources": 5}

# Deterministic (derandomize), no example database in the repo, no per-example deadline (a call
# that runs a planner or an extractor takes longer than a lookup). No health check is suppressed:
# the arguments are drawn inside the test body (st.data), so a slow round trip is not slow generation.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
)


# --- the session under test ----------------------------------------------------------------------


class InputProbe:
    """A real client session on a server in a background event loop, with the ids of real objects
    and per-tool counts of what each input got."""

    def __init__(self, portal: BlockingPortal, client: Client, *, fail_on_crash: bool = True) -> None:
        self.fail_on_crash = fail_on_crash  # the benchmark counts crashes and goes on
        self.crashes: Counter[tuple[str, str]] = Counter()  # (tool, what went wrong)
        self.causes = ServerCrashes()
        self.portal = portal
        self.client = client
        self.tools: dict[str, Tool] = {}
        self.ids: dict[str, str] = {}
        self.tally: dict[str, Counter[str]] = {name: Counter() for name in TOOLS}

    async def _call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        with anyio.fail_after(CALL_TIMEOUT):
            return await self.client.call_tool(name, arguments)

    def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return self.portal.call(self._call, name, arguments)

    def setup(self) -> None:
        """List the tools, then make one real object of every kind, so ids exist to be misused."""
        self.tools = {tool.name: tool for tool in self.portal.call(self.client.list_tools).tools}
        assert sorted(self.tools) == sorted(TOOLS)
        plan = self.call("plan_research", {"query": "Where do penguins live?", "suggested_plan": PLAN})
        assert not plan.is_error, plan.content
        self.ids["plan"] = plan.structured_content["id"]  # type: ignore[index]
        run = self.call("execute_plan", {"plan_id": self.ids["plan"], "wait_seconds": 25})
        assert not run.is_error and run.structured_content["status"] == "done", run.content  # type: ignore[index]
        self.ids["run"] = run.structured_content["id"]  # type: ignore[index]
        extraction = self.call(
            "extract_source", {"source": TEXT, "questions": ["Which penguin is smallest?"]}
        )
        assert not extraction.is_error, extraction.content
        self.ids["extraction"] = extraction.structured_content["id"]  # type: ignore[index]
        self.ids["source"] = re.findall(r"S\d+", extraction.structured_content["summary"][0])[0]  # type: ignore[index]
        curation = self.call("scout_sources", {"topic": "penguin habitats"})
        assert not curation.is_error, curation.content
        self.ids["curation"] = curation.structured_content["id"]  # type: ignore[index]
        sources = self.call("report_results", {"id": self.ids["curation"], "view": "sources"})
        self.ids["corpus"] = re.findall(r"corpus:\d+", sources.content[0].text)[0]  # type: ignore[union-attr]

    def plausible(self) -> dict[str, dict[str, Any]]:
        """A good call of each tool, with every optional object filled in, for mutations to break."""
        return {
            "plan_research": {"query": "Where do penguins live?", "suggested_plan": PLAN, "budget": BUDGET},
            "execute_plan": {"plan_id": self.ids["plan"], "wait_seconds": 0},
            "extract_source": {
                "source": TEXT,
                "questions": ["Where do penguins live?"],
                "task_spec": {
                    "questions": ["Which penguin lives furthest north?"],
                    "expected_format": "a place",
                    "acceptance_criteria": ["a verbatim quote"],
                    "priority": 2,
                    "budget": {"max_tokens": 5000},
                    "discovery_intense": False,
                },
            },
            "scout_sources": {"topic": "penguin habitats", "queries": ["penguin nesting"], "limit": 5},
            "report_results": {"id": self.ids["run"], "view": "sources", "cursor": "0:0", "max_tokens": 1000},
        }

    def id_values(self) -> list[str]:
        """Real ids of every kind, unknown ids of the right shape, and malformed ones."""
        return [
            *self.ids.values(),
            "plan_000000000000",
            "run_ffffffffffff",
            "h_000000000000",
            "S999999",
            "S99999999999999999999999",
            "corpus:0",
            "corpus:99999999999999999999",
            "plan_",
            "run_" + "a" * 100,
            "../../etc/passwd",
            "h_\U0001f427",
            " ",
            "",
        ]

    def check(self, name: str, arguments: dict[str, Any]) -> str:
        """One call: what it got ('ok', 'is_error', 'refused'); fails the test on a crash."""
        tally = self.tally[name]
        tally["tried"] += 1
        shown = _shorten(arguments)
        self.causes.seen.clear()
        try:
            result = self.call(name, arguments)
        except ValueError as error:
            if "serialization depth" not in str(error):
                return self.crash(name, shown, f"the call raised {error!r}")
            outcome = "refused"  # the client would not serialize it: nothing reached the server
        except Exception as error:
            return self.crash(name, shown, f"the call raised {error!r}")
        else:
            problem = self._problem(name, result)
            if problem:
                return self.crash(name, shown, problem)
            outcome = "is_error" if result.is_error else "ok"
        tally[outcome] += 1
        self.still_serves(name, shown)
        return outcome

    def crash(self, name: str, shown: str, problem: str) -> str:
        """A crash (generic error, exception, hang, dead session), or an unhelpful error message."""
        if self.causes.seen:
            problem += f" (on the server: {self.causes.seen[0]})"
        unhelpful = problem.startswith(UNHELPFUL)
        self.tally[name]["unhelpful" if unhelpful else "crashes"] += 1
        self.crashes[(name, problem[:240])] += 1
        if self.fail_on_crash:
            raise AssertionError(f"{name}({shown}): {problem}")
        return "crash"

    def _problem(self, name: str, result: CallToolResult) -> str | None:
        tool = self.tools[name]
        if not result.is_error:
            try:
                jsonschema.validate(result.structured_content, tool.output_schema or {})
            except jsonschema.ValidationError as error:
                return f"structured content does not match the outputSchema: {error.message}"
            return None
        text = " ".join(getattr(block, "text", "") for block in result.content)
        if text.strip() in (f"Error executing tool {name}", ""):
            return f"the bare generic error {text!r}"
        if len(text) > MAX_ERROR_CHARS:
            return f"{UNHELPFUL[0]} of {len(text):,} characters (it echoes the input): {text[:160]!r}"
        names = set(tool.input_schema.get("properties", {}))
        if not any(re.search(rf"\b{re.escape(field)}\b", text) for field in names) and not re.search(
            r"\b(give|pass|omit)\b", text
        ):
            return f"{UNHELPFUL[1]}: {text[:160]!r}"
        return None

    def still_serves(self, after: str, shown: str) -> None:
        result = self.call("report_results", {"id": self.ids["plan"], "view": "tree", "max_tokens": 200})
        if result.is_error:
            self.crash(after, shown, f"afterwards the server no longer serves: {result.content}")

    def table(self) -> str:
        columns = ("tried", "is_error", "ok", "refused", "crashes", "unhelpful")
        header = f"{'tool':<16}" + "".join(f"{column:>11}" for column in columns)
        rows = [
            f"{name:<16}" + "".join(f"{c[column]:>11}" for column in columns)
            for name, c in self.tally.items()
        ]
        return "\n".join([header, *rows])


class ServerCrashes(logging.Handler):
    """What the server logged as an unexpected exception during a call: the crash's cause."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            cause = error.__cause__ or error
            self.seen.append(f"{type(cause).__name__}: {str(cause).splitlines()[0][:160]}")


def _shorten(value: Any) -> str:
    text = ascii(value)
    return text if len(text) <= 300 else text[:300] + f"… ({len(text):,} chars)"


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in CORPUS_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def start_probe(
    stack: ExitStack, home: Path, *, mode: str = "default", model: Any = None, fail_on_crash: bool = True
) -> InputProbe:
    """A server (scripted model unless `model`, a two-document corpus) and a client session on it,
    running in a background event loop until `stack` closes; its real objects already made."""
    config = Settings(RESEARCH_MCP_HOME=str(home), RESEARCH_MCP_CORPUS=str(write_corpus(home / "corpus")))
    server = create_server(config, model=model or ScriptedModel(team_script))
    portal = stack.enter_context(start_blocking_portal("asyncio"))
    client = Client(server) if mode == "default" else Client(server, mode="legacy")
    stack.enter_context(portal.wrap_async_context_manager(client))
    portal.call(wait_until_indexed, client)
    probe = InputProbe(portal, client, fail_on_crash=fail_on_crash)
    crashes = logging.getLogger("mcp.server.mcpserver.server")
    crashes.addHandler(probe.causes)
    stack.callback(crashes.removeHandler, probe.causes)
    probe.setup()
    return probe


@pytest.fixture(scope="module")
def open_probe(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Callable[..., InputProbe]]:
    """Opens probes (one per client mode and model) for this module; prints their counts at the end."""
    probes: dict[str, InputProbe] = {}
    with ExitStack() as stack:

        def open_(mode: str = "default", model: Any = None) -> InputProbe:
            key = f"{mode} session, {type(model).__name__ if model else 'ScriptedModel'}"
            if key not in probes:
                probes[key] = start_probe(stack, tmp_path_factory.mktemp("inputs"), mode=mode, model=model)
            return probes[key]

        yield open_
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else ExitStack():
        for key, probe in probes.items():
            sys.stderr.write(f"\ninput properties, {key}:\n{probe.table()}\n")


@pytest.fixture(scope="module")
def probe(open_probe: Callable[..., InputProbe]) -> InputProbe:
    return open_probe()


# --- strategies ------------------------------------------------------------------------------------

Path_ = tuple[str | int, ...]
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
ODD_CHARACTERS = ["\x00", "\ud800", "\udfff", "\x01", "\x1b", "\x7f", "\u2028", "\ufeff", "\r\n", "\x00" * 50]
ODD_NUMBERS = [
    math.nan,
    math.inf,
    -math.inf,
    -1,
    -0.5,
    0,
    -0.0,
    1e308,
    10**30,
    -(10**30),
    2**63,
    2**64 + 1,
]


def _paths(value: Any, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    yield prefix, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _replace(root: Any, path: Path_, new: Any) -> Any:
    if not path:
        return new
    parent = root
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return root


def _delete(root: Any, path: Path_) -> Any:
    parent = root
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return root


def _deep(depth: int, as_list: bool) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def mutate(draw: Any, base: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """One broken variant of a call's arguments."""
    args = _copy(base)
    everything = [(path, value) for path, value in _paths(args) if path]
    strings = [path for path, value in everything if isinstance(value, str)]
    numbers = [path for path, value in everything if _type_name(value) == "number"]
    dicts = [path for path, value in _paths(args) if isinstance(value, dict)]
    kind = draw(
        st.sampled_from(["wrong_type", "missing", "unknown", "huge", "deep", "characters", "numbers", "ids"]),
        label="mutation",
    )
    anywhere = [path for path, _ in everything] or [("query",)]
    if kind == "wrong_type" and everything:
        path, old = draw(st.sampled_from(everything))
        new = draw(JSON_VALUES.filter(lambda v: _type_name(v) != _type_name(old)))
        return _replace(args, path, new)
    if kind == "missing" and everything:
        return _delete(args, draw(st.sampled_from([path for path, _ in everything])))
    if kind == "huge":
        path = draw(st.sampled_from(strings or anywhere))
        unit = draw(st.sampled_from(["x", "é", "Penguins nest. ", "\U0001f427"]))
        return _replace(args, path, unit * (MEGABYTE // len(unit) + 1))
    if kind == "deep":
        path = draw(st.sampled_from(anywhere))
        return _replace(args, path, _deep(draw(st.sampled_from([200, 500])), draw(st.booleans())))
    if kind == "characters" and strings:
        path = draw(st.sampled_from(strings))
        old = _get(args, path)
        at = draw(st.integers(0, len(old)))
        odd = draw(st.sampled_from(ODD_CHARACTERS))
        return _replace(args, path, old[:at] + odd + old[at:])
    if kind == "numbers":
        path = draw(st.sampled_from(numbers or anywhere))
        return _replace(args, path, draw(st.sampled_from(ODD_NUMBERS)))
    if kind == "ids" and strings:
        return _replace(args, draw(st.sampled_from(strings)), draw(st.sampled_from(ids)))
    # "unknown", and the fallback for a mutation that found nothing to act on
    path = draw(st.sampled_from(dicts))
    target = _get(args, path)
    key = draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in target))
    target[key] = draw(JSON_VALUES)
    return args


def _get(root: Any, path: Path_) -> Any:
    for part in path:
        root = root[part]
    return root


def schema_of(probe: InputProbe, name: str) -> dict[str, Any]:
    return probe.tools[name].input_schema


def schema_values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid for a JSON schema: `from_schema` for every value that is not an object, and
    objects composed here from their properties (hypothesis-jsonschema 0.23.1 draws objects with
    `many.more()`, a hypothesis internal that hypothesis 6.170 no longer has)."""
    options = schema.get("anyOf", [])
    if {"type": "null"} in options and len(options) == 2:  # optional: null, or the value
        (value,) = [option for option in options if option != {"type": "null"}]
        return st.none() | schema_values(value)
    if schema.get("type") == "array" and schema.get("items", {}).get("type") == "object":
        return st.lists(schema_values(schema["items"]), max_size=4)  # a suggested plan's nodes
    if schema.get("type") != "object":
        return from_schema(schema)
    properties = schema.get("properties")
    if properties is None:  # a free-form object
        return st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=4)
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {key: schema_values(sub) for key, sub in properties.items() if key in required},
        optional={key: schema_values(sub) for key, sub in properties.items() if key not in required},
    )


def valid_arguments(probe: InputProbe, name: str) -> st.SearchStrategy[dict[str, Any]]:
    return schema_values(schema_of(probe, name))


def broken_arguments(probe: InputProbe, name: str) -> st.SearchStrategy[dict[str, Any]]:
    base = st.just(probe.plausible()[name]) | valid_arguments(probe, name)
    ids = probe.id_values()
    return st.composite(lambda draw: mutate(draw, draw(base), ids))()


# --- the properties --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TOOLS)
def test_every_schema_valid_input_gets_a_valid_result_or_an_error_naming_the_field(
    probe: InputProbe, name: str
) -> None:
    @settings(FUZZ, max_examples=40)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        probe.check(name, data.draw(valid_arguments(probe, name)))

    run()


@pytest.mark.parametrize("name", TOOLS)
def test_every_broken_input_gets_an_error_that_says_what_to_fix_and_the_server_goes_on(
    probe: InputProbe, name: str
) -> None:
    @settings(FUZZ, max_examples=100)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        probe.check(name, data.draw(broken_arguments(probe, name)))

    run()


@pytest.mark.parametrize("name", TOOLS)
def test_over_the_legacy_handshake_with_the_extractive_model_broken_inputs_never_crash(
    open_probe: Callable[..., InputProbe], name: str
) -> None:
    legacy = open_probe("legacy", ExtractiveModel())

    @settings(FUZZ, max_examples=25)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        legacy.check(name, data.draw(broken_arguments(legacy, name) | valid_arguments(legacy, name)))

    run()


@pytest.mark.long
@pytest.mark.parametrize("name", TOOLS)
def test_many_more_broken_inputs_never_crash_the_server(probe: InputProbe, name: str) -> None:
    @settings(FUZZ, max_examples=150)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        probe.check(name, data.draw(broken_arguments(probe, name) | valid_arguments(probe, name)))

    run()


# --- named cases a user would hit, with the message they get -----------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("plan_research", {"query": "q" * 2001}, "query is 2,001 characters; give at most 2,000"),
        ("plan_research", {"query": "pen\ud800guins"}, "query contains a lone surrogate"),
        ("plan_research", {"query": "penguins", "suggested_plan": _deep(200, False)}, "suggested_plan"),
        ("plan_research", {"query": "penguins", "qeury": "x"}, "unknown argument 'qeury'"),
        ("execute_plan", {"plan_id": "{run}"}, "is a run id: pass it as run_id"),
        ("execute_plan", {"run_id": "{plan}"}, "is a plan id: pass it as plan_id"),
        ("execute_plan", {"run_id": "{run}", "wait_seconds": -1}, "wait_seconds must be between 0 and 55"),
        ("plan_research", {"query": "penguins", "budget": {"max_tokens": 10**30}}, "budget.max_tokens"),
        ("extract_source", {"source": "{plan}", "questions": ["Where?"]}, "is a plan id"),
        ("extract_source", {"source": "S99999999999999999999", "questions": ["Where?"]}, "source"),
        (
            "extract_source",
            {"source": TEXT, "questions": ["Where?"], "task_spec": {"priority": 9}},
            "task_spec",
        ),
        ("extract_source", {"source": "x" * 2_000_001, "questions": ["Where?"]}, "give at most 2,000,000"),
        ("extract_source", {"source": TEXT, "questions": ["Where?"] * 21}, "questions has 21 items"),
        ("scout_sources", {"topic": "penguins", "limit": 0}, "limit must be between 1 and 20"),
        ("report_results", {"id": "x" * 100_000}, "id is 100,000 characters"),
        ("report_results", {"id": "{source}"}, "is a source id"),
        ("report_results", {"id": "{run}", "max_tokens": -5}, "max_tokens must be between 200 and 20000"),
    ],
)
def test_a_broken_input_gets_an_error_that_names_the_field_and_what_to_give(
    probe: InputProbe, name: str, arguments: dict[str, Any], says: str
) -> None:
    filled = {
        key: value.format(**probe.ids) if isinstance(value, str) and value.startswith("{") else value
        for key, value in arguments.items()
    }
    result = probe.call(name, filled)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and says in text, text[:500]
    assert probe.check(name, filled) == "is_error"


@pytest.mark.parametrize(
    "budget",
    [
        {"max_tokens": 1, "max_cost_usd": 5e-324, "max_seconds": 5e-324, "max_sources": 1},
        {"max_tokens": 100_000_000, "max_cost_usd": 10_000, "max_seconds": 604_800, "max_sources": 10_000},
    ],
)
def test_the_smallest_and_largest_budgets_accepted_end_a_run_with_a_report(
    probe: InputProbe, budget: dict[str, Any]
) -> None:
    plan = probe.call(
        "plan_research", {"query": "Where do penguins nest?", "suggested_plan": PLAN, "budget": budget}
    )
    assert not plan.is_error, plan.content
    started = probe.call(
        "execute_plan",
        {"plan_id": plan.structured_content["id"], "wait_seconds": 0},  # type: ignore[index]
    )
    run = probe.call("execute_plan", {"run_id": started.structured_content["id"], "wait_seconds": 25})  # type: ignore[index]
    assert run.structured_content["status"] in ("done", "budget_exhausted"), run.content  # type: ignore[index]
    assert probe.check("report_results", {"id": run.structured_content["id"]}) == "ok"  # type: ignore[index]


# --- over a JSON wire ------------------------------------------------------------------------------

SCRIPT = Path(sys.executable).with_name("research-mcp")


async def test_over_a_json_wire_unparseable_lines_are_dropped_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    """Raw JSON-RPC lines to `research-mcp serve`: what the SDK cannot parse (a lone surrogate escape,
    500-deep nesting) gets no answer or a JSON-RPC error; everything else gets a tool result."""
    call = (
        '{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{args}}}}}'
    )
    deep = '{"a":' * 500 + "1" + "}" * 500
    lines: list[tuple[int | None, bytes]] = [
        (
            0,
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
            b'"capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}',
        ),
        (None, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'),
        (1, call.format(id=1, name="plan_research", args=r'{"query":"pen\ud800guins"}').encode()),
        (
            2,
            call.format(id=2, name="plan_research", args=f'{{"query":"x","suggested_plan":{deep}}}').encode(),
        ),
        (3, call.format(id=3, name="plan_research", args='{"query":"pen\xffguins"}').encode("latin-1")),
        (4, call.format(id=4, name="execute_plan", args='{"run_id":"run_x","wait_seconds":NaN}').encode()),
        (
            5,
            call.format(
                id=5, name="scout_sources", args=r'{"topic":"pen\u0000guins","limit":1e400}'
            ).encode(),
        ),
        (6, call.format(id=6, name="report_results", args=r'{"id":"run_\ud83d\ude00"}').encode()),
        (7, call.format(id=7, name="report_results", args='{"id":"run_000000000000"}').encode()),
    ]
    unparseable = {1, 2}
    answered = {3, 4, 5, 6, 7}
    env = {"PATH": os.environ["PATH"], "RESEARCH_MCP_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    answers: dict[int, dict[str, Any]] = {}
    with anyio.fail_after(60):
        async with await anyio.open_process([str(SCRIPT), "serve"], env=env) as process:
            assert process.stdin is not None and process.stdout is not None
            for _, line in lines:
                await process.stdin.send(line + b"\n")
            buffer = b""
            while not answered <= answers.keys():  # tool calls run concurrently: any order
                buffer += await process.stdout.receive()
                *complete, buffer = buffer.split(b"\n")
                for raw in complete:
                    message = json.loads(raw)
                    if "id" in message and message["id"] is not None:
                        answers[message["id"]] = message
            assert process.returncode is None  # still serving
            await process.stdin.aclose()
            await process.wait()
    for ident in unparseable:
        assert ident not in answers or "error" in answers[ident]
    plan = answers[3]["result"]  # invalid UTF-8 is read as U+FFFD: a question like any other
    assert not plan["isError"] and "pen\ufffdguins" in plan["content"][0]["text"]
    for ident, says in [
        (4, "wait_seconds"),  # NaN: not a number a tool takes
        (5, "limit: Input should be a valid integer"),  # 1e400 is infinity, no integer
        (6, "is not a run, plan or handoff id"),  # a surrogate pair escape is one character, 😀
        (7, "No run with id 'run_000000000000'"),
    ]:
        result = answers[ident]["result"]
        assert result["isError"] and says in result["content"][0]["text"], result


def test_the_tools_page_states_the_input_limits_the_server_enforces() -> None:
    page = (Path(__file__).parents[2] / "docs" / "tools.md").read_text(encoding="utf-8")
    section = page.split("## Input limits", 1)[1].split("\n## ", 1)[0]
    enforced = [
        inputs.MAX_QUERY_CHARS,
        inputs.MAX_QUESTIONS,
        inputs.MAX_QUESTION_CHARS,
        inputs.MAX_QUERIES,
        inputs.MAX_SEARCH_QUERY_CHARS,
        inputs.MAX_URL_CHARS,
        inputs.MAX_TEXT_SOURCE_CHARS,
        inputs.MAX_ID_CHARS,
        inputs.MAX_PLAN_IDS,
        inputs.MAX_PLAN_NODES,
        inputs.MAX_PLAN_DEPTH,
        inputs.MAX_PLAN_JSON_CHARS,
        inputs.MAX_SPEC_DEPTH,
        inputs.MAX_SPEC_JSON_CHARS,
        MIN_MAX_TOKENS,
        MAX_MAX_TOKENS,
        *BUDGET_CAPS.values(),
    ]
    assert [limit for limit in enforced if f"{limit:,}" not in section] == []

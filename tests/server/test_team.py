"""One server for a team, over streamable HTTP with a token per user (RESEARCH_MCP_HTTP_TOKENS).

The server is the real `research-mcp serve --http`, a subprocess killed with SIGKILL mid-run; the
model is the Anthropic backend through the real SDK, pointed at a loopback fake that plays the team
(tests/reliability/killharness.py) and holds every extraction unanswered until the test lets it go.
What a user relies on: a task survives the kill and is found by its owner from a new session; the
restarted server finishes the run without anyone calling; another user can neither list, read nor
cancel it, and nothing that user is shown carries the first user's questions or sources.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client

from tests.fake_http import RecordedRequest, ScriptedResponse
from tests.reliability.killharness import TeamMessagesAPI, read_only
from tests.server.test_http import MCP_HEADERS, free_port, start_server
from tests.server.test_tasks import INVALID_PARAMS, RawSession, modern

ALICE = "alice-token-0123456789abcdefghij"
BOB = "bob-token-0123456789abcdefghijklm"
# What only Alice asked and gave: none of it may reach Bob.
ALICE_QUERY = "When was the Quillfeather aqueduct of Ostravel built?"
ALICE_TEXT = (
    "The Quillfeather aqueduct of Ostravel was built in 1712 by a guild of 40 masons. "
    "The Quillfeather aqueduct of Ostravel was rebuilt in 1811 after a flood of six weeks."
)
BOB_QUERY = "When was the Quillfeather aqueduct built and rebuilt?"
BOB_TEXT = (
    "The Harrowgate mill of Lunde was built in 1650 by a guild of 12 carpenters. "
    "The Harrowgate mill of Lunde was rebuilt in 1790 after a fire."
)


def one_leaf(query: str, text: str) -> dict[str, Any]:
    leaf = {"kind": "leaf", "title": query[:60], "questions": [query], "sources": [text]}
    return {"root": {"kind": "executor", "title": query[:60], "children": [leaf]}, "rationale": "one leaf"}


class HeldExtractions(TeamMessagesAPI):
    """The team's fake Messages API; while `hold` is set, every extraction is accepted and never answered."""

    def __init__(self) -> None:
        super().__init__(one_leaf(ALICE_QUERY, ALICE_TEXT), delay=0.0)
        self.hold = True
        self.held = 0

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        body = request.json
        extraction = (
            isinstance(body, dict) and body["tools"][0]["input_schema"].get("title") == "ExtractorOutput"
        )
        if self.hold and request.path == "/v1/messages" and extraction:
            self.held += 1
            return ScriptedResponse(stall=True)
        return super().answer(request)


def team_env(api: TeamMessagesAPI) -> dict[str, str]:
    return {
        "RESEARCH_MCP_MODEL": "anthropic",
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": api.url,
        "RESEARCH_MCP_HTTP_TOKENS": f"alice={ALICE},bob={BOB}",
        "RESEARCH_MCP_ASK_BEFORE_RUN": "false",
    }


@asynccontextmanager
async def session_of(url: str, token: str) -> AsyncIterator[RawSession]:
    """A 2025-11-25 session (tasks declared) whose every request carries the user's token."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
    ):
        session = RawSession(read, write)
        await session.open()
        yield session


def run_status(database: Path, run_id: str) -> str | None:
    with read_only(database) as conn:
        row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
    return str(row[0]) if row else None


async def until(condition: Any, seconds: float = 120) -> None:
    """Wait for `condition()` to hold, reading it again and again, at most `seconds`."""
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.05)


async def modern_request(url: str, token: str | None, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One request in the 2026-07-28 envelope: no session at all, only the token (if any)."""
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": modern(params)}
    async with httpx2.AsyncClient() as http:
        response = await http.post(url, headers=headers, json=body)
    text = response.text
    if text.startswith("event:") or "\ndata:" in text or text.startswith("data:"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return dict(json.loads(text))


async def test_a_users_task_survives_kill_9_resumes_by_itself_and_stays_theirs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    database = home / "research.db"
    with HeldExtractions() as api:
        port = free_port()
        server = start_server(f"127.0.0.1:{port}", home, port, **team_env(api))
        try:
            async with session_of(server.url, ALICE) as alice:
                plan = await alice.call(
                    "plan_research",
                    {"query": ALICE_QUERY, "suggested_plan": one_leaf(ALICE_QUERY, ALICE_TEXT)},
                )
                created = await alice.call(
                    "execute_plan", {"plan_id": plan["structuredContent"]["id"]}, task={}
                )
                task_id = created["task"]["taskId"]
                await until(lambda: api.held >= 1)  # the run is under way, its extraction unanswered
        finally:
            server.process.kill()  # SIGKILL: nothing is tidied
            server.process.wait()
            server.stop()
        assert run_status(database, task_id) == "running"

        api.hold = False
        port = free_port()
        server = start_server(f"127.0.0.1:{port}", home, port, **team_env(api))
        try:
            # Nobody calls: the restarted server resumes the run it owns and finishes it.
            await until(lambda: run_status(database, task_id) == "done")

            async with session_of(server.url, ALICE) as alice:
                listed = (await alice.result("tasks/list"))["tasks"]
                assert [task["taskId"] for task in listed] == [task_id]
                assert listed[0]["status"] == "completed"
                assert (await alice.result("tasks/get", {"taskId": task_id}))["status"] == "completed"

            async with session_of(server.url, BOB) as bob:
                assert (await bob.result("tasks/list"))["tasks"] == []
                for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                    refused = await bob.request(method, {"taskId": task_id})
                    assert refused["error"]["code"] == INVALID_PARAMS, (method, refused)
                    assert "no task" in refused["error"]["message"]
                for ident in (task_id, plan["structuredContent"]["id"]):
                    read = await bob.call("report_results", {"id": ident, "view": "report"})
                    assert read["isError"] and "No " in read["content"][0]["text"], read
                hijack = await bob.call("execute_plan", {"run_id": task_id, "wait_seconds": 0})
                assert hijack["isError"], hijack
                with read_only(database) as conn:  # the text alice gave, as a stored source
                    (given,) = conn.execute(
                        "SELECT id FROM sources WHERE kind = 'text' ORDER BY id"
                    ).fetchone()
                for arguments in (
                    {"source": f"S{given}", "questions": ["When was it built?"]},
                    {"query": BOB_QUERY, "suggested_plan": one_leaf(BOB_QUERY, f"S{given}")},
                ):
                    tool = "extract_source" if "source" in arguments else "plan_research"
                    refused = await bob.call(tool, arguments)
                    assert (
                        refused["isError"]
                        and f"No source with id 'S{given}'" in refused["content"][0]["text"]
                    )

                # Bob's own research on a near question: nothing of Alice's comes back.
                own = await bob.call(
                    "plan_research", {"query": BOB_QUERY, "suggested_plan": one_leaf(BOB_QUERY, BOB_TEXT)}
                )
                run = await bob.call(
                    "execute_plan", {"plan_id": own["structuredContent"]["id"], "wait_seconds": 30}
                )
                assert run["structuredContent"]["status"] == "done", run
                shown = []
                for view in ("summary", "report", "sources", "facts", "followups", "gaps", "tree"):
                    page = await bob.call(
                        "report_results",
                        {"id": run["structuredContent"]["id"], "view": view, "max_tokens": 20000},
                    )
                    shown.append(json.dumps(page))
                seen = "\n".join(shown)
                assert "Harrowgate" in seen  # Bob's own source is there
                assert ALICE_QUERY not in seen and "Ostravel" not in seen and "1712" not in seen

            # The 2026-07-28 envelope, with no session: Bob is Bob still.
            for method in ("tasks/get", "tasks/cancel"):
                answer = await modern_request(server.url, BOB, method, {"taskId": task_id})
                assert answer.get("error", {}).get("code") == INVALID_PARAMS, (method, answer)
            async with session_of(server.url, ALICE) as alice:
                assert (await alice.result("tasks/get", {"taskId": task_id}))["status"] == "completed"
        finally:
            server.stop()


# Alice's question on a corpus document: its facts may be lent to Bob (any caller reads the corpus),
# its question may not reach him.
ALICE_ASKS = "Which guild of masons raised the Quillfeather aqueduct for Ostravel?"
STATUS = "research://corpus/status"


async def corpus_ready(session: RawSession) -> None:
    with anyio.fail_after(300):
        while True:
            read = await session.result("resources/read", {"uri": STATUS})
            if json.loads(read["contents"][0]["text"])["phase"] in ("ready", "stopped", "failed"):
                return
            await anyio.sleep(0.1)


async def finished(session: RawSession, database: Path, plan: dict[str, Any]) -> str:
    """Run the plan to its end; the run's id."""
    run = await session.call("execute_plan", {"plan_id": plan["structuredContent"]["id"], "wait_seconds": 30})
    run_id = str(run["structuredContent"]["id"])
    await until(lambda: run_status(database, run_id) in ("done", "failed"))
    assert run_status(database, run_id) == "done"
    return run_id


async def test_a_fact_lent_to_another_user_reaches_their_synthesizer_without_the_question(
    tmp_path: Path,
) -> None:
    home, corpus = tmp_path / "home", tmp_path / "corpus"
    home.mkdir()
    corpus.mkdir()
    (corpus / "aqueduct.txt").write_text(ALICE_TEXT, encoding="utf-8")
    database = home / "research.db"
    with TeamMessagesAPI(one_leaf(ALICE_QUERY, ALICE_TEXT), delay=0.0) as api:
        port = free_port()
        env = {**team_env(api), "RESEARCH_MCP_CORPUS": str(corpus)}
        server = start_server(f"127.0.0.1:{port}", home, port, **env)
        try:
            async with session_of(server.url, ALICE) as alice:
                await corpus_ready(alice)
                leaf = {"kind": "leaf", "title": "aqueduct", "questions": [ALICE_ASKS]}  # searches the corpus
                plan = {"root": {"kind": "executor", "title": "aqueduct", "children": [leaf]}}
                await finished(
                    alice,
                    database,
                    await alice.call("plan_research", {"query": ALICE_ASKS, "suggested_plan": plan}),
                )
            with read_only(database) as conn:
                asked = {row[0] for row in conn.execute("SELECT question FROM facts")}
            assert ALICE_ASKS in asked  # Alice's facts were found for her question

            sent = len(api.requests)
            async with session_of(server.url, BOB) as bob:
                plan = one_leaf(BOB_QUERY, BOB_TEXT)
                plan["root"]["children"][0]["budget"] = {"max_sources": 1}  # its own text, no second hop
                run_id = await finished(
                    bob,
                    database,
                    await bob.call("plan_research", {"query": BOB_QUERY, "suggested_plan": plan}),
                )
                with read_only(database) as conn:
                    syntheses = [
                        row[0]
                        for row in conn.execute(
                            "SELECT id FROM handoffs WHERE run_id = ? AND role = 'synthesizer'", (run_id,)
                        )
                    ]
                shown = [json.dumps(await bob.call("run_view", {"run_id": run_id}))]
                for handoff_id in syntheses:
                    page = await bob.call(
                        "report_results", {"id": handoff_id, "view": "handoff", "max_tokens": 20000}
                    )
                    shown.append(json.dumps(page))
                for view in ("report", "facts", "gaps", "followups"):
                    page = await bob.call("report_results", {"id": run_id, "view": view, "max_tokens": 20000})
                    shown.append(json.dumps(page))
        finally:
            server.stop()
        prompts = [
            json.dumps(request.json)
            for request in api.requests[sent:]
            if isinstance(request.json, dict)
            and request.json["tools"][0]["input_schema"].get("title") == "SynthesisOutput"
        ]
    seen = "\n".join(shown)
    assert prompts and syntheses
    assert "Ostravel" in seen and "Ostravel" in "\n".join(prompts)  # Alice's corpus facts were lent
    assert ALICE_ASKS not in seen
    assert ALICE_ASKS not in "\n".join(prompts)

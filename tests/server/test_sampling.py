"""With no API key, a host that supports sampling serves the research with its own model."""

from __future__ import annotations

import json
import re
from typing import Any

import mcp.types as types
import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished

SOURCE = (
    "The Hubble Space Telescope was launched in 1990 aboard the shuttle Discovery. "
    "It orbits Earth at an altitude of about 540 kilometres."
)


class HostModel:
    """A host's model answering by role, as a sampling callback; its first extractor answer is malformed."""

    def __init__(self) -> None:
        self.requests: list[types.CreateMessageRequestParams] = []
        self.malformed_sent = False

    async def __call__(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.requests.append(params)
        system = params.system_prompt or ""
        prompt = params.messages[0].content.text  # type: ignore[union-attr]
        if system.startswith("You are the planner"):
            leaf = {
                "kind": "leaf",
                "title": "Hubble",
                "questions": ["When was Hubble launched?"],
                "sources": [SOURCE],
            }
            answer: Any = {"root": {"kind": "executor", "title": "Hubble", "children": [leaf]}}
        elif system.startswith("You are an extractor"):
            if not self.malformed_sent:
                self.malformed_sent = True
                return self.reply('Here are the facts: {"facts": []}')  # no confidence: invalid
            quote = "The Hubble Space Telescope was launched in 1990 aboard the shuttle Discovery."
            answer = {
                "facts": [{"statement": "Hubble launched in 1990.", "quote": quote, "question_index": 0}],
                "answers": [{"question": "When was Hubble launched?", "answer": "1990", "fact_indexes": [0]}],
                "confidence": {"level": "high", "reasoning": "stated"},
            }
        else:
            ids = re.findall(r"\[F(\d+)\]", prompt)
            answer = {
                "report": f"Hubble was launched in 1990 [F{ids[0]}].",
                "confidence": {"level": "medium", "reasoning": "one source"},
            }
        return self.reply(json.dumps(answer))

    @staticmethod
    def reply(text: str) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=text),
            model="host-model",
            stop_reason="endTurn",
        )


async def test_a_sampling_host_serves_a_whole_run_and_a_malformed_answer_is_repaired() -> None:
    host = HostModel()
    async with Client(create_server(), mode="legacy", sampling_callback=host) as client:
        plan = await client.call_tool("plan_research", {"query": "When was Hubble launched?"})
        assert plan.structured_content["backend"] == "sampling", plan.content
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 20}
            ),
        )
        assert run.structured_content["status"] == "done", run.content
        assert run.structured_content["backend"] == "sampling"
        report = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "report"}
        )
    assert "Hubble was launched in 1990 [F" in report.structured_content["text"]
    extractor_turns = [r for r in host.requests if (r.system_prompt or "").startswith("You are an extractor")]
    assert len(extractor_turns) == 2
    repair = extractor_turns[1].messages[-1].content.text  # type: ignore[union-attr]
    assert "did not validate" in repair and "confidence" in repair
    assert "JSON schema" in (extractor_turns[0].system_prompt or "")
    calls = Store(Settings().database_path).db.execute("SELECT SUM(calls) FROM model_calls").fetchone()[0]
    assert calls == len(host.requests)


async def test_a_host_that_never_answers_a_sampling_request_fails_the_call_instead_of_hanging() -> None:
    import anyio

    from research_mcp.core.contracts import ExtractorOutput
    from research_mcp.core.errors import ModelError
    from research_mcp.llm.base import ModelRequest
    from research_mcp.llm.sampling import SamplingModel

    class SilentSession:
        async def create_message(self, *args: Any, **kwargs: Any) -> Any:
            await anyio.sleep_forever()

    model = SamplingModel(SilentSession(), timeout=0.2)
    request = ModelRequest(role="extractor", system="s", prompt="p", output_type=ExtractorOutput)
    with pytest.raises(ModelError, match="did not answer the extractor within"):
        await model.generate(request)

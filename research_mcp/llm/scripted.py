"""A scripted model: a function stands in for the language model, behind the same protocol.

Part of the design, not only of the tests (as pydantic-ai's FunctionModel): tests and benchmarks
swap it in at the one seam where a backend is chosen. It records every request it serves.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel

from research_mcp.core.ids import fact_label
from research_mcp.llm.base import Generation, ModelRequest, OutputT, Usage, validated

__all__ = ["ScriptedModel"]

Script = Callable[[ModelRequest[Any]], Any] | Callable[[ModelRequest[Any]], Awaitable[Any]]


@dataclass
class ScriptedModel:
    """Answers each request with `script(request)`: a model instance or a dict validated like any answer.

    `latency` seconds are slept per call (for benchmarks); tokens are estimated from text length so
    that budgets and cost accounting have something to count.
    """

    script: Script
    latency: float = 0.0
    name: str = "scripted"
    model: str = "scripted-model"
    calls: list[ModelRequest[Any]] = field(default_factory=list)

    def model_for(self, role: str) -> str:
        return self.model

    async def generate(self, request: ModelRequest[OutputT]) -> Generation[OutputT]:
        """One scripted answer, validated like any model's."""
        self.calls.append(request)
        if self.latency:
            await anyio.sleep(self.latency)
        answer = self.script(request)
        if isinstance(answer, Awaitable):
            answer = await answer
        raw = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else answer
        feedback = len(request.repairs[-1].feedback) if request.repairs else 0
        tokens_in = (len(request.system) + len(request.prompt) + feedback) // 4
        tokens_out = len(str(raw)) // 4
        usage = Usage(model=self.model, tokens_in=tokens_in, tokens_out=tokens_out, calls=1)
        return validated(request, raw, usage, answer=raw)

    def calls_for(self, role: str) -> list[ModelRequest[Any]]:
        return [call for call in self.calls if call.role == role]


def team_script(request: ModelRequest[Any]) -> BaseModel:
    """A plausible answer for each role, made from the request's typed payload (like pydantic-ai's TestModel).

    Planner: one leaf asking the query. Extractor: the first sentences of the source as facts with
    verbatim quotes. Synthesizer: a report citing every fact it was given. Scout: candidates in order.
    """
    from research_mcp.core.contracts import (
        Answer,
        ClaimedFact,
        Confidence,
        ExtractorOutput,
        Finding,
        PlannerOutput,
        PlanNode,
        RankedCandidate,
        ScoutOutput,
        SynthesisOutput,
    )
    from research_mcp.core.role_inputs import ExtractorPayload, PlannerInput, ScoutInput, SynthesisPayload

    payload = request.payload
    if isinstance(payload, PlannerInput):
        if payload.suggested_plan is not None:
            return payload.suggested_plan
        leaf = PlanNode(kind="leaf", title=payload.query[:200], questions=[payload.query[:500]])
        return PlannerOutput(root=PlanNode(kind="executor", title=payload.query[:200], children=[leaf]))
    if isinstance(payload, ExtractorPayload):
        sentences = [
            s.strip() for s in payload.source_text.replace("\n", " ").split(". ") if len(s.strip()) > 20
        ]
        facts = [ClaimedFact(statement=s[:900], quote=s[:1400], question_index=0) for s in sentences[:3]]
        answers = [
            Answer(
                question=q[:500],
                answer=facts[0].statement if facts else "not found",
                fact_indexes=[0] if facts else [],
            )
            for q in payload.questions
        ]
        return ExtractorOutput(
            facts=facts, answers=answers, confidence=Confidence(level="medium", reasoning="scripted")
        )
    if isinstance(payload, SynthesisPayload):
        lines = [f"- {fact.statement[:200]} [{fact_label(fact.id)}]" for fact in payload.facts[:20]]
        lines += [f"- {child.title}: {child.report[:300]}" for child in payload.child_reports]
        report = f"# {payload.title}\n\n" + ("\n".join(lines) or "No findings.")
        if outline := _outline(request.prompt):  # a section per heading, each part's report under its own
            said = {child.title: child.report[:300] for child in payload.child_reports}
            body = [f"## {heading}\n\n{said.get(heading, chr(10).join(lines[:5]))}" for heading in outline]
            report = f"# {payload.title}\n\n" + "\n\n".join(body)
        findings = [Finding(statement=fact.statement[:900], fact_ids=[fact.id]) for fact in payload.facts[:5]]
        gaps = [] if payload.facts or payload.child_reports else list(payload.questions[:3])
        return SynthesisOutput(
            report=report[:20000],
            key_findings=findings,
            gaps=gaps,
            confidence=Confidence(level="high" if len(payload.facts) > 2 else "low", reasoning="scripted"),
        )
    if isinstance(payload, ScoutInput):
        ranked = [
            RankedCandidate(index=c.index, score=max(0.0, 1 - c.index / 20)) for c in payload.candidates[:20]
        ]
        return ScoutOutput(ranked=ranked)
    raise TypeError(f"team_script has no answer for {request.output_type.__name__}")


def _outline(prompt: str) -> list[str]:
    """The section headings of an outline the prompt gives ("1. ## Title: what it asks"), in order."""
    if "\nOutline:" not in prompt:
        return []
    tail = prompt.split("\nOutline:", 1)[1]
    return [match.split(":", 1)[0].strip() for match in re.findall(r"^\d+\. ## (.+)$", tail, re.M)]

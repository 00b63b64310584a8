"""The extractor: one source and its questions into facts with checked verbatim quotes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import anyio

from research_mcp.citations import CitationChecker, QuoteLocator, meaningful_quote
from research_mcp.contracts import ExtractorOutput, ExtractorTaskSpec, Source
from research_mcp.role_inputs import ExtractorInput, ExtractorPayload
from research_mcp.roles.base import RoleDeps, RoleResult, cache_key, perform
from research_mcp.roles.framing import frame
from research_mcp.storage.models import NewFact
from research_mcp.storage.outputs import StoredExtraction, StoredOutput

__all__ = ["MAX_QUESTIONS", "MAX_SOURCE_CHARS", "asked_questions", "extract", "insight_triggers"]

# What a model reads of one source; longer texts are cut here and the cut is said in the prompt.
MAX_SOURCE_CHARS = 60_000
MAX_QUESTIONS = 10
_LIMITATIONS = re.compile(
    r"^\s*(#+\s*)?(\d+(\.\d+)*\s*)?(limitations?|future work|threats to validity)\b", re.I | re.M
)


def insight_triggers(
    output: ExtractorOutput, source_text: str, task_spec: ExtractorTaskSpec | None
) -> list[str]:
    """Why this extraction may carry insights (follow-ups, gaps, linked sources); empty: it may not."""
    triggers = []
    if output.confidence.level == "low" or any(fact.confidence < 0.4 for fact in output.facts):
        triggers.append("low confidence")
    if _LIMITATIONS.search(source_text):
        triggers.append("limitations section")
    if "contradict" in output.confidence.reasoning.lower():
        triggers.append("contradiction")
    if task_spec is not None and task_spec.discovery_intense:
        triggers.append("discovery_intense")
    return triggers


def _prompt(payload: ExtractorPayload, truncated: bool) -> str:
    lines = ["Questions:"]
    lines += [f"{index}. {question}" for index, question in enumerate(payload.questions)]
    if payload.task_spec is not None:
        lines.append(
            "Task spec (follow it exactly):\n" + payload.task_spec.model_dump_json(exclude_defaults=True)
        )
    if payload.context:
        lines.append("Context from the research so far:\n" + payload.context)
    note = " (truncated: only the beginning of the source is shown)" if truncated else ""
    # The title is page metadata, as untrusted as the text: it goes inside the frame with it.
    lines.append(f"Source S{payload.source_id}{note}:")
    header = f"Title: {payload.source_title}\n" if payload.source_title else ""
    lines.append(
        frame(
            f"SOURCE S{payload.source_id}", f"{header}Address: {payload.source_ref}\n\n{payload.source_text}"
        )
    )
    return "\n".join(lines)


def _summary(output: ExtractorOutput) -> list[str]:
    answered = sum(1 for answer in output.answers if answer.fact_indexes)
    return [
        f"{len(output.facts)} facts; {answered}/{len(output.answers)} questions answered; "
        f"confidence {output.confidence.level}"
    ]


def asked_questions(
    task_spec: ExtractorTaskSpec | None, questions: Sequence[str], added: Sequence[str] = ()
) -> list[str]:
    """The questions an extraction asks: the task spec's (else the leaf's), then those an iteration
    added, without repeats, at most MAX_QUESTIONS."""
    own = list(task_spec.questions) if task_spec is not None else list(questions)
    return list(dict.fromkeys([*own, *added]))[:MAX_QUESTIONS]


async def extract(
    deps: RoleDeps,
    source: Source,
    *,
    questions: list[str] | None = None,
    task_spec: ExtractorTaskSpec | None = None,
    context: str = "",
    run_id: str | None = None,
    node_id: str | None = None,
    iteration: int = 0,
    added_questions: Sequence[str] = (),
) -> RoleResult[ExtractorOutput]:
    """Extract facts from one source. With a task spec, its questions are the ones asked, verbatim,
    followed by `added_questions` (what a later iteration asks: missing themes, gaps), never dropped."""
    asked = asked_questions(task_spec, questions or [], added_questions)
    extractor_input = ExtractorInput(
        source_id=source.id,
        source_ref=source.ref,
        source_title=source.title,
        questions=asked,
        task_spec=task_spec,
        context=context,
    )
    truncated = len(source.text) > MAX_SOURCE_CHARS
    payload = ExtractorPayload(**extractor_input.model_dump(), source_text=source.text[:MAX_SOURCE_CHARS])

    recorded: list[int] = []

    def finish(handoff_id: str, output: ExtractorOutput) -> dict[str, Any]:
        new_facts = []
        locator = QuoteLocator(source.text)
        for fact in output.facts:
            # A quote verifies only as a meaningful span bearing on the statement ("the" is everywhere).
            span = locator.find(fact.quote) if meaningful_quote(fact.quote, fact.statement) else None
            question = None
            if fact.question_index is not None and fact.question_index < len(asked):
                question = asked[fact.question_index]
            new_facts.append(
                NewFact(
                    source_id=source.id,
                    statement=fact.statement,
                    quote=fact.quote,
                    start=span[0] if span else None,
                    end=span[1] if span else None,
                    question=question,
                    confidence=fact.confidence,
                    verified=span is not None,
                )
            )
        fact_ids = deps.store.add_facts(run_id, handoff_id, new_facts)
        recorded.extend(fact_ids)
        triggers = insight_triggers(output, source.text, task_spec)
        # An extraction cites no fact ids: any citation-like token in its free text is forged.
        checker = CitationChecker(allowed=(), verified=(), links=None)
        output.source_identified_gaps = checker.texts(output.source_identified_gaps)
        for item in output.follow_up_questions:
            item.question = checker.text(item.question)
            item.rationale = checker.text(item.rationale)
        if not triggers:
            output.follow_up_questions.clear()
            output.source_identified_gaps.clear()
            output.linked_candidate_sources.clear()
        verified = sum(1 for fact in new_facts if fact.verified)
        return {
            "fact_ids": fact_ids,
            "verified": verified,
            "unverified": len(new_facts) - verified,
            "insight_triggers": triggers,
            "source_id": source.id,
            "follow_up_questions": [item.model_dump() for item in output.follow_up_questions],
            "source_identified_gaps": list(output.source_identified_gaps),
            "linked_candidate_sources": [item.model_dump() for item in output.linked_candidate_sources],
        }

    def reuse(handoff_id: str, output: StoredOutput) -> None:
        if deps.knowledge is not None and isinstance(output, StoredExtraction):
            deps.knowledge.relink(handoff_id, output.fact_ids)

    # The same text asked the same way by the same model and prompt: the earlier answer is reused.
    reuse_key = cache_key(
        deps,
        "extractor",
        {
            "content_hash": source.content_hash,
            "questions": asked,
            "task_spec": task_spec.model_dump(mode="json") if task_spec is not None else None,
            "context": context,
            "max_source_chars": MAX_SOURCE_CHARS,
        },
    )
    result = await perform(
        deps,
        role="extractor",
        input=extractor_input,
        payload=payload,
        output_type=ExtractorOutput,
        prompt=_prompt(payload, truncated),
        summarize=_summary,
        finish=finish,
        reuse_key=reuse_key,
        on_reuse=reuse,
        run_id=run_id,
        node_id=node_id,
        iteration=iteration,
    )
    if deps.knowledge is not None and recorded:
        # After the commit: near-duplicates of known facts merged, the others indexed (it embeds).
        # Shielded: a committed extraction is merged and indexed whole even when the run is cancelled
        # now, so a resumed run sees its facts as an uninterrupted one would (a few facts: quick).
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(deps.knowledge.merge_or_index, recorded)
    return result

"""The extractor: one source and its questions into facts with checked verbatim quotes."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import anyio

from research_mcp.core.citations import (
    CitationChecker,
    QuoteLocator,
    cited_in,
    links_in,
    meaningful_quote,
    whole_field_line,
)
from research_mcp.core.contracts import ExtractorOutput, ExtractorTaskSpec, Fact, Source
from research_mcp.core.ids import source_label
from research_mcp.core.role_inputs import ExtractorInput, ExtractorPayload
from research_mcp.roles.acceptance import summary_asked
from research_mcp.roles.base import HandoffContext, Place, Role, RoleDeps, RoleResult, cache_key, perform
from research_mcp.roles.framing import frame
from research_mcp.storage.models import NewInsight
from research_mcp.storage.outputs import StoredExtraction, StoredOutput

__all__ = [
    "MAX_QUESTIONS",
    "MAX_SOURCE_CHARS",
    "SUMMARY_FACTS",
    "Extraction",
    "SpecSpending",
    "asked_questions",
    "extract",
    "insight_triggers",
    "located_facts",
]

# What a model reads of one source; longer texts are cut here and the cut is said in the prompt.
MAX_SOURCE_CHARS = 60_000
MAX_QUESTIONS = 10
#: Facts an extraction keeps when its task spec asks for a summary (the concise-summary mode).
SUMMARY_FACTS = 5
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
    lines.append(f"Source {source_label(payload.source_id)}{note}:")
    header = f"Title: {payload.source_title}\n" if payload.source_title else ""
    lines.append(
        frame(
            f"SOURCE {source_label(payload.source_id)}",
            f"{header}Address: {payload.source_ref}\n\n{payload.source_text[:MAX_SOURCE_CHARS]}",
        )
    )
    return "\n".join(lines)


def _summary(output: ExtractorOutput, concise: tuple[int, int] | None = None) -> list[str]:
    answered = sum(1 for answer in output.answers if answer.fact_indexes)
    mode = f" (summary mode: {concise[0]} of {concise[1]} facts kept)" if concise else ""
    return [
        f"{len(output.facts)} facts; {answered}/{len(output.answers)} questions answered; "
        f"confidence {output.confidence.level}{mode}"
    ]


def _concise(output: ExtractorOutput) -> tuple[int, int] | None:
    """The concise-summary mode: at most SUMMARY_FACTS facts, each question's best first, then the
    most confident; the answers cite the facts kept. Returns (kept, given) when facts were dropped."""
    given = len(output.facts)
    if given <= SUMMARY_FACTS:
        return None
    ranked = sorted(range(given), key=lambda i: (-output.facts[i].confidence, i))
    keep: list[int] = []
    for index in ranked:  # each question's best fact first
        question = output.facts[index].question_index
        if all(output.facts[k].question_index != question for k in keep):
            keep.append(index)
    keep += [index for index in ranked if index not in keep]
    kept = sorted(keep[:SUMMARY_FACTS])
    position = {old: new for new, old in enumerate(kept)}
    output.facts = [output.facts[index] for index in kept]
    for answer in output.answers:
        answer.fact_indexes = [position[i] for i in answer.fact_indexes if i in position]
    return len(kept), given


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
    known: Sequence[str] = (),
) -> RoleResult[ExtractorOutput]:
    """Extract facts from one source. With a task spec, its questions are the ones asked, verbatim,
    followed by `added_questions` (what a later iteration asks: missing themes, gaps), never dropped.

    `known`: what earlier research established elsewhere, told to the extractor before `context`.
    It grows with every run, so it is left out of the reuse key: the same source asked the same
    questions in the same context is not asked again because more became known elsewhere."""
    told = context
    if known:
        told = "\n".join(
            [
                "Already known (look for what adds to it or contradicts it):",
                *(f"- {statement}" for statement in known),
                *([context] if context else []),
            ]
        )
    extractor_input = ExtractorInput(
        source_id=source.id,
        source_ref=source.ref,
        source_title=source.title,
        questions=asked_questions(task_spec, questions or [], added_questions),
        task_spec=task_spec,
        context=told,
    )
    role = Extraction(source, extractor_input, context)
    result = await perform(deps, role, Place(run_id, node_id, iteration))
    stored = result.stored
    if (
        deps.knowledge is not None
        and isinstance(stored, StoredExtraction)
        and not stored.cached
        and stored.fact_ids
    ):
        # After the commit: near-duplicates of known facts merged, the others indexed (it embeds).
        # Shielded: a committed extraction is merged and indexed whole even when the run is cancelled
        # now, so a resumed run sees its facts as an uninterrupted one would (a few facts: quick).
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(deps.knowledge.merge_or_index, list(stored.fact_ids))
    return result


class Extraction(Role[ExtractorOutput, StoredExtraction]):
    """One source asked its questions; the check stores the facts, each quote looked up in the text."""

    name = "extractor"
    output_type = ExtractorOutput
    stored_type = StoredExtraction

    def __init__(self, source: Source, asked: ExtractorInput, context: str) -> None:
        self.source = source
        self.context = context  # without what is known: the reuse key leaves that out
        self.truncated = len(source.text) > MAX_SOURCE_CHARS
        # The whole text: the no-key extractor ranks every passage of a long manual (a 600-page PDF's
        # answer is rarely in its first pages); a model is shown its first MAX_SOURCE_CHARS (`_prompt`).
        payload = ExtractorPayload(**asked.model_dump(), source_text=source.text)
        super().__init__(asked, payload)
        self.asked = asked
        self.concise: tuple[int, int] | None = None

    def prompt(self) -> str:
        assert isinstance(self.payload, ExtractorPayload)
        return _prompt(self.payload, self.truncated)

    def summary(self, output: ExtractorOutput) -> list[str]:
        return _summary(output, self.concise)

    def reuse_key(self, deps: RoleDeps) -> str:
        # The same text asked the same way by the same model and prompt: the earlier answer is reused.
        task_spec = self.asked.task_spec
        return cache_key(
            deps,
            self.name,
            {
                "content_hash": self.source.content_hash,
                "questions": self.asked.questions,
                "task_spec": task_spec.model_dump(mode="json") if task_spec is not None else None,
                "context": self.context,
                "max_source_chars": MAX_SOURCE_CHARS,
            },
        )

    def reused(self, context: HandoffContext, stored: StoredOutput) -> None:
        if context.deps.knowledge is not None and isinstance(stored, StoredExtraction):
            context.deps.knowledge.relink(context.handoff_id, stored.fact_ids)

    def check(self, context: HandoffContext, output: ExtractorOutput) -> StoredExtraction:
        task_spec, source = self.asked.task_spec, self.source
        if summary_asked(task_spec):
            self.concise = _concise(output)
        new_facts = located_facts(source, output, self.asked.questions)
        fact_ids = context.deps.store.add_facts(context.run_id, context.handoff_id, new_facts)
        triggers = insight_triggers(output, source.text, task_spec)
        _scrub_insights(output, source.text, keep=bool(triggers))
        # Kept in the knowledge base with the source, for later runs (runs/prior.py).
        context.deps.store.add_insights(context.run_id, context.handoff_id, _insights(source, output))
        verified = sum(1 for fact in new_facts if fact.verified)
        return self.stored(
            output,
            fact_ids=fact_ids,
            verified=verified,
            unverified=len(new_facts) - verified,
            insight_triggers=triggers,
            source_id=source.id,
        )


def located_facts(source: Source, output: ExtractorOutput, asked: Sequence[str]) -> list[Fact]:
    """The facts the answer claims, as stored: each quote looked up in the source's text."""
    locator = QuoteLocator(source.text)
    new_facts = []
    for fact in output.facts:
        # A quote verifies only as a meaningful span bearing on the statement ("the" is everywhere).
        span = locator.find(fact.quote)
        if span and not meaningful_quote(
            fact.quote, fact.statement, field=whole_field_line(source.text, span)
        ):
            span = None
        question = None
        if fact.question_index is not None and fact.question_index < len(asked):
            question = asked[fact.question_index]
        new_facts.append(
            Fact(
                source_id=source.id,
                statement=fact.statement,
                quote=fact.quote,
                location=span,
                question=question,
                confidence=fact.confidence,
                verified=span is not None,
            )
        )
    return new_facts


def _scrub_insights(output: ExtractorOutput, source_text: str, *, keep: bool) -> None:
    """An extraction cites no fact ids: any citation-like token in its free text is forged. Without
    a trigger (see `insight_triggers`) it carries no insights at all.

    A linked source is kept only when the source's own text gives its reference, whole
    (`cited_in`), and a free text keeps only the links the source writes: a model, or a page
    steering it, never composes an address for the research to fetch or a reader to follow, such as
    one carrying a private note's words to a sink (SECURITY.md, "Data leaving through a link")."""
    checker = CitationChecker(allowed=(), verified=(), links=links_in(source_text))
    output.source_identified_gaps = checker.texts(output.source_identified_gaps)
    for item in output.follow_up_questions:
        item.question = checker.text(item.question)
        item.rationale = checker.text(item.rationale)
    output.linked_candidate_sources = [
        link for link in output.linked_candidate_sources if cited_in(source_text, link.ref)
    ]
    for link in output.linked_candidate_sources:
        link.context = checker.text(link.context)
    if not keep:
        output.follow_up_questions.clear()
        output.source_identified_gaps.clear()
        output.linked_candidate_sources.clear()


def _insights(source: Source, output: ExtractorOutput) -> list[NewInsight]:
    """What one extraction said its source leaves open, with that source."""
    return [
        *(
            NewInsight(source_id=source.id, ref=source.ref, kind="source_gap", text=gap)
            for gap in output.source_identified_gaps
        ),
        *(
            NewInsight(
                source_id=source.id,
                ref=source.ref,
                kind="follow_up",
                text=item.question,
                context=item.rationale,
            )
            for item in output.follow_up_questions
        ),
        *(
            NewInsight(
                source_id=source.id, ref=source.ref, kind="linked_source", text=link.ref, context=link.context
            )
            for link in output.linked_candidate_sources
        ),
    ]


class SpecSpending:
    """What a node's extractions for one task spec have used of the spec's own budget: the sources
    asked with it, and the tokens and cost they spent (read from the store, so a resumed run counts
    what it spent before)."""

    def __init__(self, deps: RoleDeps, run_id: str, node_id: str, spec: ExtractorTaskSpec) -> None:
        self.spec = spec
        self.refs: set[str] = set()
        self.tokens = 0
        self.cost_usd = 0.0
        for handoff in deps.store.handoffs_for_run(run_id, role="extractor", node_id=node_id):
            asked = handoff.input_as(ExtractorInput)
            if asked is not None and asked.task_spec == spec:
                self.refs.add(asked.source_ref)
                self.tokens += handoff.tokens_in + handoff.tokens_out
                self.cost_usd += handoff.cost_usd

    @property
    def metered(self) -> bool:
        """Whether the spec limits tokens or cost (its extractions are then made one at a time)."""
        budget = self.spec.budget
        return budget is not None and (budget.max_tokens is not None or budget.max_cost_usd is not None)

    def add(self, tokens: int, cost_usd: float) -> None:
        self.tokens += tokens
        self.cost_usd += cost_usd

    def allowed(self, refs: Sequence[str]) -> set[str]:
        """Of `refs`, those the spec may be asked of: those it was asked of already, then new ones in
        order while its `max_sources` allows."""
        budget = self.spec.budget
        if budget is None or budget.max_sources is None:
            return set(refs)
        left = max(budget.max_sources - len(self.refs), 0)
        new = [ref for ref in dict.fromkeys(refs) if ref not in self.refs][:left]
        return {ref for ref in refs if ref in self.refs} | set(new)

    def refused(self, ref: str, allowed: set[str], already_read: Collection[str] = ()) -> str | None:
        """Why the spec may not be asked of `ref` now, or None: its sources, tokens or cost spent.
        A source already read (asked again by an iteration) is not a new source."""
        budget = self.spec.budget
        if budget is None:
            return None
        if ref not in allowed and ref not in already_read:
            return f"its budget of {budget.max_sources} sources was reached"
        if budget.max_tokens is not None and self.tokens >= budget.max_tokens:
            return f"its {self.tokens} of {budget.max_tokens} tokens spent"
        if budget.max_cost_usd is not None and self.cost_usd >= budget.max_cost_usd:
            return f"its ${self.cost_usd:.4f} of ${budget.max_cost_usd:.4f} spent"
        return None

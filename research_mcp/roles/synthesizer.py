"""The synthesizer: the full handoffs below it, read from the store, into a report citing fact ids.

The check of its answer is code's: the citations kept are those in scope, and the gaps
(roles/synthesis_gaps.py), what is written into the report (roles/synthesis_report.py) and the
confidence caps the evidence shows are added whatever the backend said. Its prompt is written by
roles/synthesis_prompt.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from research_mcp.core.citations import CitationChecker, normalize
from research_mcp.core.contracts import Confidence, ConfidenceLevel, ExtractorTaskSpec, Fact, SynthesisOutput
from research_mcp.core.gaps import Gap
from research_mcp.core.role_inputs import SourceInsight, SynthesisInput, SynthesisPayload
from research_mcp.roles.acceptance import cited_facts, judge, numbered_criteria, reshape
from research_mcp.roles.base import HandoffContext, Place, Role, RoleDeps, RoleResult, cache_key, perform
from research_mcp.roles.confidence_words import gated_confidence, plain_confidence
from research_mcp.roles.contradictions import Disagreement, disagreements
from research_mcp.roles.evidence import Evidence, cap_confidence, judge_evidence
from research_mcp.roles.followups import followups
from research_mcp.roles.items import ItemScope, facts_of_items
from research_mcp.roles.outline import outline_gaps, outline_prompt
from research_mcp.roles.synthesis_gaps import (
    acceptance_gaps,
    add_gaps,
    never_mentioned_caps,
    open_question,
    report_caps,
    still_open,
    unanswered_questions,
    unestablished_questions,
    unique_gaps,
)
from research_mcp.roles.synthesis_inputs import Inputs, known_insights, read_inputs, source_gaps
from research_mcp.roles.synthesis_prompt import synthesis_prompt
from research_mcp.roles.synthesis_report import (
    checked_texts,
    marked_unanswered,
    with_contradictions,
    with_failures,
)
from research_mcp.roles.synthesis_summary import synthesis_summary
from research_mcp.sources.library import coverage_said_once
from research_mcp.storage.models import KnownInsight
from research_mcp.storage.outputs import AcceptanceCheck, CitationCounts, ConfidenceCounts, StoredSynthesis

__all__ = ["gate_synthesis", "synthesize"]

MAX_FACTS = 150
MAX_FAILURE_CHARS = 400


def _source_links(deps: RoleDeps, facts: Sequence[Fact]) -> set[str]:
    """The addresses of the sources behind the facts in scope: the only links free text may keep."""
    refs = deps.store.source_refs({fact.source_id for fact in facts})
    return {ref for ref in refs.values() if "://" in ref}


def _scrubbed(insights: Sequence[SourceInsight], checker: CitationChecker) -> list[SourceInsight]:
    """What the sources leave open, its free text checked like the model's other free text (a gap a
    source names, kept across runs, may carry a foreign link or a forged citation); a source it
    cites is a source to read, and keeps its address."""
    return [
        item if item.kind == "link" else item.model_copy(update={"text": checker.text(item.text)})
        for item in insights
    ]


async def synthesize(
    deps: RoleDeps,
    *,
    title: str,
    questions: list[str],
    input_handoffs: list[str],
    run_id: str | None = None,
    node_id: str | None = None,
    iteration: int = 0,
    discovery: bool = False,
    prior_facts: Sequence[int] = (),
    failures: Sequence[str] = (),
    task_specs: Sequence[ExtractorTaskSpec] = (),
    notes: Sequence[str | Gap] = (),
    known: Sequence[KnownInsight] = (),
    outline: Sequence[str] = (),
    items: Mapping[str, ItemScope] | None = None,
) -> RoleResult[SynthesisOutput]:
    """`prior_facts`: known facts from earlier research (prior findings), citable like the others.

    `failures` names what this node could not research (a source not read, a search or a part that
    failed) and why; with those the lower syntheses carry, they are kept in the output, added to its
    gaps and listed under the report, so a failure is never silently left out.

    `task_specs` (a leaf's): the report is given in their expected format and their acceptance
    criteria are judged (roles/acceptance.py). Whatever the backend says, code adds the gaps it sees
    and caps the confidence by the evidence (roles/evidence.py); what the extractors said their
    sources leave open reaches the synthesizer and, by code, the gaps and follow-ups. `notes` names
    what the node left out on purpose (what a task spec's budget did not allow), added to the gaps.
    `known`: what sources read by earlier runs left open (kept in the knowledge base), bearing on
    the questions: given to the synthesizer with the others, and named in the gaps with the source.
    `outline`: the section headings the report is written in, in order; one it leaves out is a gap.
    `items`: the compared item each question asks about (roles/items.py): only facts about one of
    them are in scope, whether found below or given as prior findings, each under its item's
    question."""
    synthesis_input = SynthesisInput(
        title=title,
        questions=questions,
        input_handoffs=input_handoffs,
        discovery=discovery,
        task_specs=list(task_specs),
    )
    scope = _Scope.read(
        deps,
        input_handoffs,
        questions=questions,
        prior_facts=prior_facts,
        failures=failures,
        known=known,
        items=items or {},
    )
    said = unique_gaps(note if isinstance(note, Gap) else Gap(text=note) for note in notes)
    role = Synthesis(synthesis_input, scope, notes=said, outline=list(outline))
    return await perform(deps, role, Place(run_id, node_id, iteration))


class _Scope:
    """What a synthesis reads: the handoffs below, what earlier runs left open, and the facts in
    scope, ordered by what they say (not by their ids, the order parallel extractions finished in),
    so the same facts make the same payload, the same cut at MAX_FACTS and the same report."""

    def __init__(
        self, below: Inputs, earlier: list[SourceInsight], facts: list[Fact], found: set[int]
    ) -> None:
        self.below = below
        self.earlier = earlier
        self.insights = [*below.insights, *earlier]
        self.in_scope = len(facts)
        self.facts = sorted(
            facts,
            key=lambda f: (not f.verified, -f.corroborations, -f.confidence, normalize(f.statement), f.quote),
        )[:MAX_FACTS]
        self.allowed = {fact.id for fact in self.facts}
        self.verified = {fact.id for fact in self.facts if fact.verified}
        self.prior = sorted(self.allowed - found)
        self.failed: list[str] = []

    @classmethod
    def read(
        cls,
        deps: RoleDeps,
        input_handoffs: list[str],
        *,
        questions: Sequence[str],
        prior_facts: Sequence[int],
        failures: Sequence[str],
        known: Sequence[KnownInsight],
        items: Mapping[str, ItemScope],
    ) -> _Scope:
        below = read_inputs(deps, input_handoffs)

        def lent(fact_ids: Sequence[int]) -> list[Fact]:
            # Found by another user's research: without the question it asked (Store.as_lent).
            return deps.store.as_lent(deps.store.canonical_facts(fact_ids, questions), deps.caller, questions)

        facts = list({fact.id: fact for fact in lent(below.fact_ids)}.values())
        # Prior findings the inputs do not already hold (a leaf re-reading a source finds its own again).
        found = {fact.id for fact in facts}
        facts += [fact for fact in lent(prior_facts) if fact.id not in found]
        # A compared item's facts only: another item's sources, read for it, answer another section.
        facts = facts_of_items(facts, items, deps.store.get_source)
        scope = cls(below, known_insights(known, below.insights), facts, found)
        failed = [failure[:MAX_FAILURE_CHARS] for failure in [*below.failures, *failures]]
        scope.failed = coverage_said_once(list(dict.fromkeys(failed)))
        return scope


class Synthesis(Role[SynthesisOutput, StoredSynthesis]):
    """A node's facts and lower reports into one report; the check keeps only the citations in scope
    and adds, by code, the gaps, contradictions and confidence caps the evidence shows."""

    name = "synthesizer"
    output_type = SynthesisOutput
    stored_type = StoredSynthesis
    max_tokens = 8192

    def __init__(
        self, asked: SynthesisInput, scope: _Scope, *, notes: list[Gap], outline: list[str] | None = None
    ) -> None:
        payload = SynthesisPayload(
            **asked.model_dump(),
            facts=scope.facts,
            child_reports=scope.below.reports,
            insights=scope.insights,
        )
        super().__init__(asked, payload)
        self.asked, self.scope, self.notes = asked, scope, notes
        self.outline = outline or []
        self.disagreements: list[Disagreement] = []  # what code found between the sources (check)
        self.criteria = numbered_criteria(asked.task_specs)

    def prompt(self) -> str:
        assert isinstance(self.payload, SynthesisPayload)
        return synthesis_prompt(self.payload, self.criteria, self.scope.prior) + outline_prompt(self.outline)

    def summary(self, output: SynthesisOutput) -> list[str]:
        headlines = {disagreement.wording: disagreement.headline for disagreement in self.disagreements}
        return synthesis_summary(output, len(self.scope.failed), headlines=headlines)

    def reuse_key(self, deps: RoleDeps) -> str:
        # The same facts and reports, given the same way: the earlier synthesis is reused.
        return cache_key(
            deps,
            self.name,
            {
                "payload": self.payload.model_dump(mode="json", exclude={"input_handoffs"}),
                "prior": self.scope.prior,
                "failures": self.scope.failed,
                "carried": [gap.model_dump(mode="json") for gap in self.scope.below.evidence_gaps],
                "notes": [note.model_dump(mode="json") for note in self.notes],
                "outline": self.outline,
            },
        )

    def check(self, context: HandoffContext, output: SynthesisOutput) -> StoredSynthesis:
        scope, questions = self.scope, self.asked.questions
        for finding in output.key_findings:
            finding.fact_ids = [fact_id for fact_id in finding.fact_ids if fact_id in scope.allowed]
        # The expected format, given by code when the synthesis did not (before the citation check,
        # which then counts its citations as it counts the others).
        output.report, format_gaps = reshape(output.report, self.asked.task_specs, output.key_findings)
        links = _source_links(context.deps, scope.facts)
        checker = CitationChecker(scope.allowed, scope.verified, links=links)
        check = checker.result(checked_texts(output, checker))
        acceptance, evidence = self._judged(context.deps, output, check.report)
        found_gaps = self._found_gaps(evidence, acceptance, format_gaps, check.report, checker)
        disagreeing = self._new_contradictions(context.deps, output)
        unanswered = unanswered_questions(questions, found_gaps, self.notes)
        output.report = with_contradictions(
            with_failures(
                marked_unanswered(
                    check.report, unanswered, unestablished_questions([*found_gaps, *output.as_gaps()])
                ),
                scope.failed,
            ),
            disagreeing,
        )
        add_gaps(output, scope.failed, found_gaps)
        # Where to go next, from this run alone: never a question asked here or left open below,
        # never what an earlier run's sources left open (roles/followups.py).
        cited = set(check.cited)
        output.suggested_followups = followups(
            asked=questions,
            open_questions=[open_question(gap) for gap in [*found_gaps, *output.as_gaps()]],
            disagreements=self.disagreements,
            insights=_scrubbed(scope.below.insights, checker),
            read=scope.below.read_refs | links,
            cited=[fact for fact in scope.facts if fact.id in cited and fact.verified],
            title_of=lambda source_id: context.deps.store.get_source(source_id).title,
            suggested=output.suggested_followups,
        )
        evidence.caps += never_mentioned_caps(questions, [*self.notes, *found_gaps])
        output.confidence = evidence.cap(output.confidence)
        own_caps = report_caps(output, cites_verified=bool(check.verified))
        for cap in own_caps:
            output.confidence = cap_confidence(output.confidence, cap.level, cap.reason)
        # A person reads one plain sentence; the reasons rule by rule stay in the structured output.
        counts = self._counts(context.deps, output, check.cited, found_gaps)
        reasons = [output.confidence.reasoning]
        output.confidence = Confidence(
            level=output.confidence.level, reasoning=plain_confidence(output.confidence.level, counts)
        )
        return self.stored(
            output,
            confidence_reasons=reasons,
            confidence_caps=[cap.model_dump() for cap in [*evidence.caps, *own_caps]],
            confidence_counts=counts.model_dump(),
            failures=scope.failed,
            fact_ids=sorted(scope.allowed),
            cited=check.cited,
            citations=CitationCounts(
                made=check.made,
                verified=check.verified,
                dropped=check.dropped,
                links_dropped=check.links_dropped,
            ).model_dump(),
            prior_fact_ids=scope.prior,
            acceptance=[item.model_dump() for item in acceptance],
            evidence_gaps=[gap.model_dump(mode="json") for gap in found_gaps],
            typed_gaps=[gap.model_dump(mode="json") for gap in output.as_gaps()],
            insights=[item.model_dump() for item in scope.insights],
        )

    def _found_gaps(
        self,
        evidence: Evidence,
        acceptance: Sequence[AcceptanceCheck],
        format_gaps: Sequence[str],
        report: str,
        checker: CitationChecker,
    ) -> list[Gap]:
        """What code knows is missing, whatever the backend said: unanswered questions, cut lists,
        criteria unmet or unchecked, what the sources say they leave open, and the same from below."""
        scope, questions = self.scope, self.asked.questions
        return unique_gaps(
            [
                *evidence.gaps,
                *self.notes,
                *(Gap(kind="requirement", text=gap) for gap in format_gaps),
                *(Gap(text=gap) for gap in outline_gaps(self.outline, report)),
                *acceptance_gaps(acceptance),
                *source_gaps(_scrubbed(scope.below.insights, checker), questions),
                *source_gaps(_scrubbed(scope.earlier, checker), questions),
                *still_open(scope.below.evidence_gaps, scope.facts),
            ]
        )

    def _new_contradictions(self, deps: RoleDeps, output: SynthesisOutput) -> list[str]:
        """The contradictions between verified facts that code can see and the backend did not give:
        added to the output's, and returned to be listed under the report. Copies of one document
        are one source: a copy neither contradicts nor settles (copies.py)."""
        facts = self.scope.facts
        copies = deps.store.source_copies({fact.source_id for fact in facts if fact.verified})
        self.disagreements = disagreements(facts, copies)
        found = [disagreement.wording for disagreement in self.disagreements]
        disagreeing = [wording for wording in found if wording not in output.contradictions]
        output.contradictions += disagreeing
        return disagreeing

    def _counts(
        self, deps: RoleDeps, output: SynthesisOutput, cited_ids: Sequence[int], gaps: Sequence[Gap]
    ) -> ConfidenceCounts:
        """What the confidence stands on, counted for the sentence a person reads."""
        questions = self.asked.questions
        said = [*gaps, *output.as_gaps()]
        unanswered = unanswered_questions(questions, said, self.notes)
        asked = {normalize(question).rstrip("?. ") for question in questions}
        unclear = (unestablished_questions(said) & asked) - unanswered
        cited = [fact for fact in self.scope.facts if fact.id in set(cited_ids) and fact.verified]
        copies = deps.store.source_copies({fact.source_id for fact in cited})
        return ConfidenceCounts(
            questions=len(questions),
            unanswered=len(unanswered & asked),
            unclear=len(unclear),
            cited_facts=len(cited),
            independent_sources=len(set(copies.values())),
            disagreements=len(output.contradictions),
            failed=len(self.scope.failed),
            corroborated=any(fact.corroborations > 1 for fact in cited),
        )

    def _judged(
        self, deps: RoleDeps, output: SynthesisOutput, report: str
    ) -> tuple[list[AcceptanceCheck], Evidence]:
        """The task specs' criteria judged on the checked report, and the evidence's gaps and caps."""
        facts = self.scope.facts
        source_of = _source_titles(deps)
        acceptance = judge(
            self.criteria,
            report=report,
            cited=cited_facts(report, facts),
            source_of=source_of,
            verdicts=output.criteria,
        )
        verified = [f.id for f in facts if f.verified]
        cited_in = {
            fact_id: [c.source_id for c in citations]
            for fact_id, citations in deps.store.citations(verified).items()
        }
        evidence = judge_evidence(
            self.asked.questions,
            facts,
            in_scope=self.scope.in_scope,
            read=len(facts),
            acceptance=acceptance,
            cited_in=cited_in,
        )
        return acceptance, evidence


def _source_titles(deps: RoleDeps) -> Callable[[int], tuple[str, str]]:
    """A source's address and title by its id, each read once; a corpus document's title with its
    path, which says what a "copyright" or a "README" is about ("doc/libzstd1/copyright")."""
    known: dict[int, tuple[str, str]] = {}

    def source_of(source_id: int) -> tuple[str, str]:
        if source_id not in known:
            source = deps.store.get_source(source_id)
            path = source.metadata.path
            title = (
                f"{path} ({source.title})"
                if path and source.title not in ("", path)
                else path or source.title
            )
            known[source_id] = (source.ref, title)
        return known[source_id]

    return source_of


def gate_synthesis(
    deps: RoleDeps,
    handoff_id: str,
    *,
    unmet: list[str],
    gaps: list[Gap],
    cap: ConfidenceLevel,
    run_id: str | None,
    node_id: str | None,
    iteration: int,
) -> str:
    """A phase that stopped with criteria unmet: the kept synthesis, committed again by code (no model
    call) with the unmet criteria among its gaps and its confidence capped. Returns the new handoff."""
    store = deps.store
    kept = store.get_handoff(handoff_id)
    output = kept.output_as(StoredSynthesis)
    if output is None:
        raise ValueError(f"handoff {handoff_id} is no finished synthesis")
    said = {gap.text for gap in gaps}
    kept_gaps = [*gaps, *(gap for gap in output.as_gaps() if gap.text not in said)]
    gated = output.model_copy(
        update={
            "gaps": [gap.text for gap in kept_gaps],
            "typed_gaps": kept_gaps,
            **gated_confidence(output, cap, unmet),
            "unmet_criteria": unmet,
            "cached": False,
            "cached_from": None,
        }
    )
    new_id = store.start_handoff(
        role="synthesizer",
        input=kept.input.model_dump(mode="json"),
        backend=deps.model.name,
        run_id=run_id,
        node_id=node_id,
        iteration=iteration,
    )
    first = kept.summary[0] if kept.summary else ""
    second = (
        f"confidence {gated.confidence.level}; {len(gated.gaps)} gaps; "
        f"{len(unmet)} phase criteria unmet: {', '.join(unmet)}"
    )
    store.finish_handoff(new_id, status="done", output=gated, summary=[first, second[:200]], model="none")
    return new_id

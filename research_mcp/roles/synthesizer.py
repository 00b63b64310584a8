"""The synthesizer: the full handoffs below it, read from the store, into a report citing fact ids."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from research_mcp.core.citations import CitationChecker, normalize
from research_mcp.core.contracts import (
    Confidence,
    ConfidenceCap,
    ConfidenceLevel,
    ExtractorTaskSpec,
    Fact,
    SynthesisOutput,
)
from research_mcp.core.gaps import Gap
from research_mcp.core.ids import fact_label, source_label
from research_mcp.core.role_inputs import (
    ChildReport,
    SourceInsight,
    SynthesisInput,
    SynthesisPayload,
)
from research_mcp.roles.acceptance import Criterion, cited_facts, judge, numbered_criteria, reshape
from research_mcp.roles.base import HandoffContext, Place, Role, RoleDeps, RoleResult, cache_key, perform
from research_mcp.roles.confidence_words import gated_confidence, plain_confidence
from research_mcp.roles.contradictions import Disagreement, disagreements
from research_mcp.roles.evidence import (
    UNANSWERED,
    Evidence,
    cap_confidence,
    judge_evidence,
    never_mentioned_cap,
)
from research_mcp.roles.followups import followups
from research_mcp.roles.framing import frame
from research_mcp.roles.items import ItemScope, facts_of_items
from research_mcp.roles.outline import outline_gaps, outline_prompt
from research_mcp.roles.synthesis_inputs import (
    Inputs,
    known_insights,
    read_inputs,
    source_gaps,
)
from research_mcp.roles.synthesis_summary import NOT_COVERED, synthesis_summary
from research_mcp.sources.library import coverage_said_once
from research_mcp.storage.models import KnownInsight
from research_mcp.storage.outputs import AcceptanceCheck, CitationCounts, ConfidenceCounts, StoredSynthesis

__all__ = ["CRITERION_UNMET", "UNANSWERED", "cap_confidence", "gate_synthesis", "gather_inputs", "synthesize"]

MAX_FACTS = 150
#: How the gap of an acceptance criterion a synthesis did not meet begins.
CRITERION_UNMET = "Acceptance criterion unmet"
CONTRADICTIONS = "## Contradictions between sources"
MAX_FAILURE_CHARS = 400


def gather_inputs(
    deps: RoleDeps, handoff_ids: list[str], failures: list[str] | None = None
) -> tuple[list[Fact], list[ChildReport]]:
    """Facts in scope (extractors' facts, and the scope of lower syntheses) and the lower reports.
    A fact merged into a near-duplicate from another source is given as the canonical fact.
    `failures`, when given, receives what the lower syntheses could not research."""
    found = read_inputs(deps, handoff_ids)
    if failures is not None:
        failures.extend(found.failures)
    facts = {fact.id: fact for fact in deps.store.canonical_facts(found.fact_ids)}
    return [facts[key] for key in sorted(facts)], found.reports


def _source_links(deps: RoleDeps, facts: Sequence[Fact]) -> set[str]:
    """The addresses of the sources behind the facts in scope: the only links free text may keep."""
    refs = deps.store.source_refs({fact.source_id for fact in facts})
    return {ref for ref in refs.values() if "://" in ref}


def _prompt(payload: SynthesisPayload, criteria: Sequence[Criterion], prior: Collection[int] = ()) -> str:
    lines = [f"Node: {payload.title}", "Questions:"]
    lines += [f"- {question}" for question in payload.questions] or ["- (see the node title)"]
    formats = list(dict.fromkeys(spec.expected_format for spec in payload.task_specs if spec.expected_format))
    if formats:
        lines.append("Expected format of the report: " + "; ".join(formats))
    if criteria:
        lines.append("Acceptance criteria (give a verdict on each in `criteria`, by its number):")
        lines += [f"C{index}: {criterion.label}" for index, criterion in enumerate(criteria)]
    fact_lines = []
    for fact in payload.facts:
        status = "verified" if fact.verified else "UNVERIFIED"
        extra = f", corroborated by {fact.corroborations}" if fact.corroborations > 1 else ""
        extra += ", from earlier research" if fact.id in prior else ""
        fact_lines.append(
            f'[{fact_label(fact.id)}] ({source_label(fact.source_id)}, {status}{extra}) {fact.statement} | quote: "{fact.quote}"'
        )
    lines.append(frame("FACTS", "\n".join(fact_lines) or "(no facts)"))
    if payload.insights:
        said = {"gap": "names a gap", "follow_up": "leaves open", "link": "cites"}
        open_lines = [
            f"{source_label(item.source_id)} {said[item.kind]}: {item.text}"
            + (f" ({item.context})" if item.context else "")
            + (f" [read by an earlier run: {item.earlier}]" if item.earlier else "")
            for item in payload.insights
        ]
        lines.append(frame("WHAT THE SOURCES LEAVE OPEN", "\n".join(open_lines)))
    for report in payload.child_reports:
        gaps = "\n\nGaps:\n" + "\n".join(f"- {gap.text}" for gap in report.gaps) if report.gaps else ""
        lines.append(frame(f"REPORT {report.title!r} (confidence {report.confidence})", report.report + gaps))
    return "\n".join(lines)


def _scrubbed(insights: Sequence[SourceInsight], checker: CitationChecker) -> list[SourceInsight]:
    """What the sources leave open, its free text checked like the model's other free text (a gap a
    source names, kept across runs, may carry a foreign link or a forged citation); a source it
    cites is a source to read, and keeps its address."""
    return [
        item if item.kind == "link" else item.model_copy(update={"text": checker.text(item.text)})
        for item in insights
    ]


def _with_failures(report: str, failures: list[str]) -> str:
    """The report, followed by what could not be researched and why (written by code, not the model)."""
    if not failures:
        return report
    return f"{report.rstrip()}\n\n{NOT_COVERED}\n\n" + "\n".join(f"- {failure}" for failure in failures)


#: Said under a question's heading when code found that no verified fact answers it.
NOT_ANSWERED_HERE = (
    "_Not established: no document read answers this; the lines below are the closest the sources say._"
)
#: Said instead where code's checks found no line answering the question in its own terms: the
#: lines may still answer it in other words ("login(1) will allow access only to root" for "What does
#: /etc/nologin restrict?"), and the part's confidence says how far to trust them.
NOT_ESTABLISHED_HERE = (
    "_Not established by code's checks: none of the lines below was found to answer this; "
    "read them as leads._"
)
_HEADING = re.compile(r"^#{1,3} (.+)$")


def _unanswered(questions: Sequence[str], gaps: Sequence[Gap], notes: Sequence[Gap]) -> set[str]:
    """The questions (normalised) code found unanswered: a "No verified fact was found" gap's, and
    those asking about a name or a technical term no document holds (the note names its question).
    Not a common word no document holds ("safer" where the documents say "safe") nor the lexical
    "Not established" judgements: a right answer in other words ("login(1) will allow access only
    to root" for "What does /etc/nologin restrict?") gets one."""
    found = {gap.question for gap in gaps if gap.kind == "unanswered" and gap.question}
    found |= {
        note.question
        for note in [*notes, *gaps]
        if note.kind == "never_mentioned" and note.question and never_mentioned_cap(note) == "low"
    }
    return {normalize(question).rstrip("?. ") for question in found}


def _unestablished(gaps: Sequence[Gap]) -> set[str]:
    """The questions (normalised) a "Not established by the verified facts" gap names. Not the parts
    of an unmet "cover every part" criterion (no verified finding says all their words): it took
    "This field is used by fsck(8) to determine the order ..." for no answer to "What does the sixth
    field of fstab determine?", which it lacks "sixth" for."""
    found = {gap.question for gap in gaps if gap.kind == "not_established" and gap.question}
    return {normalize(question).rstrip("?. ") for question in found}


def _never_mentioned_caps(questions: Sequence[str], notes: Sequence[Gap]) -> list[ConfidenceCap]:
    """The caps of words no document of the corpus holds (runs/leaf.py), this node's leaf's or its
    parts' carried up: never `high`; `low` when every question of the node asks about a name no
    document holds (roles/evidence.py: `never_mentioned_cap`), else `medium`."""
    said = _unique(note for note in notes if note.kind == "never_mentioned")
    if not said:
        return []
    named = {
        normalize(note.question).rstrip("?. ")
        for note in said
        if note.question and never_mentioned_cap(note) == "low"
    }
    every = bool(questions) and all(normalize(q).rstrip("?. ") in named for q in questions)
    return [ConfidenceCap(rule="never_mentioned", level="low" if every else "medium", reason=said[0].text)]


def _unique(gaps: Iterable[Gap]) -> list[Gap]:
    """The gaps, each text once (the first gap saying it)."""
    kept: dict[str, Gap] = {}
    for gap in gaps:
        kept.setdefault(gap.text, gap)
    return list(kept.values())


def _marked_unanswered(
    report: str, unanswered: AbstractSet[str], unestablished: AbstractSet[str] = frozenset()
) -> str:
    """The report with each unanswered question marked under its heading ("## <question>", or the
    report's "# <title>" when the title is the question), so that the closest lines the sources
    gave, listed under it, are not read as its answer; each question code's checks found not
    established (`unestablished`), more softly."""
    if not unanswered and not unestablished:
        return report
    lines = report.split("\n")
    marked: list[str] = []
    for position, line in enumerate(lines):
        marked.append(line)
        heading = _HEADING.match(line)
        asked = normalize(heading.group(1)).rstrip("?. ") if heading else ""
        if asked not in unanswered and asked not in unestablished:
            continue
        following = next((later for later in lines[position + 1 :] if later.strip()), "")
        if following.startswith("- "):  # lines follow, not another heading or "_No verified fact ..._"
            marked += ["", NOT_ANSWERED_HERE if asked in unanswered else NOT_ESTABLISHED_HERE]
    return "\n".join(marked)


def _with_contradictions(report: str, found: list[str]) -> str:
    """The report, followed by the contradictions code found between its sources."""
    if not found:
        return report
    return f"{report.rstrip()}\n\n{CONTRADICTIONS}\n\n" + "\n".join(f"- {item}" for item in found)


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
    said = _unique(note if isinstance(note, Gap) else Gap(text=note) for note in notes)
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
        facts = list(
            {fact.id: fact for fact in deps.store.canonical_facts(below.fact_ids, questions)}.values()
        )
        # Prior findings the inputs do not already hold (a leaf re-reading a source finds its own again).
        found = {fact.id for fact in facts}
        facts += [fact for fact in deps.store.canonical_facts(prior_facts, questions) if fact.id not in found]
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
        return _prompt(self.payload, self.criteria, self.scope.prior) + outline_prompt(self.outline)

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
        check = checker.result(_checked_texts(output, checker))
        acceptance, evidence = self._judged(context.deps, output, check.report)
        # What code knows is missing, whatever the backend said: unanswered questions, cut lists,
        # criteria unmet or unchecked, what the sources say they leave open, and the same from below.
        found_gaps = _unique(
            [
                *evidence.gaps,
                *self.notes,
                *(Gap(kind="requirement", text=gap) for gap in format_gaps),
                *(Gap(text=gap) for gap in outline_gaps(self.outline, check.report)),
                *_acceptance_gaps(acceptance),
                *source_gaps(_scrubbed(scope.below.insights, checker), questions),
                *source_gaps(_scrubbed(scope.earlier, checker), questions),
                *_still_open(scope.below.evidence_gaps, scope.facts),
            ]
        )
        # Contradictions between verified facts that code can see, whatever the backend saw.
        # Copies of one document are one source: a copy neither contradicts nor settles (copies.py).
        copies = context.deps.store.source_copies({fact.source_id for fact in scope.facts if fact.verified})
        self.disagreements = disagreements(scope.facts, copies)
        found = [disagreement.wording for disagreement in self.disagreements]
        disagreeing = [c for c in found if c not in output.contradictions]
        output.contradictions += disagreeing
        unanswered = _unanswered(questions, found_gaps, self.notes)
        output.report = _with_contradictions(
            _with_failures(
                _marked_unanswered(
                    check.report, unanswered, _unestablished([*found_gaps, *output.as_gaps()])
                ),
                scope.failed,
            ),
            disagreeing,
        )
        _add_gaps(output, scope.failed, found_gaps)
        # Where to go next, from this run alone: never a question asked here or left open below,
        # never what an earlier run's sources left open (roles/followups.py).
        cited = set(check.cited)
        output.suggested_followups = followups(
            asked=questions,
            open_questions=[_open_question(gap) for gap in [*found_gaps, *output.as_gaps()]],
            disagreements=self.disagreements,
            insights=_scrubbed(scope.below.insights, checker),
            read=scope.below.read_refs | links,
            cited=[fact for fact in scope.facts if fact.id in cited and fact.verified],
            title_of=lambda source_id: context.deps.store.get_source(source_id).title,
            suggested=output.suggested_followups,
        )
        evidence.caps += _never_mentioned_caps(questions, [*self.notes, *found_gaps])
        output.confidence = evidence.cap(output.confidence)
        report_caps = _report_caps(output, cites_verified=bool(check.verified))
        for cap in report_caps:
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
            confidence_caps=[cap.model_dump() for cap in [*evidence.caps, *report_caps]],
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

    def _counts(
        self, deps: RoleDeps, output: SynthesisOutput, cited_ids: Sequence[int], gaps: Sequence[Gap]
    ) -> ConfidenceCounts:
        """What the confidence stands on, counted for the sentence a person reads."""
        questions = self.asked.questions
        said = [*gaps, *output.as_gaps()]
        unanswered = _unanswered(questions, said, self.notes)
        asked = {normalize(question).rstrip("?. ") for question in questions}
        unclear = (_unestablished(said) & asked) - unanswered
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
        sources = {f.source_id for f in facts if f.verified} | {s for ids in cited_in.values() for s in ids}
        titles = {source: source_of(source)[1] for source in sources}
        evidence = judge_evidence(
            self.asked.questions,
            facts,
            in_scope=self.scope.in_scope,
            read=len(facts),
            acceptance=acceptance,
            titles=titles,
            cited_in=cited_in,
        )
        return acceptance, evidence


def _checked_texts(output: SynthesisOutput, checker: CitationChecker) -> str:
    """Every free text checked, not only the report: a forged citation or a foreign link in a gap or
    in the confidence reasoning would reach the exports as surely as one in the report. Returns the
    report checked (its citation counts are taken from it)."""
    report = checker.text(output.report)
    typed = output.as_gaps()
    output.set_gaps(
        [
            gap.model_copy(update={"text": text})
            for gap, text in zip(typed, checker.texts(output.gaps), strict=True)
        ]
    )
    output.contradictions = checker.texts(output.contradictions)
    output.suggested_followups = checker.texts(output.suggested_followups)
    output.confidence.reasoning = checker.text(output.confidence.reasoning)
    for finding in output.key_findings:
        finding.statement = checker.text(finding.statement)
    for verdict in output.criteria:
        verdict.evidence = checker.text(verdict.evidence)
    return report


def _add_gaps(output: SynthesisOutput, failed: Sequence[str], found: Sequence[Gap]) -> None:
    # A failure a gap already names (a child's gap arrives prefixed with its title) is not added twice.
    gaps = output.as_gaps()
    gaps += [Gap(kind="failure", text=f) for f in failed if not any(f in gap.text for gap in gaps)]
    # A gap a lower synthesis gave (prefixed with its title, perhaps clipped) is not added twice.
    gaps += [gap for gap in found if not any(_says(said, gap) for said in gaps)]
    typed = {gap.text: gap for gap in gaps}
    # Each part's search saw its own count: one line of the corpus's coverage (a failure) is kept.
    output.set_gaps(
        [typed.get(text) or Gap(kind="failure", text=text) for text in coverage_said_once(list(typed))]
    )


def _report_caps(output: SynthesisOutput, *, cites_verified: bool) -> list[ConfidenceCap]:
    """The caps of the checked report itself: no verified fact cited, contradictions unresolved."""
    caps = []
    if not cites_verified:
        caps.append(
            ConfidenceCap(
                rule="cites_no_verified_fact", level="low", reason="the report cites no verified fact"
            )
        )
    if output.contradictions:
        why = f"{len(output.contradictions)} contradictions between sources are unresolved"
        caps.append(ConfidenceCap(rule="contradictions", level="medium", reason=why))
    return caps


def _still_open(carried: Sequence[Gap], facts: Sequence[Fact]) -> list[Gap]:
    """The gaps carried from below, but a question this synthesis has a verified fact for (a phase
    iteration found one since the part was synthesized) no longer named unanswered."""
    answered = {normalize(fact.question) for fact in facts if fact.verified and fact.question}
    return [
        gap for gap in carried if not (gap.kind == "unanswered" and normalize(gap.question or "") in answered)
    ]


def _says(said: Gap, gap: Gap) -> bool:
    """Whether the gap `said` already says `gap`: with a part's title before it, or clipped after,
    or the same question left open in other words ("No verified fact was found for: Q" after "Not
    established by the verified facts: Q")."""
    question = _open_question(gap)
    text, saying = gap.text, said.text
    return (
        text[-80:] in saying or text[:80] in saying or (bool(question) and question == _open_question(said))
    )


def _open_question(gap: Gap) -> str:
    """The question a gap says is unanswered or not established (normalized), else ''."""
    if gap.kind in ("unanswered", "not_established") and gap.question:
        return normalize(gap.question)
    return ""


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


def _acceptance_gaps(acceptance: Sequence[AcceptanceCheck]) -> list[Gap]:
    gaps = []
    for check in acceptance:
        if check.met is False:
            text = f"{CRITERION_UNMET}: {check.criterion!r}: {check.evidence}"[:500]
            gaps.append(Gap(kind="criterion_unmet", text=text))
        elif check.met is None:
            text = f"Acceptance criterion not checked: {check.criterion!r} ({check.evidence})"[:500]
            gaps.append(Gap(kind="requirement", text=text))
    return gaps


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

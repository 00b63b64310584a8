"""The synthesizer: the full handoffs below it, read from the store, into a report citing fact ids."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from research_mcp.citations import CitationChecker, normalize
from research_mcp.contracts import Confidence, ConfidenceLevel, Fact, SynthesisOutput
from research_mcp.role_inputs import ChildReport, SynthesisFact, SynthesisInput, SynthesisPayload
from research_mcp.roles.base import RoleDeps, RoleResult, cache_key, perform
from research_mcp.roles.framing import frame
from research_mcp.storage.outputs import StoredSynthesis

__all__ = ["UNANSWERED", "cap_confidence", "gate_synthesis", "gather_inputs", "synthesize"]

MAX_FACTS = 150
NOT_COVERED = "## Not covered (failed)"
MAX_FAILURE_CHARS = 400
UNANSWERED = "No verified fact was found for: "


def gather_inputs(
    deps: RoleDeps, handoff_ids: list[str], failures: list[str] | None = None
) -> tuple[list[Fact], list[ChildReport]]:
    """Facts in scope (extractors' facts, and the scope of lower syntheses) and the lower reports.
    A fact merged into a near-duplicate from another source is given as the canonical fact.
    `failures`, when given, receives what the lower syntheses could not research."""
    store = deps.store
    scoped: list[int] = []
    reports: list[ChildReport] = []
    for handoff_id in handoff_ids:
        handoff = store.get_handoff(handoff_id)
        if handoff.status != "done" or handoff.output is None:
            continue
        # An extraction lists the facts it recorded (or, reused, re-linked); a synthesis its scope.
        scoped.extend(handoff.fact_ids)
        if failures is not None:
            failures.extend(handoff.failures)
        synthesis, asked = handoff.output_as(StoredSynthesis), handoff.input_as(SynthesisInput)
        if synthesis is not None:
            reports.append(
                ChildReport(
                    title=asked.title if asked else "",
                    report=synthesis.report,
                    confidence=synthesis.confidence.level,
                    gaps=synthesis.gaps,
                )
            )
    facts = {fact.id: fact for fact in store.canonical_facts(scoped)}
    return [facts[key] for key in sorted(facts)], reports


def _source_links(deps: RoleDeps, facts: Sequence[Fact]) -> set[str]:
    """The addresses of the sources behind the facts in scope: the only links free text may keep."""
    refs = deps.store.source_refs({fact.source_id for fact in facts})
    return {ref for ref in refs.values() if "://" in ref}


def _prompt(payload: SynthesisPayload, prior: Collection[int] = ()) -> str:
    lines = [f"Node: {payload.title}", "Questions:"]
    lines += [f"- {question}" for question in payload.questions] or ["- (see the node title)"]
    fact_lines = []
    for fact in payload.facts:
        status = "verified" if fact.verified else "UNVERIFIED"
        extra = f", corroborated by {fact.corroborations}" if fact.corroborations > 1 else ""
        extra += ", from earlier research" if fact.id in prior else ""
        fact_lines.append(
            f'[F{fact.id}] (S{fact.source_id}, {status}{extra}) {fact.statement} | quote: "{fact.quote}"'
        )
    lines.append(frame("FACTS", "\n".join(fact_lines) or "(no facts)"))
    for report in payload.child_reports:
        lines.append(frame(f"REPORT {report.title!r} (confidence {report.confidence})", report.report))
    return "\n".join(lines)


def _summary(output: SynthesisOutput, failed: int = 0) -> list[str]:
    body = output.report.split(NOT_COVERED, 1)[0]
    lines = [line.strip("-*# ").strip() for line in body.splitlines()]
    prose = [
        line
        for line, raw in zip(lines, body.splitlines(), strict=True)
        if line and not raw.lstrip().startswith("#")
    ]
    first = prose[0] if prose else (lines[0] if lines else "")
    second = f"confidence {output.confidence.level}; {len(output.gaps)} gaps"
    if failed:
        second += f"; {failed} failed parts or sources, named in the gaps"
    return [first[:200], second]


def _with_failures(report: str, failures: list[str]) -> str:
    """The report, followed by what could not be researched and why (written by code, not the model)."""
    if not failures:
        return report
    return f"{report.rstrip()}\n\n{NOT_COVERED}\n\n" + "\n".join(f"- {failure}" for failure in failures)


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
) -> RoleResult[SynthesisOutput]:
    """`prior_facts`: known facts from earlier research (prior findings), citable like the others.

    `failures` names what this node could not research (a source not read, a search or a part that
    failed) and why; with those the lower syntheses carry, they are kept in the output, added to its
    gaps and listed under the report, so a failure is never silently left out."""
    inherited: list[str] = []
    facts, reports = gather_inputs(deps, input_handoffs, inherited)
    failed = list(dict.fromkeys(failure[:MAX_FAILURE_CHARS] for failure in [*inherited, *failures]))
    # Prior findings the inputs do not already hold (a leaf re-reading a source finds its own again).
    found = {fact.id for fact in facts}
    facts += [fact for fact in deps.store.canonical_facts(prior_facts) if fact.id not in found]
    # Ordered by what the facts say, not by their ids (the order parallel extractions finished in), so
    # the same facts make the same payload, the same cut at MAX_FACTS and the same report on every run.
    in_scope = len(facts)
    facts = sorted(
        facts,
        key=lambda f: (not f.verified, -f.corroborations, -f.confidence, normalize(f.statement), f.quote),
    )[:MAX_FACTS]
    evidence_gaps, cap = _evidence_gaps(questions, facts, in_scope)
    synthesis_input = SynthesisInput(
        title=title, questions=questions, input_handoffs=input_handoffs, discovery=discovery
    )
    payload = SynthesisPayload(
        **synthesis_input.model_dump(),
        facts=[SynthesisFact(**fact.model_dump(exclude={"location"})) for fact in facts],
        child_reports=reports,
    )
    allowed = {fact.id for fact in facts}
    verified = {fact.id for fact in facts if fact.verified}
    prior = sorted(allowed - found)

    def finish(handoff_id: str, output: SynthesisOutput) -> dict[str, Any]:
        # Every free text is checked, not only the report: a forged citation or a foreign link in a gap
        # or in the confidence reasoning would reach the exports as surely as one in the report.
        checker = CitationChecker(allowed, verified, links=_source_links(deps, facts))
        report = checker.text(output.report)
        output.gaps = checker.texts(output.gaps)
        output.contradictions = checker.texts(output.contradictions)
        output.suggested_followups = checker.texts(output.suggested_followups)
        output.confidence.reasoning = checker.text(output.confidence.reasoning)
        for finding in output.key_findings:
            finding.statement = checker.text(finding.statement)
        check = checker.result(report)
        output.report = _with_failures(check.report, failed)
        # A failure a gap already names (a child's gap arrives prefixed with its title) is not added twice.
        output.gaps = [*output.gaps, *(f for f in failed if not any(f in gap for gap in output.gaps))]
        # What code knows is missing whatever the backend said: unanswered questions, cut lists.
        output.gaps += [gap for gap in evidence_gaps if not any(gap[-80:] in said for said in output.gaps)]
        if cap is not None:
            output.confidence = cap_confidence(output.confidence, *cap)
        if not check.verified:
            output.confidence = cap_confidence(output.confidence, "low", "the report cites no verified fact")
        for finding in output.key_findings:
            finding.fact_ids = [fact_id for fact_id in finding.fact_ids if fact_id in allowed]
        return {
            "report": output.report,
            "gaps": output.gaps,
            "failures": failed,
            "key_findings": [finding.model_dump() for finding in output.key_findings],
            "fact_ids": sorted(allowed),
            "cited": check.cited,
            "citations": {
                "made": check.made,
                "verified": check.verified,
                "dropped": check.dropped,
                "links_dropped": check.links_dropped,
            },
            "prior_fact_ids": prior,
        }

    return await perform(
        deps,
        role="synthesizer",
        input=synthesis_input,
        payload=payload,
        output_type=SynthesisOutput,
        prompt=_prompt(payload, prior),
        summarize=lambda output: _summary(output, len(failed)),
        finish=finish,
        # The same facts and reports, given the same way: the earlier synthesis is reused.
        reuse_key=cache_key(
            deps,
            "synthesizer",
            {
                "payload": payload.model_dump(mode="json", exclude={"input_handoffs"}),
                "prior": prior,
                "failures": failed,
            },
        ),
        run_id=run_id,
        node_id=node_id,
        iteration=iteration,
        max_tokens=8192,
    )


_LEVELS: dict[ConfidenceLevel, int] = {"low": 0, "medium": 1, "high": 2}


def _evidence_gaps(
    questions: Sequence[str], facts: Sequence[Fact], in_scope: int
) -> tuple[list[str], tuple[ConfidenceLevel, str] | None]:
    """Gaps code can see in the synthesis input, whatever the backend: a question no verified fact was
    extracted for (judged only where verified facts answer some of these questions), facts cut at
    MAX_FACTS; and the confidence cap they imply."""
    gaps: list[str] = []
    answered = {normalize(fact.question) for fact in facts if fact.verified and fact.question}
    unanswered = []
    # Judged only where facts were extracted for these questions (task specs may ask others).
    if answered & {normalize(q) for q in questions}:
        unanswered = [q for q in dict.fromkeys(questions) if normalize(q) not in answered]
        gaps += [f"{UNANSWERED}{q}"[:500] for q in unanswered]
    if in_scope > MAX_FACTS:
        gaps.append(
            f"Cut short: {in_scope - MAX_FACTS} of {in_scope} facts in scope were not given to the "
            f"synthesis (at most {MAX_FACTS}; the least verified and corroborated were left out)"
        )
    if not any(fact.verified for fact in facts):
        return gaps, ("low", "no verified fact in its input")
    if unanswered:
        share = f"{len(unanswered)} of {len(set(questions))} questions without a verified fact"
        return gaps, ("low" if len(unanswered) * 2 > len(set(questions)) else "medium", share)
    return gaps, None


def cap_confidence(confidence: Confidence, cap: ConfidenceLevel, why: str) -> Confidence:
    """`confidence` no higher than `cap`; when lowered, the reasoning says to what and why."""
    if _LEVELS[confidence.level] <= _LEVELS[cap]:
        return confidence
    reasoning = (
        f"Capped at {cap} by code ({why}); the synthesis said {confidence.level}: {confidence.reasoning}"
    )
    return Confidence(level=cap, reasoning=reasoning[:1000])


def gate_synthesis(
    deps: RoleDeps,
    handoff_id: str,
    *,
    unmet: list[str],
    gaps: list[str],
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
    gated = output.model_copy(
        update={
            "gaps": [*gaps, *(gap for gap in output.gaps if gap not in gaps)],
            "confidence": cap_confidence(output.confidence, cap, f"phase criteria unmet: {', '.join(unmet)}"),
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

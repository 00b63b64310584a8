"""The synthesizer without a model: facts grouped by question, near-duplicates merged, cited lines.

A fact goes under the question it was extracted for; a fact without one (or with a question not
asked here) goes under the most similar question. Within a question, facts whose normalised text is
equal or whose similarity is at least `DUPLICATE` become one line citing all their verified ids,
unless their numbers or negation differ: "built by 74 masons" and "built by 5 masons" stay two
lines. Facts are ordered by what they say, never by their ids (which follow the order parallel
extractions happened to finish in), so the same facts give the same report on every run.
Lines are ordered verified first, then those that bear on their question (sharing two of its
terms: a licence's boilerplate "See the GNU Lesser General Public License for more details." is
corroborated by every licence that carries it, and answers nothing), then by corroborations, then by
confidence. Only verified facts
are cited; a group without one is left out of the report and counted. A question is a gap when no
verified fact under it has confidence of at least `COVERED_CONFIDENCE`. Child reports are carried
by their cited lines. Contradictions are not detected, and the confidence reasoning says so.

Confidence is computed from the evidence, and is never `high`: sentences are chosen by their
similarity to the question, and nothing here can tell whether one answers it ("Fix conffile
removal-on-upgrade handling" is close to "How does dpkg handle conffiles on upgrade?" and answers
nothing). `medium` when every question is covered, half of them by two or more sources, and the
mean of each question's best evidence score is at least `STRONG_EVIDENCE`, or when half the
questions are covered and that mean reaches `MEDIUM_EVIDENCE`; `low` otherwise. A question's
evidence is its own facts': one extracted for another question (a lead's, an earlier run's) is
cited under it, but its score was measured against that other question and does not count. Every
unanswered question is a gap, and so is every list cut short (lines beyond `LINES_PER_QUESTION`,
findings beyond `MAX_FINDINGS`, gaps beyond `MAX_GAPS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from research_mcp.citations import CITATION, normalize, same_claim
from research_mcp.contracts import (
    NOT_ESTABLISHED,
    UNANSWERED,
    Confidence,
    ConfidenceLevel,
    Embedder,
    Finding,
    SynthesisOutput,
)
from research_mcp.ids import fact_label
from research_mcp.llm.extractive.scoring import Relevance
from research_mcp.matching.questions import reads_as_question
from research_mcp.matching.terms import bears_on, clip
from research_mcp.role_inputs import SynthesisFact, SynthesisPayload

__all__ = ["COVERED_CONFIDENCE", "DUPLICATE", "synthesize"]

DUPLICATE = 0.9
COVERED_CONFIDENCE = 0.4
#: The mean best evidence `medium` needs, calibrated on the dev sets of bench.answers (HotpotQA part
#: A, realdocs dev): questions the corpus cannot answer, matched on their common words, reached 0.46
#: and 0.58 there; few answered questions score under 0.6.
MEDIUM_EVIDENCE = 0.6
STRONG_EVIDENCE = 0.6
LINES_PER_QUESTION = 8
MAX_FINDINGS = 15
MAX_GAPS = 10
CHILD_LINES = 6
MAX_REPORT = 19000
OTHER = "Other findings"

_SPACE = re.compile(r"\s+")
_UNVERIFIED_MARK = re.compile(r"\[F\d+, unverified\]")


@dataclass
class Line:
    """One report line: a group of near-duplicate facts."""

    facts: list[SynthesisFact] = field(default_factory=list)

    @property
    def verified_ids(self) -> list[int]:
        return sorted({fact.id for fact in self.facts if fact.verified})

    @property
    def representative(self) -> SynthesisFact:
        return sorted(self.facts, key=lambda fact: (not fact.verified, -fact.confidence, _said(fact)))[0]

    @property
    def corroborations(self) -> int:
        """Distinct sources among the verified facts, plus the corroborations the store recorded."""
        verified = [fact for fact in self.facts if fact.verified]
        return len({fact.source_id for fact in verified}) + sum(fact.corroborations - 1 for fact in verified)

    @property
    def confidence(self) -> float:
        return max((fact.confidence for fact in self.facts if fact.verified), default=0.0)

    def order(self) -> tuple[bool, int, float, tuple[str, str]]:
        return (not self.verified_ids, -self.corroborations, -self.confidence, _said(self.representative))

    def render(self) -> str:
        statement = _SPACE.sub(" ", self.representative.statement).strip()
        return f"- {statement} " + "".join(f"[{fact_label(fact_id)}]" for fact_id in self.verified_ids)


def _said(fact: SynthesisFact) -> tuple[str, str]:
    """What a fact says: the order of facts that does not depend on when they were recorded."""
    return (normalize(fact.statement), normalize(fact.quote))


def synthesize(payload: SynthesisPayload, embedder: Embedder | None) -> SynthesisOutput:
    facts = sorted(payload.facts, key=_said)
    groups = _group(payload.questions, facts, embedder)
    lines = {question: _merge(members, embedder) for question, members in groups.items()}
    verified = {fact.id for fact in facts if fact.verified}

    sections = [f"# {payload.title}"]
    findings: list[Finding] = []
    gaps: list[str] = []
    cuts: list[str] = []
    corroborated = 0
    best: list[float] = []  # each question's strongest verified evidence
    for question, question_lines in lines.items():
        cited = [line for line in question_lines if line.verified_ids]
        if question != OTHER:
            # The lines found for this question first, the strongest for it first ("License: GPL-2+"
            # of ed's copyright file before other files' warranty lines); then those that share
            # the question's terms (a stable sort: corroborated lines first among equals).
            cited.sort(
                key=lambda line: (
                    -_evidence(question, [line]),
                    not bears_on(f"{line.representative.statement} {line.representative.quote}", question),
                )
            )
        if question == OTHER and not cited:
            continue
        if normalize(question).rstrip("?. ") != normalize(payload.title).rstrip("?. "):
            sections.append(f"## {clip(question, 300)}")  # the title's own question is not said twice
        if cited:
            sections.append("\n".join(line.render() for line in cited[:LINES_PER_QUESTION]))
        else:
            sections.append("_No verified fact answers this._")
        if len(cited) > LINES_PER_QUESTION:
            cuts.append(
                clip(
                    f"Cut short: {len(cited) - LINES_PER_QUESTION} more verified lines on {question!r} are "
                    f"not in the report (it shows {LINES_PER_QUESTION}); the facts view lists them",
                    500,
                )
            )
        covered = any(line.confidence >= COVERED_CONFIDENCE for line in cited)
        if question != OTHER:
            best.append(_evidence(question, cited))
        if question != OTHER and not cited:
            # No line at all: unanswered, which a later reading (a phase's iteration) may answer.
            gaps.append(clip(f"{UNANSWERED}{question}", 500))
        elif question != OTHER and not covered:
            gaps.append(clip(f"{NOT_ESTABLISHED}{question}", 500))
        if covered and cited[0].corroborations >= 2:
            corroborated += 1
        for line in cited[:2]:
            findings.append(
                Finding(statement=clip(line.representative.statement, 1000), fact_ids=line.verified_ids)
            )

    # Child reports add only what the lines above do not already cite: no finding is said twice.
    shown = {
        fact_id
        for question_lines in lines.values()
        for line in question_lines
        for fact_id in line.verified_ids
    }
    found = {
        normalize(question)
        for question, question_lines in lines.items()
        if question != OTHER and any(line.verified_ids for line in question_lines)
    }
    parts = []
    for child in payload.child_reports:
        # A child's gap this synthesis found itself (the same list cut short here) is not said twice.
        # Nor one saying no line was found for a question this synthesis has verified lines for (a
        # phase's iteration read what the part's first reading missed).
        gaps.extend(
            clip(f"{child.title}: {gap}", 500)
            for gap in child.gaps
            if gap not in {*gaps, *cuts}
            and not (gap.startswith(UNANSWERED) and normalize(gap.removeprefix(UNANSWERED)) in found)
        )
        new_lines = [
            line
            for line in _key_lines(child.report, verified)
            if not {int(i) for i in CITATION.findall(line)} <= shown
        ]
        if new_lines:
            parts += [f"### {child.title} (confidence {child.confidence})", "\n".join(new_lines)]
    if parts:
        sections += ["## From the parts of this research", *parts]

    unverified = len(facts) - len(verified)
    merged = sum(len(line.facts) - 1 for question_lines in lines.values() for line in question_lines)
    sections.append(
        f"_Extractive synthesis (no language model): {len(facts)} facts read, {len(verified)} verified "
        f"and cited, {unverified} unverified and left out, {merged} merged into lines as near-duplicates._"
    )
    report = "\n\n".join(sections)
    if len(report) > MAX_REPORT:
        report = _truncated(report)

    asked = [question for question in lines if question != OTHER]
    question_gaps = [gap for gap in gaps if gap.startswith((UNANSWERED, NOT_ESTABLISHED))]
    if len(findings) > MAX_FINDINGS:
        cuts.append(
            f"Cut short: {len(findings) - MAX_FINDINGS} key findings beyond {MAX_FINDINGS} not listed"
        )
    return SynthesisOutput(
        report=report,
        key_findings=findings[:MAX_FINDINGS],
        confidence=_confidence(asked, question_gaps, corroborated, payload, len(verified), best),
        gaps=_bounded([*question_gaps, *cuts, *(gap for gap in gaps if gap not in question_gaps)]),
        contradictions=[],
        suggested_followups=[q for q in map(_as_question, question_gaps[:5]) if reads_as_question(q)],
    )


def _evidence(question: str, cited: list[Line]) -> float:
    """The strongest verified fact extracted for `question`: a fact found for another question (a
    lead's, an earlier run's) was scored against that one, and its score says nothing of this one."""
    asked = normalize(question)
    return max(
        (
            f.confidence
            for line in cited
            for f in line.facts
            if f.verified and normalize(f.question or "") == asked
        ),
        default=0.0,
    )


def _truncated(report: str) -> str:
    """The report cut at a line under MAX_REPORT characters, with no heading left over nothing."""
    kept = report[:MAX_REPORT].rsplit("\n", 1)[0].rstrip()
    while kept and kept.rsplit("\n", 1)[-1].startswith("#"):
        kept = kept.rsplit("\n", 1)[0].rstrip() if "\n" in kept else ""
    return f"{kept}\n\n_(report truncated)_"


def _group(
    questions: list[str], facts: list[SynthesisFact], embedder: Embedder | None
) -> dict[str, list[SynthesisFact]]:
    """Facts under the question they answer; the others under the most similar question."""
    asked = list(dict.fromkeys(question.strip() for question in questions if question.strip()))
    if not asked:
        asked = list(
            dict.fromkeys(fact.question.strip() for fact in facts if fact.question and fact.question.strip())
        )
    groups: dict[str, list[SynthesisFact]] = {question: [] for question in asked}
    by_normal = {normalize(question): question for question in asked}
    homeless: list[SynthesisFact] = []
    for fact in facts:
        home = by_normal.get(normalize(fact.question)) if fact.question else None
        if home is None:
            homeless.append(fact)
        else:
            groups[home].append(fact)
    if homeless and asked:
        relevance = Relevance([fact.statement for fact in homeless], embedder)
        scores = [relevance.scores(question) for question in asked]
        for position, fact in enumerate(homeless):
            best = max(range(len(asked)), key=lambda q: (scores[q][position], -q))
            if scores[best][position] > 0:
                groups[asked[best]].append(fact)
            else:
                groups.setdefault(OTHER, []).append(fact)
    elif homeless:
        groups[OTHER] = homeless
    return groups


def _merge(facts: list[SynthesisFact], embedder: Embedder | None) -> list[Line]:
    """Near-duplicate facts as one line each, the strongest first."""
    if not facts:
        return []
    ordered = sorted(
        facts, key=lambda fact: (not fact.verified, -fact.corroborations, -fact.confidence, _said(fact))
    )
    similarity = Relevance([fact.statement for fact in ordered], embedder).similarity(range(len(ordered)))
    normals = [normalize(fact.statement) for fact in ordered]
    lines: list[Line] = []
    leaders: list[int] = []  # the position of each line's first fact
    for position, fact in enumerate(ordered):
        for line, leader in zip(lines, leaders, strict=True):
            if normals[leader] == normals[position] or (
                similarity[leader, position] >= DUPLICATE
                and same_claim(ordered[leader].statement, fact.statement)
            ):
                line.facts.append(fact)
                break
        else:
            lines.append(Line(facts=[fact]))
            leaders.append(position)
    return sorted(lines, key=Line.order)


def _key_lines(report: str, verified: set[int]) -> list[str]:
    """A child report's lines that cite facts (else its first lines), citing only verified facts given here."""

    def keep_verified(match: re.Match[str]) -> str:
        return match.group(0) if int(match.group(1)) in verified else ""

    candidates = [
        line.strip()
        for line in report.splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "_", "---"))
    ]
    cited = [line for line in candidates if CITATION.search(line)] or candidates
    carried = []
    for line in cited[:CHILD_LINES]:
        line = CITATION.sub(keep_verified, _UNVERIFIED_MARK.sub("", line)).rstrip()
        carried.append(line if line.startswith(("- ", "* ")) else f"- {line}")
    return carried


def _bounded(gaps: list[str]) -> list[str]:
    """At most MAX_GAPS gaps; when more, the last one says how many more were not listed."""
    if len(gaps) <= MAX_GAPS:
        return gaps
    return [*gaps[: MAX_GAPS - 1], f"Cut short: {len(gaps) - MAX_GAPS + 1} more gaps not listed"]


def _confidence(
    asked: list[str],
    gaps: list[str],
    corroborated: int,
    payload: SynthesisPayload,
    verified: int,
    best: list[float],
) -> Confidence:
    """From the evidence: the questions covered, how strong each one's best evidence is (the mean of
    the best scores, 0 for a question without one), and how many are corroborated by two sources."""
    covered = len(asked) - len(gaps)
    children = [child.confidence for child in payload.child_reports]
    strength = sum(best) / len(best) if best else 0.0
    if asked:
        if covered == len(asked) and corroborated * 2 >= len(asked) and strength >= STRONG_EVIDENCE:
            level: ConfidenceLevel = "high"
        elif covered * 2 >= len(asked) and strength >= MEDIUM_EVIDENCE:
            level = "medium"
        else:
            level = "low"
    elif children:
        level = "low" if "low" in children else ("high" if set(children) == {"high"} else "medium")
    else:
        level = "low" if not verified else "medium"
    if children and level == "high" and "high" not in children:
        level = "medium"
    strong = level == "high"
    if strong:
        level = "medium"  # see the module's docstring: similarity is not an answer
    reasoning = (
        f"{covered} of {len(asked)} questions answered by a verified fact with confidence at least "
        f"{COVERED_CONFIDENCE}; best evidence per question {', '.join(f'{b:.2f}' for b in best) or 'none'} "
        f"(mean {strength:.2f}; strong from {STRONG_EVIDENCE}); "
        f"{corroborated} of them corroborated by two or more sources; "
        f"{verified} verified facts"
        + (f"; parts: {', '.join(children)}" if children else "")
        + (
            ". Strong, corroborated evidence, but medium at most: the no-model backend picks sentences by "
            "similarity and cannot judge whether they answer the question"
            if strong
            else ""
        )
        + ". Contradictions between sources are looked for by code after the synthesis"
        " (roles/contradictions.py)."
    )
    return Confidence(level=level, reasoning=clip(reasoning, 1000))


def _as_question(gap: str) -> str:
    """The question a gap names; kept as a follow-up only if it reads as one (`reads_as_question`)."""
    return clip(gap.split(": ", 1)[-1].strip(), 300)

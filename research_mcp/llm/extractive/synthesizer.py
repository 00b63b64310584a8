"""The synthesizer without a model: per question, the best passages first, cited; confidence from them.

A fact goes under the question it was extracted for; a fact without one (or with a question not
asked here) goes under the most similar question. Within a question, facts whose normalised text is
equal or whose similarity is at least `DUPLICATE` become one line citing all their verified ids,
unless their numbers or negation differ. Lines are ordered by the ranker's probability that they
hold the answer (research_mcp.answering.ranker), then by corroboration; each is shown as the excerpt
of its passage that says most of the question's words, so that the report's first page (about
`FIRST_PAGE` characters) carries the best evidence for every question: a short line takes only
its length, and what it leaves shows more of the others, or more lines (``page.py``). Lines on
none of the questions asked ("Other findings") show only in what the questions leave of that page.
Only verified facts are cited.

Confidence follows research_mcp.answering.confidence: each question's level comes from its best
passage's probability, how near the other sources' best come to it, and the number of independent
sources (copies count once) agreeing; the
report's level is the lowest of its questions' and its parts'. A question whose best passage is
unlikely to hold the answer is a gap. Contradictions are looked for by code after the synthesis.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from research_mcp.answering.confidence import ANSWERED, independent, level_of, lowest
from research_mcp.answering.questions import reads_as_question
from research_mcp.answering.terms import clip
from research_mcp.core.citations import CITATION, normalize, same_claim
from research_mcp.core.contracts import Confidence, Embedder, Fact, Finding, SynthesisOutput
from research_mcp.core.gaps import Gap
from research_mcp.core.ids import fact_label
from research_mcp.core.role_inputs import SynthesisPayload
from research_mcp.llm.extractive.page import (
    FIRST_PAGE,
    LINE_CHARS,
    LINES_PER_QUESTION,
    collapsed,
    excerpt,
    line_limits,
    page_budgets,
)
from research_mcp.llm.extractive.scoring import Relevance

__all__ = ["COVERED_CONFIDENCE", "DUPLICATE", "FIRST_PAGE", "LINES_PER_QUESTION", "synthesize"]

DUPLICATE = 0.9
COVERED_CONFIDENCE = ANSWERED
MAX_FINDINGS = 15
MAX_GAPS = 10
CHILD_LINES = 6
MAX_REPORT = 19000
OTHER = "Other findings"

_UNVERIFIED_MARK = re.compile(r"\[F\d+, unverified\]")
#: A passage's own list marker or heading marks, shown inside a line that is itself a list item.
_LEADING_MARKS = re.compile(r"^(?:[-*+]\s+|#{1,6}\s+)+")


@dataclass
class Line:
    """One report line: a group of near-duplicate facts."""

    facts: list[Fact] = field(default_factory=list)

    @property
    def verified_ids(self) -> list[int]:
        return sorted({fact.id for fact in self.facts if fact.verified})

    @property
    def representative(self) -> Fact:
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

    @property
    def shown_chars(self) -> int:
        """The characters its quote shows whole (whitespace collapsed)."""
        return len(collapsed(self.representative.quote))

    def render(self, question: str, limit: int) -> str:
        shown = _LEADING_MARKS.sub("", excerpt(self.representative.quote, question, limit))
        return f"- {shown} " + "".join(f"[{fact_label(fact_id)}]" for fact_id in self.verified_ids)


def _said(fact: Fact) -> tuple[str, str]:
    """What a fact says: the order of facts that does not depend on when they were recorded."""
    return (normalize(fact.statement), normalize(fact.quote))


def synthesize(payload: SynthesisPayload, embedder: Embedder | None) -> SynthesisOutput:
    facts = sorted(payload.facts, key=_said)
    # A node asked nothing of its own (a question of several parts) is written by its parts: each
    # fact under the part it bears on most, not a section for every question a fact was found for
    # (a second hop's "WAL: default", an earlier run's question lent with its facts).
    asked = payload.questions or [child.title for child in payload.child_reports]
    groups = _group(asked, facts, embedder)
    lines = {question: _merge(members, embedder) for question, members in groups.items()}
    verified = {fact.id for fact in facts if fact.verified}

    written = _Written(sections=[f"# {payload.title}"])
    cited_by = {question: _cited(question, question_lines) for question, question_lines in lines.items()}
    budgets = page_budgets(
        {
            question: [line.shown_chars for line in cited]
            for question, cited in cited_by.items()
            if question != OTHER
        }
    )
    for question, cited in cited_by.items():
        # Lines on none of the questions asked show only in what the questions leave of the page.
        budget = budgets[question] if question != OTHER else max(0, FIRST_PAGE - written.shown)
        _write_question(written, question, cited, payload.title, budget)
    parts = _from_the_parts(payload, lines, verified, written)
    sections, findings, gaps, cuts = written.sections, written.findings, written.gaps, written.cuts
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
    # This synthesis's own questions left open (a part's, carried up under its title, are the part's).
    question_gaps = [
        gap for gap in gaps if gap.part is None and gap.kind in ("unanswered", "not_established")
    ]
    if len(findings) > MAX_FINDINGS:
        cut = f"Cut short: {len(findings) - MAX_FINDINGS} key findings beyond {MAX_FINDINGS} not listed"
        cuts.append(Gap(kind="cut_short", text=cut))
    output = SynthesisOutput(
        report=report,
        key_findings=findings[:MAX_FINDINGS],
        confidence=_confidence(
            asked, question_gaps, written.corroborated, payload, len(verified), written.levels
        ),
        contradictions=[],
        suggested_followups=[
            q for q in (clip(gap.question or "", 300) for gap in question_gaps[:5]) if reads_as_question(q)
        ],
    )
    output.set_gaps(_bounded([*question_gaps, *cuts, *(gap for gap in gaps if gap not in question_gaps)]))
    return output


@dataclass
class _Written:
    """The report as its questions' sections are written: the sections, the key findings, the gaps
    (questions left open), the lists cut short, each question's level, and how many questions
    more than one source agrees on."""

    sections: list[str]
    findings: list[Finding] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    cuts: list[Gap] = field(default_factory=list)
    levels: list = field(default_factory=list)  # each question's level
    corroborated: int = 0
    shown: int = 0  # characters of evidence the lines written so far may show


def _write_question(written: _Written, question: str, cited: list[Line], title: str, budget: int) -> None:
    """One question's section: its verified lines (`_cited`), within its share of the first page;
    what is cut short, the question left open or not established, and its level."""
    shown = [line.shown_chars for line in cited]
    limits = line_limits(shown, budget) if question != OTHER or budget >= LINE_CHARS else []
    if question == OTHER and not limits:
        if cited:  # nothing of the page is left for them: the facts view lists them
            written.sections.append(
                f"_{len(cited)} more verified lines bear on none of the questions: see the facts view._"
            )
        return
    written.shown += sum(limits)
    if normalize(question).rstrip("?. ") != normalize(title).rstrip("?. "):
        written.sections.append(f"## {clip(question, 300)}")  # the title's own question is not said twice
    if cited:
        written.sections.append(
            "\n".join(line.render(question, limit) for line, limit in zip(cited, limits, strict=False))
        )
    else:
        written.sections.append("_No verified fact answers this._")
    if len(cited) > len(limits):
        cut = (
            f"Cut short: {len(cited) - len(limits)} more verified lines on {question!r} are "
            f"not in the report (it shows {len(limits)}); the facts view lists them"
        )
        written.cuts.append(Gap(kind="cut_short", text=clip(cut, 500), question=question))
    covered = _evidence(question, cited) >= ANSWERED or (
        question == OTHER and any(line.confidence >= ANSWERED for line in cited)
    )
    if question != OTHER:
        written.levels.append(
            level_of(
                _evidence(question, cited), agreeing=_agreeing(question, cited), rival=_rival(question, cited)
            )
        )
    if question != OTHER and not cited:
        # No line at all: unanswered, which a later reading (a phase's iteration) may answer.
        written.gaps.append(Gap.unanswered(question))
    elif question != OTHER and not covered:
        written.gaps.append(Gap.not_established(question))
    if covered and _agreeing(question, cited) >= 2:
        written.corroborated += 1
    for line in cited[:2]:
        written.findings.append(
            Finding(statement=clip(line.representative.statement, 1000), fact_ids=line.verified_ids)
        )


def _from_the_parts(
    payload: SynthesisPayload, lines: dict[str, list[Line]], verified: set[int], written: _Written
) -> list[str]:
    """What the child reports add that the lines above do not already cite (no finding is said
    twice), a section per part; their gaps join the written gaps, under each part's title."""
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
        # phase's iteration read what the part's first reading missed). Nor a part's list cut short on
        # a question this synthesis lists itself: its own cut says what it shows.
        said = {gap.text for gap in [*written.gaps, *written.cuts]}
        listed = {normalize(question) for question in lines if question != OTHER}
        written.gaps.extend(
            gap.under(child.title)
            for gap in child.gaps
            if gap.text not in said
            and not (gap.part is None and gap.kind == "unanswered" and normalize(gap.question or "") in found)
            and not (gap.kind == "cut_short" and normalize(gap.question or "") in listed)
        )
        new_lines = [
            line
            for line in _key_lines(child.report, verified)
            if not {int(i) for i in CITATION.findall(line)} <= shown
        ]
        if new_lines:
            parts += [f"### {child.title} (confidence {child.confidence})", "\n".join(new_lines)]
    return parts


def _evidence(question: str, cited: list[Line]) -> float:
    """The strongest verified fact extracted for `question`: a fact found for another question (a
    lead's, an earlier run's) was scored against that one, and its score says nothing of this one."""
    return max((f.confidence for f in _bearing(question, cited)), default=0.0)


def _bearing(question: str, cited: list[Line]) -> list[Fact]:
    """The verified facts of `cited` found for `question` (or for no question in particular)."""
    asked = normalize(question)
    return [
        f
        for line in cited
        for f in line.facts
        if f.verified and (f.question is None or normalize(f.question) == asked)
    ]


def _rival(question: str, cited: list[Line]) -> float:
    """The strongest verified fact for `question` from another source than the strongest one's (a
    copy of its text in another file is not another source): how near the next place comes."""
    facts = _bearing(question, cited)
    if not facts:
        return 0.0
    best = max(facts, key=lambda f: f.confidence)
    return max(
        (
            f.confidence
            for f in facts
            if independent([(best.source_id, best.quote), (f.source_id, f.quote)]) == 2
        ),
        default=0.0,
    )


def _agreeing(question: str, cited: list[Line]) -> int:
    """Independent sources with a passage likely to answer `question` (copies count once)."""
    return independent(
        [(f.source_id, f.quote) for f in _bearing(question, cited) if f.confidence >= ANSWERED]
    )


def _cited(question: str, question_lines: list[Line]) -> list[Line]:
    """A question's lines citing verified facts, in the order the report shows them."""
    cited = [line for line in question_lines if line.verified_ids]
    if question != OTHER:
        # The lines found for this question first, the strongest for it first ("License: GPL-2+"
        # of ed's copyright file before other files' warranty lines); then those that share
        # the question's terms (a stable sort: corroborated lines first among equals).
        cited.sort(key=lambda line: -_evidence(question, [line]))
    return cited


def _truncated(report: str) -> str:
    """The report cut at a line under MAX_REPORT characters, with no heading left over nothing."""
    kept = report[:MAX_REPORT].rsplit("\n", 1)[0].rstrip()
    while kept and kept.rsplit("\n", 1)[-1].startswith("#"):
        kept = kept.rsplit("\n", 1)[0].rstrip() if "\n" in kept else ""
    return f"{kept}\n\n_(report truncated)_"


def _group(questions: list[str], facts: list[Fact], embedder: Embedder | None) -> dict[str, list[Fact]]:
    """Facts under the question they answer; the others under the most similar question."""
    asked = list(dict.fromkeys(question.strip() for question in questions if question.strip()))
    if not asked:
        asked = list(
            dict.fromkeys(fact.question.strip() for fact in facts if fact.question and fact.question.strip())
        )
    groups: dict[str, list[Fact]] = {question: [] for question in asked}
    by_normal = {normalize(question): question for question in asked}
    homeless: list[Fact] = []
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


def _merge(facts: list[Fact], embedder: Embedder | None) -> list[Line]:
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


def _bounded(gaps: list[Gap]) -> list[Gap]:
    """At most MAX_GAPS gaps; when more, the last one says how many more were not listed."""
    if len(gaps) <= MAX_GAPS:
        return gaps
    cut = Gap(kind="cut_short", text=f"Cut short: {len(gaps) - MAX_GAPS + 1} more gaps not listed")
    return [*gaps[: MAX_GAPS - 1], cut]


def _confidence(
    asked: list[str],
    gaps: list[Gap],
    corroborated: int,
    payload: SynthesisPayload,
    verified: int,
    levels: list,
) -> Confidence:
    """The lowest of the questions' levels and the parts'; a plain sentence on what was found."""
    children = [child.confidence for child in payload.child_reports]
    if asked:
        level = lowest([*levels, *children])
    elif children:
        level = lowest(children)
    else:
        level = "low" if not verified else "medium"
    covered = len(asked) - len(gaps)
    reasoning = (
        f"{covered} of {len(asked)} questions have a passage likely to hold the answer"
        + (f", {corroborated} of them in two or more independent sources" if asked else "")
        + (f"; parts: {', '.join(children)}" if children else "")
        + ". Passages are ranked by how likely they are to hold the answer, not read by a model."
    )
    return Confidence(level=level, reasoning=clip(reasoning, 1000))

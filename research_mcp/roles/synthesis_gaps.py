"""What code finds a synthesis leaves open, whatever the backend said: the questions no verified
fact answers or establishes, the gaps of unmet criteria and failures, the gaps carried from below
that still hold, and the confidence caps of the checked report and of words no document holds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from research_mcp.core.citations import normalize
from research_mcp.core.contracts import ConfidenceCap, Fact, SynthesisOutput
from research_mcp.core.gaps import Gap
from research_mcp.roles.evidence import never_mentioned_cap
from research_mcp.sources.library import coverage_said_once
from research_mcp.storage.outputs import AcceptanceCheck

__all__ = [
    "CRITERION_UNMET",
    "acceptance_gaps",
    "add_gaps",
    "never_mentioned_caps",
    "open_question",
    "report_caps",
    "still_open",
    "unanswered_questions",
    "unestablished_questions",
    "unique_gaps",
]

#: How the gap of an acceptance criterion a synthesis did not meet begins.
CRITERION_UNMET = "Acceptance criterion unmet"


def unanswered_questions(questions: Sequence[str], gaps: Sequence[Gap], notes: Sequence[Gap]) -> set[str]:
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


def unestablished_questions(gaps: Sequence[Gap]) -> set[str]:
    """The questions (normalised) a "Not established by the verified facts" gap names. Not the parts
    of an unmet "cover every part" criterion (no verified finding says all their words): it took
    "This field is used by fsck(8) to determine the order ..." for no answer to "What does the sixth
    field of fstab determine?", which it lacks "sixth" for."""
    found = {gap.question for gap in gaps if gap.kind == "not_established" and gap.question}
    return {normalize(question).rstrip("?. ") for question in found}


def never_mentioned_caps(questions: Sequence[str], notes: Sequence[Gap]) -> list[ConfidenceCap]:
    """The caps of words no document of the corpus holds (runs/leaf.py), this node's leaf's or its
    parts' carried up: never `high`; `low` when every question of the node asks about a name no
    document holds (roles/evidence.py: `never_mentioned_cap`), else `medium`."""
    said = unique_gaps(note for note in notes if note.kind == "never_mentioned")
    if not said:
        return []
    named = {
        normalize(note.question).rstrip("?. ")
        for note in said
        if note.question and never_mentioned_cap(note) == "low"
    }
    every = bool(questions) and all(normalize(q).rstrip("?. ") in named for q in questions)
    return [ConfidenceCap(rule="never_mentioned", level="low" if every else "medium", reason=said[0].text)]


def unique_gaps(gaps: Iterable[Gap]) -> list[Gap]:
    """The gaps, each text once (the first gap saying it)."""
    kept: dict[str, Gap] = {}
    for gap in gaps:
        kept.setdefault(gap.text, gap)
    return list(kept.values())


def add_gaps(output: SynthesisOutput, failed: Sequence[str], found: Sequence[Gap]) -> None:
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


def report_caps(output: SynthesisOutput, *, cites_verified: bool) -> list[ConfidenceCap]:
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


def still_open(carried: Sequence[Gap], facts: Sequence[Fact]) -> list[Gap]:
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
    question = open_question(gap)
    text, saying = gap.text, said.text
    return text[-80:] in saying or text[:80] in saying or (bool(question) and question == open_question(said))


def open_question(gap: Gap) -> str:
    """The question a gap says is unanswered or not established (normalized), else ''."""
    if gap.kind in ("unanswered", "not_established") and gap.question:
        return normalize(gap.question)
    return ""


def acceptance_gaps(acceptance: Sequence[AcceptanceCheck]) -> list[Gap]:
    gaps = []
    for check in acceptance:
        if check.met is False:
            text = f"{CRITERION_UNMET}: {check.criterion!r}: {check.evidence}"[:500]
            gaps.append(Gap(kind="criterion_unmet", text=text))
        elif check.met is None:
            text = f"Acceptance criterion not checked: {check.criterion!r} ({check.evidence})"[:500]
            gaps.append(Gap(kind="requirement", text=text))
    return gaps

"""Confidence and gaps computed by code from the evidence a synthesis was given, whatever the backend.

A synthesizer's confidence is capped by what its facts can support, each cap saying why; only
general caps are kept, the answer itself being the ranker's to score (research_mcp.answering) or a
language model's to judge:

- no verified fact in its input: `low`;
- questions covered: a question no verified fact was extracted for is a gap (judged where verified
  facts answer some of the questions asked); more than half such questions: `low`, some: `medium`;
- corroboration: `high` needs at least half the answered questions backed by two sources;
- acceptance criteria of the leaf's task specs: some unmet, `medium`; all unmet, `low`;
- words a question asks about that no document of the corpus mentions (a note runs/leaf.py writes):
  `low` when one is a name or a technical term, else `medium` (`never_mentioned_cap`).

Every list cut short (facts beyond what a synthesis reads) is a gap too. The rules that once judged
by question form and word lists (who, when, which file, a subject's name ...) were retired with the
general ranker: on corpora they were not written for they called most misses `medium` anyway.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from research_mcp.answering.terms import terms
from research_mcp.core.citations import normalize
from research_mcp.core.contracts import Confidence, ConfidenceCap, ConfidenceLevel, Fact
from research_mcp.core.gaps import Gap
from research_mcp.llm.embeddings import english_words
from research_mcp.storage.outputs import AcceptanceCheck

__all__ = [
    "STRONG_EVIDENCE",
    "Evidence",
    "cap_confidence",
    "judge_evidence",
    "never_mentioned_cap",
    "technical",
]

#: A fact at least this confident is strong evidence (a phase's iteration does not ask its question again).
STRONG_EVIDENCE = 0.6
_LEVELS: dict[ConfidenceLevel, int] = {"low": 0, "medium": 1, "high": 2}


@dataclass
class Evidence:
    """What code found missing in a synthesis's evidence, and the confidence caps it implies."""

    gaps: list[Gap] = field(default_factory=list)
    caps: list[ConfidenceCap] = field(default_factory=list)

    def cap(self, confidence: Confidence) -> Confidence:
        """`confidence` no higher than the lowest cap, the reasoning naming every rule that caps it."""
        if not self.caps:
            return confidence
        level = min((cap.level for cap in self.caps), key=_LEVELS.__getitem__)
        why = "; ".join(cap.reason for cap in self.caps if _LEVELS[cap.level] < _LEVELS[confidence.level])
        return cap_confidence(confidence, level, why)


def never_mentioned_cap(gap: Gap) -> ConfidenceLevel:
    """How far a note that the corpus never mentions some of a question's words caps its confidence:
    `low` when one is a name the question gives (capitalised after its first word, in capitals, or
    an identifier joined by "_", "." or "-": "Australia", "MAX_AGE") or a technical term (a
    word outside common English in every spelling: "noatime", "umask"), the documents being about
    other things; `medium` for a common word ("people", "harbour"), which a small folder may answer
    a question without."""
    if gap.kind != "never_mentioned" or gap.question is None:
        return "medium"
    later = " ".join(gap.question.split()[1:])
    for word in gap.words:
        capitalised = re.search(rf"(?<![\w-]){re.escape(word[:1].upper() + word[1:])}(?![\w-])", later)
        if any(mark in word for mark in "_.-") or (word.isupper() and len(word) >= 2) or capitalised:
            return "low"
        if technical(word):
            return "low"
    return "medium"


def technical(word: str) -> bool:
    """A word outside common English (MiniLM's vocabulary) in every spelling the matching knows:
    "noatime", "umask", "utf8"; not "hashing" (its stem "hash" is English) nor a number."""
    if not word.isalnum() or word.isdigit():
        return False
    english = english_words()
    return not any(spelling in english for spelling in {word.casefold(), *terms(word)})


def judge_evidence(
    questions: Sequence[str],
    facts: Sequence[Fact],
    *,
    in_scope: int,
    read: int,
    acceptance: Sequence[AcceptanceCheck] = (),
    cited_in: Mapping[int, Collection[int]] | None = None,
) -> Evidence:
    """The gaps and caps of a synthesis given `facts` (`read` of the `in_scope` facts were given);
    `cited_in`, every source a fact was found in by its id (a line several files share)."""
    evidence = Evidence()
    asked = list(dict.fromkeys(q for q in questions if q.strip()))
    verified = [fact for fact in facts if fact.verified]
    by_question: dict[str, list[Fact]] = {}
    for fact in verified:
        if fact.question:
            by_question.setdefault(normalize(fact.question), []).append(fact)
    # Judged only where facts were extracted for these questions (task specs may ask others).
    judged = [q for q in asked if normalize(q) in by_question]
    unanswered = [q for q in asked if normalize(q) not in by_question] if judged else []
    evidence.gaps += [Gap.unanswered(q) for q in unanswered]
    if in_scope > read:
        evidence.gaps.append(
            Gap(
                kind="cut_short",
                text=f"Cut short: {in_scope - read} of {in_scope} facts in scope were not given to the "
                f"synthesis (at most {read}; the least verified and corroborated were left out)",
            )
        )
    if not verified:
        evidence.caps.append(
            ConfidenceCap(rule="no_verified_fact", level="low", reason="no verified fact in its input")
        )
        return evidence
    if unanswered:
        share = f"{len(unanswered)} of {len(asked)} questions without a verified fact"
        level: ConfidenceLevel = "low" if len(unanswered) * 2 > len(asked) else "medium"
        evidence.caps.append(ConfidenceCap(rule="unanswered_questions", level=level, reason=share))
    groups = [by_question[normalize(q)] for q in judged] or [verified]
    sources_of = cited_in or {}
    corroborated = sum(
        1
        for group in groups
        if len({source for fact in group for source in [fact.source_id, *sources_of.get(fact.id, ())]}) > 1
    )
    if corroborated * 2 < len(groups):
        why = f"{corroborated} of {len(groups)} answered questions backed by two or more sources"
        evidence.caps.append(ConfidenceCap(rule="corroboration", level="medium", reason=why))
    unmet = [check for check in acceptance if check.met is False]
    if unmet:
        why = f"{len(unmet)} of {len(acceptance)} acceptance criteria unmet"
        evidence.caps.append(
            ConfidenceCap(
                rule="acceptance", level="low" if len(unmet) == len(acceptance) else "medium", reason=why
            )
        )
    return evidence


def cap_confidence(confidence: Confidence, cap: ConfidenceLevel, why: str) -> Confidence:
    """`confidence` no higher than `cap`; when lowered, the reasoning says to what and why."""
    if _LEVELS[confidence.level] <= _LEVELS[cap]:
        return confidence
    reasoning = (
        f"Capped at {cap} by code ({why}); the synthesis said {confidence.level}: {confidence.reasoning}"
    )
    return Confidence(level=cap, reasoning=reasoning[:1000])

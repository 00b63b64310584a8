"""A leaf's task specs acted on: their expected format enforced and their acceptance criteria judged.

Code judges what it can read off the report and the verified facts it cites:

- "at least N sources" (or "N or more sources"): distinct sources behind the cited verified facts;
- "at least N items" (examples, entries, points, facts, findings, ...): the report's list items or
  table rows, else its cited verified facts;
- "includes", "mentions", "names" or "covers" X (X quoted, or the rest of the criterion): X in the
  report;
- "cites a source from" a domain (".gov", "who.int") or a year ("2023", "after 2020"): a cited
  source's address on that domain, or a cited source's title, address or quote naming that year
  (or a later one, for "after" and "since");
- an expected format of a table, a numbered list or a list: the report has one; if not, code
  reshapes it (the key findings, with their citations, as that table or list).

A criterion code cannot read goes to the model: the synthesizer is asked a verdict on each (its
`criteria`), recorded as judged "by model". With no model to ask (the extractive backend) it is
recorded "unchecked", and the gaps say so. Every unmet criterion is a gap naming the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from research_mcp.core.contracts import CriterionVerdict, ExtractorTaskSpec, Fact, Finding
from research_mcp.core.ids import fact_label, source_label
from research_mcp.storage.outputs import AcceptanceCheck

__all__ = ["Criterion", "judge", "numbered_criteria", "reshape", "summary_asked"]

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
_COUNT = re.compile(
    r"\b(?:at least|no fewer than|a minimum of|minimum of|min\.?)\s+(\d+|"
    + "|".join(_NUMBER_WORDS)
    + r")\s+(?:distinct\s+|different\s+|independent\s+|separate\s+)?([a-z]+)"
    r"|\b(\d+|" + "|".join(_NUMBER_WORDS) + r")\s+or more\s+(?:distinct\s+|different\s+)?([a-z]+)",
    re.IGNORECASE,
)
_SOURCE_WORDS = {
    "source",
    "sources",
    "reference",
    "references",
    "document",
    "documents",
    "citation",
    "citations",
}
_MENTIONS = re.compile(
    r"\b(?:includes?|including|mentions?|names?|covers?|contains?|discuss(?:es)?|addresses)\s+(.+)$",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“'‘]([^\"”'’]{2,120})[\"”'’]")
_FROM = re.compile(
    r"\b(?:sources?|references?|documents?|citations?|stud(?:y|ies)|papers?|articles?)\b.*?"
    r"\b((?:from|published (?:in|on|by|after|since)|dated)\s+.+)$",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_DOMAIN = re.compile(
    r"(?<![\w@])(\.?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:[a-z]{2,24}))\b|(?<![\w.])(\.[a-z]{2,24})\b"
)
_LATER = re.compile(r"\b(after|since|or later|or newer|onwards|from \d{4} on)\b", re.IGNORECASE)
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_BULLET = re.compile(r"^\s*[-*+]\s+\S")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+\S")
_SUMMARY = re.compile(r"\b(summar(?:y|ies|ise|ize|ised|ized)|concise|brief(?:ly)?|tl;?dr|in short)\b", re.I)
_CITED = re.compile(r"\[F(\d+)\]")


@dataclass(frozen=True)
class Criterion:
    """An acceptance criterion (or a spec's expected format, `format` true) and the spec it is of."""

    spec: int
    text: str
    format: bool = False

    @property
    def label(self) -> str:
        return f"expected format: {self.text}" if self.format else self.text


def numbered_criteria(specs: Sequence[ExtractorTaskSpec]) -> list[Criterion]:
    """Every acceptance criterion of the specs, then each expected format code cannot enforce itself."""
    criteria = [
        Criterion(index, text.strip())
        for index, spec in enumerate(specs)
        for text in spec.acceptance_criteria
    ]
    criteria += [
        Criterion(index, spec.expected_format.strip(), format=True)
        for index, spec in enumerate(specs)
        if spec.expected_format.strip() and _format_kind(spec.expected_format) is None
    ]
    return [criterion for criterion in criteria if criterion.text]


def summary_asked(spec: ExtractorTaskSpec | None) -> bool:
    """Whether a task spec asks for a summary (its expected format, or a question that says so)."""
    if spec is None:
        return False
    return bool(_SUMMARY.search(spec.expected_format)) or any(_SUMMARY.search(q) for q in spec.questions)


def _format_kind(expected: str) -> str | None:
    lowered = expected.lower()
    if "table" in lowered:
        return "table"
    if re.search(r"\bnumbered\b|\branked\b|\bordered list\b", lowered):
        return "numbered"
    if re.search(r"\blist\b|\bbullet", lowered):
        return "list"
    return None


def _has_format(report: str, kind: str) -> bool:
    lines = report.splitlines()
    if kind == "table":
        return any(_TABLE_ROW.match(line) for line in lines) and any(
            _TABLE_RULE.match(line) for line in lines
        )
    if kind == "numbered":
        return sum(1 for line in lines if _NUMBERED.match(line)) >= 2
    return sum(1 for line in lines if _BULLET.match(line) or _NUMBERED.match(line)) >= 2


def reshape(
    report: str, specs: Sequence[ExtractorTaskSpec], findings: Sequence[Finding]
) -> tuple[str, list[str]]:
    """The report in each spec's expected format (a table or a list of its key findings appended when
    it has none), and the gaps for a format that could not be given (no key findings to put in it)."""
    gaps: list[str] = []
    for expected in dict.fromkeys(spec.expected_format.strip() for spec in specs):
        kind = _format_kind(expected) if expected else None
        if kind is None or _has_format(report, kind):
            continue
        rows = [finding for finding in findings if finding.statement.strip()]
        if not rows:
            gaps.append(f"Expected format not met: {expected!r}: no key findings to give in that form")
            continue

        def cites(finding: Finding) -> str:
            return "".join(f"[{fact_label(fact_id)}]" for fact_id in finding.fact_ids)

        def cell(text: str) -> str:
            return " ".join(text.replace("|", "/").split())

        if kind == "table":
            body = ["| Finding | Facts |", "|---|---|"]
            body += [f"| {cell(finding.statement)} | {cites(finding)} |" for finding in rows]
        elif kind == "numbered":
            body = [f"{n}. {cell(finding.statement)} {cites(finding)}" for n, finding in enumerate(rows, 1)]
        else:
            body = [f"- {cell(finding.statement)} {cites(finding)}" for finding in rows]
        report = f"{report.rstrip()}\n\n## In the expected format ({cell(expected)})\n\n" + "\n".join(body)
    return report, gaps


def judge(
    criteria: Sequence[Criterion],
    *,
    report: str,
    cited: Sequence[Fact],
    source_of: Callable[[int], tuple[str, str]],
    verdicts: Sequence[CriterionVerdict],
) -> list[AcceptanceCheck]:
    """Each criterion judged: by code where it can be read off the report and `cited` (the verified
    facts it cites; `source_of(source_id)` gives a source's address and title), else by the model's
    verdict (`verdicts`, by number), else unchecked."""
    by_index = {verdict.index: verdict for verdict in verdicts}
    checks = []
    for index, criterion in enumerate(criteria):
        code = None if criterion.format else _by_code(criterion.text, report, cited, source_of)
        if code is not None:
            met, evidence = code
            checks.append(
                AcceptanceCheck(
                    spec=criterion.spec, criterion=criterion.label, met=met, by="code", evidence=evidence
                )
            )
        elif index in by_index:
            verdict = by_index[index]
            checks.append(
                AcceptanceCheck(
                    spec=criterion.spec,
                    criterion=criterion.label,
                    met=verdict.met,
                    by="model",
                    evidence=verdict.evidence,
                )
            )
        else:
            why = "code cannot read it, and the synthesis gave no verdict on it"
            checks.append(AcceptanceCheck(spec=criterion.spec, criterion=criterion.label, evidence=why))
    return checks


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def _items(report: str) -> int:
    lines = report.splitlines()
    listed = sum(1 for line in lines if _BULLET.match(line) or _NUMBERED.match(line))
    rows = sum(1 for line in lines if _TABLE_ROW.match(line) and not _TABLE_RULE.match(line))
    return max(listed, rows - 1 if rows else 0)


def _by_code(
    text: str, report: str, cited: Sequence[Fact], source_of: Callable[[int], tuple[str, str]]
) -> tuple[bool, str] | None:
    """(met, evidence) for a criterion code can read, else None."""
    sources = sorted({fact.source_id for fact in cited})
    count = _COUNT.search(text)
    wanted = _count(count.group(1) or count.group(3)) if count else 1
    noun = (count.group(2) or count.group(4)).lower() if count else ""
    if place := _FROM.search(text):
        matching = _from(place.group(1).strip(" ."), cited, source_of)
        if matching is not None:
            found, what = matching
            named = ", ".join(source_label(source_id) for source_id in found[:5])
            if len(found) >= wanted:
                return True, f"{len(found)} cited sources {what}: {named}"
            return False, f"{len(found)} of the {wanted} cited sources wanted {what}" + (
                f": {named}" if named else ""
            )
    if count:
        if noun in _SOURCE_WORDS:
            return len(sources) >= wanted, f"{len(sources)} sources behind the cited verified facts"
        items = _items(report) or len({fact.id for fact in cited})
        return items >= wanted, f"{items} {noun} in the report"
    if match := _MENTIONS.search(text):
        quoted = _QUOTED.findall(match.group(1))
        terms = quoted or [match.group(1).strip(" .\"'")]
        if not quoted and len(terms[0].split()) > 4:
            return None  # a description, not a name: the model judges it
        lowered = report.lower()
        missing = [term for term in terms if term.lower() not in lowered]
        if missing:
            return False, f"the report does not mention {', '.join(repr(term) for term in missing)}"
        return True, f"the report mentions {', '.join(repr(term) for term in terms)}"
    return None


def _from(
    wanted: str, cited: Sequence[Fact], source_of: Callable[[int], tuple[str, str]]
) -> tuple[list[int], str] | None:
    """The cited sources from a year (or later) or a domain, and what was asked; None if neither."""
    if year := _YEAR.search(wanted):
        target, later = int(year.group(1)), bool(_LATER.search(wanted))
        found = []
        for fact in cited:
            ref, title = source_of(fact.source_id)
            years = [int(y) for y in _YEAR.findall(f"{ref} {title} {fact.quote}")]
            if any(y == target or (later and y > target) for y in years) and fact.source_id not in found:
                found.append(fact.source_id)
        return found, f"naming {target}" + (" or later" if later else "")
    if domain := _DOMAIN.search(wanted.lower()):
        suffix = (domain.group(1) or domain.group(2)).lstrip(".")
        found = []
        for source_id in sorted({fact.source_id for fact in cited}):
            ref, _title = source_of(source_id)
            host = re.sub(r"^[a-z]+://", "", ref.lower()).split("/", 1)[0].split(":", 1)[0]
            if host == suffix or host.endswith(f".{suffix}"):
                found.append(source_id)
        return found, f"on {suffix}"
    return None


def cited_facts(report: str, facts: Sequence[Fact]) -> list[Fact]:
    """The verified facts of `facts` that `report` cites."""
    ids = {int(found) for found in _CITED.findall(report)}
    return [fact for fact in facts if fact.verified and fact.id in ids]

"""What code writes into a synthesis's report, whatever the backend wrote: each question found
unanswered marked under its heading, the failures listed under the report, the contradictions code
found between the sources; and every free text of the output checked for forged citations and
foreign links (roles/synthesizer.py calls these from its check)."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

from research_mcp.core.citations import CitationChecker, normalize
from research_mcp.core.contracts import SynthesisOutput
from research_mcp.roles.synthesis_summary import NOT_COVERED

__all__ = [
    "CONTRADICTIONS",
    "NOT_ANSWERED_HERE",
    "NOT_ESTABLISHED_HERE",
    "checked_texts",
    "marked_unanswered",
    "with_contradictions",
    "with_failures",
]

CONTRADICTIONS = "## Contradictions between sources"


#: Said under a question's heading when code found that no verified fact answers it.
NOT_ANSWERED_HERE = (
    "_Not established: no document read answers this; the lines below are the closest the sources say._"
)


#: Said instead where code's checks found no line answering the question in its own terms: the
#: lines may still answer it in other words ("login(1) will allow access only to root" for "What does
#: /etc/nologin restrict?"), and the part's confidence says how far to trust them.
NOT_ESTABLISHED_HERE = (
    "_Not established: no line below says this in the question's terms; read them as leads._"
)


_HEADING = re.compile(r"^#{1,3} (.+)$")


def with_failures(report: str, failures: list[str]) -> str:
    """The report, followed by what could not be researched and why (written by code, not the model)."""
    if not failures:
        return report
    return f"{report.rstrip()}\n\n{NOT_COVERED}\n\n" + "\n".join(f"- {failure}" for failure in failures)


def marked_unanswered(
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


def with_contradictions(report: str, found: list[str]) -> str:
    """The report, followed by the contradictions code found between its sources."""
    if not found:
        return report
    return f"{report.rstrip()}\n\n{CONTRADICTIONS}\n\n" + "\n".join(f"- {item}" for item in found)


def checked_texts(output: SynthesisOutput, checker: CitationChecker) -> str:
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

"""What the synthesizer model is shown: its payload (the facts in scope, what the sources leave open,
the lower reports) written as one prompt, with the source text framed as data."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from research_mcp.core.ids import fact_label, source_label
from research_mcp.core.role_inputs import SynthesisPayload
from research_mcp.roles.acceptance import Criterion
from research_mcp.roles.framing import frame

__all__ = ["synthesis_prompt"]


def synthesis_prompt(
    payload: SynthesisPayload, criteria: Sequence[Criterion], prior: Collection[int] = ()
) -> str:
    """The synthesizer model's prompt: the node and its questions, the expected format and the
    acceptance criteria to judge by number, the facts in scope (each with its source, whether its
    quote was verified, and whether it comes from earlier research: `prior`), what the sources
    leave open, and the reports of the parts below, each framed as data."""
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

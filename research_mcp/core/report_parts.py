"""A report's parts, as the summary view shows them: each section's heading with its first lines
and how many more the report view holds."""

from __future__ import annotations

__all__ = ["SUMMARY_LINES_ALONE", "SUMMARY_LINES_PER_PART", "report_parts", "summary_parts"]

#: Lines of each part of a report the summary view shows (the report view has them all); of a
#: report without parts, the lines it shows.
SUMMARY_LINES_PER_PART = 2
SUMMARY_LINES_ALONE = 5


def report_parts(findings: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """A report's title line, and its parts in order: each section's heading ("" for the lines
    before the first) with its lines."""
    title = ""
    parts: list[tuple[str, list[str]]] = [("", [])]
    for raw in findings.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("# ") and not title and not any(lines for _, lines in parts):
            title = line
        elif line.startswith("## "):
            parts.append((line, []))
        else:
            parts[-1][1].append(line)
    return title, [(heading, lines) for heading, lines in parts if heading or lines]


def summary_parts(findings: str, contradictions: list[str]) -> list[str]:
    """Every part of the report, each with its first lines and how many more the report holds; the
    contradictions it lists are said apart, with the confidence, so they are left out here."""
    title, parts = report_parts(findings)
    listed = {f"- {item}" for item in contradictions}
    lines = [title] if title else []
    sections = [part for part in parts if part[0]]
    for heading, body in parts:
        body = [line for line in body if line not in listed]
        if not body and heading:
            continue  # the contradictions' own heading, said above
        shown = body[: SUMMARY_LINES_PER_PART if sections else SUMMARY_LINES_ALONE]
        lines += [heading] if heading else []
        lines += shown
        if len(body) > len(shown):
            more = len(body) - len(shown)
            lines.append(f"(and {more} more line{'s' if more > 1 else ''} in the report view)")
    return lines

"""The report written from an outline: for an executor over several parts with a model backend, a
section per part (its title and what it asked), then one on the whole. The synthesizer is given
the outline with its prompt; a section the report leaves out is named in its gaps."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["WHOLE", "outline_gaps", "outline_prompt", "sections"]

#: The last section: what the parts show together.
WHOLE = "The whole"


def sections(parts: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """The outline for parts given as (title, questions): one heading per part, then the whole."""
    headings = [
        f"{title}: {'; '.join(questions)[:200]}" if questions else title for title, questions in parts
    ]
    return [*headings, f"{WHOLE}: what the parts show together (patterns, causes, links between them)"]


def _heading(section: str) -> str:
    return section.split(":", 1)[0].strip()


def outline_prompt(outline: Sequence[str]) -> str:
    if not outline:
        return ""
    lines = [f"{number}. ## {section}" for number, section in enumerate(outline, 1)]
    return (
        "\nOutline: write the report in these sections, in this order, each under a '## ' heading "
        "with the title before the colon; in each part's section give its answer, then its patterns, "
        "causes, standout details and links to the other parts; end with the whole:\n" + "\n".join(lines)
    )


def outline_gaps(outline: Sequence[str], report: str) -> list[str]:
    """A gap for each section of the outline whose heading the report does not give."""
    said = report.casefold()
    return [
        f"The report leaves out the outline's section {_heading(section)!r}"
        for section in outline
        if f"## {_heading(section).casefold()}" not in said
    ]

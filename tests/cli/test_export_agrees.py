"""The HTML export says what the run says, in the same order: the confidence before the answer, a
quoted line as its source wrote it (no Markdown made of a licence's blanks)."""

from __future__ import annotations

from research_mcp.cli.exports import render_html
from research_mcp.run_document import RunDocument
from tests.cli.test_export_html import hostile_fields

BLANKS = "Copyright [yyyy] [name of copyright owner] under the [____] License, *as is*, _without_ warranty"


def _document(backend: str) -> RunDocument:
    fields = hostile_fields("title")
    fields["run"]["backend"] = backend
    fields["findings"] = f"# Licence\n\n- {BLANKS} [F1]\n"
    return RunDocument.model_validate(fields)


def test_a_quoted_line_is_shown_as_written_and_the_confidence_comes_first() -> None:
    page = render_html(_document("extractive"))
    report = page.split('<section id="report">', 1)[1].split("</section>", 1)[0]
    assert "<em>" not in report and "<strong>" not in report, report
    assert "[____] License, *as is*, _without_ warranty" in report
    assert page.index('<section id="confidence">') < page.index('<section id="report">')


def test_a_models_report_keeps_its_markdown() -> None:
    page = render_html(_document("anthropic"))
    report = page.split('<section id="report">', 1)[1].split("</section>", 1)[0]
    assert "<em>as is</em>" in report

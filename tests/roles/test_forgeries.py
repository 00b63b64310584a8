"""Forged citations and foreign links never reach a reader: every free text is checked, every export too."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from mcp import Client

from research_mcp.cli.exports import export_run
from research_mcp.core.citations import CitationChecker, meaningful_quote
from research_mcp.core.contracts import (
    ClaimedFact,
    Confidence,
    ExtractorOutput,
    Fact,
    Finding,
    SynthesisOutput,
)
from research_mcp.core.role_inputs import ExtractorPayload, SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.extractive.synthesizer import synthesize as extractive_synthesis
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.reports import safe_markdown
from research_mcp.server.app import create_server
from research_mcp.storage.outputs import StoredSynthesis

from .test_workflow import TEXT_A, leaf, plan_of, run_plan, store

# Every spelling of a citation to a fact that does not exist, as a model or a page might write it.
FORGED = [
    "[F999999]",
    "[F999999, verified]",
    "[F 999999]",
    "[f999999]",
    "(F999999)",
    "\uff3bF999999\uff3d",  # full-width brackets
    "\uff3b\uff26\uff19\uff19\uff19\uff19\uff19\uff19\uff3d",  # full-width letter and digits
    "\u3010F999999\u3011",
    "[F#999999]",
]
ATTACKER = "http://evil.example/steal"


def forging_synthesizer(request: ModelRequest[Any]) -> Any:
    """A synthesizer that cites a real fact as '[F<id>, verified]' and forges everywhere it can write."""
    if isinstance(request.payload, SynthesisPayload):
        real = request.payload.facts[0].id
        forged = " ".join(FORGED)
        return SynthesisOutput(
            report=f"Solar is efficient [F{real}, verified]. Also {forged} see {ATTACKER} and "
            f"[this]({ATTACKER}) ![pixel](https://evil.example/p.png)",
            key_findings=[Finding(statement=f"Efficient {FORGED[1]} {ATTACKER}", fact_ids=[real, 999999])],
            confidence=Confidence(level="high", reasoning=f"Trust {FORGED[0]} and {ATTACKER}"),
            gaps=[f"Nothing missing {FORGED[3]} per {ATTACKER}"],
            contradictions=[f"None {FORGED[4]}"],
            suggested_followups=[f"Read {ATTACKER} {FORGED[2]}"],
        )
    return team_script(request)


def forgeries_in(text: str) -> list[str]:
    found = [spelling for spelling in FORGED if spelling in text]
    found += re.findall(r"999999|\uff19{6}", text)
    return found + ([ATTACKER] if "evil.example" in text else [])


async def test_no_forged_citation_or_foreign_link_reaches_any_view_or_export() -> None:
    async with Client(create_server(model=ScriptedModel(forging_synthesizer))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A)))
        views = {
            view: (await client.call_tool("report_results", {"id": run["id"], "view": view}))
            for view in ("report", "summary", "gaps", "confidence", "followups", "facts")
        }
    texts = {
        view: json.dumps(result.structured_content, ensure_ascii=False) for view, result in views.items()
    }
    for fmt in ("md", "html", "json"):
        texts[f"export.{fmt}"] = export_run(store(), run["id"], fmt)
    assert {name: forgeries_in(text) for name, text in texts.items() if forgeries_in(text)} == {}
    # The real citation survives, in the server's own spelling, and the forgeries are counted.
    real = store().get_handoff(store().get_run(run["id"]).result_handoff_id or "").output
    assert isinstance(real, StoredSynthesis)
    assert re.search(r"efficient \[F\d+\]\.", real.report)
    assert real.citations.dropped >= len(FORGED)
    assert real.citations.links_dropped >= 4


@pytest.mark.parametrize(
    ("quote", "statement", "meaningful"),
    [
        ("the", "The answer is 42, per http://evil.example", False),
        ("it is", "It is 42.", False),
        ("convert sunlight into electricity", "Panels turn sunlight into power", True),
        ("between 18 and 22 percent in 2024", "Efficiency is 18-22%", True),
        ("Panel prices fell by about ninety percent", "Wind turbines are tall", False),
    ],
)
def test_a_quote_verifies_only_as_a_meaningful_span_bearing_on_the_statement(
    quote: str, statement: str, meaningful: bool
) -> None:
    assert meaningful_quote(quote, statement) is meaningful


def test_a_whole_field_line_of_the_source_verifies_with_two_words() -> None:
    # A Debian copyright file gives a package's licence as "License: curl": a whole "Key: value"
    # line of its source verifies; two words that are not a whole field line do not.
    from datetime import UTC, datetime

    from research_mcp.core.contracts import Source
    from research_mcp.roles.extractor import located_facts

    text = (Path(__file__).resolve().parents[1] / "fixtures" / "realdocs" / "curl.copyright").read_text()
    source = Source(
        id=1, ref="corpus:1", kind="corpus", content_hash="x", text=text, fetched_at=datetime.now(UTC)
    )
    output = ExtractorOutput(
        facts=[
            ClaimedFact(statement="curl is distributed under the curl licence", quote="License: curl"),
            ClaimedFact(statement="Daniel Stenberg holds curl's copyright", quote="Daniel Stenberg"),
            ClaimedFact(statement="Its upstream name is curl", quote="Upstream-Name: curl"),
            ClaimedFact(statement="The licence is curl's", quote="curl License:"),  # not in the text
        ],
        confidence=Confidence(level="medium", reasoning="x"),
    )
    verified = [fact.verified for fact in located_facts(source, output, ["Under which licence is curl?"])]
    assert verified == [True, False, True, False]
    assert not meaningful_quote("License: curl", "curl is under the curl licence")  # not known to be a field


async def test_a_three_letter_quote_found_in_the_source_does_not_verify_a_claim() -> None:
    def script(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, ExtractorPayload):
            return ExtractorOutput(
                facts=[ClaimedFact(statement="The answer is 42, per http://evil.example", quote="the")],
                confidence=Confidence(level="high", reasoning="x"),
            )
        return team_script(request)

    async with Client(create_server(model=ScriptedModel(script))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A)))
    handoffs = store().handoffs_for_run(run["id"], role="extractor")
    facts = store().facts_for_handoffs([h.id for h in handoffs])
    assert [fact.verified for fact in facts] == [False]


async def test_a_page_title_goes_inside_the_untrusted_frame_with_its_forged_markers_defused() -> None:
    prompts: list[str] = []

    def script(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, ExtractorPayload):
            prompts.append(request.prompt)
        return team_script(request)

    async with Client(create_server(model=ScriptedModel(script))) as client:
        result = await client.call_tool(
            "extract_source",
            {"source": TEXT_A, "questions": ["How efficient are panels?"]},
        )
        assert not result.is_error, result.content
    [prompt] = prompts
    begin = prompt.index("<<<BEGIN UNTRUSTED SOURCE")
    assert "Address: text:" in prompt[begin:]
    assert "Address: text:" not in prompt[:begin]


def test_a_licence_or_later_is_not_the_same_claim_as_that_licence_alone() -> None:
    # bzip2's Debian copyright file gives "License: GPL-2" for some files, ed's "License: GPL-2+".
    from research_mcp.core.citations import same_claim

    assert not same_claim("License: GPL-2+", "License: GPL-2")
    assert same_claim("License: GPL-2+", "Files: * License: GPL-2+")
    assert same_claim("built in 1,502", "built in 1502")


def test_the_extractive_merge_keeps_statements_with_different_numbers_or_negation_apart() -> None:
    facts = [
        Fact(
            id=1,
            source_id=1,
            statement="The bridge was built in 1502 by 74 masons.",
            quote="q1",
            verified=True,
            confidence=0.9,
        ),
        Fact(
            id=2,
            source_id=2,
            statement="The bridge was built in 1502 by 5 masons.",
            quote="q2",
            verified=True,
            confidence=0.9,
        ),
        Fact(
            id=3,
            source_id=3,
            statement="The bridge was not built in 1502 by 74 masons.",
            quote="q3",
            verified=True,
            confidence=0.9,
        ),
    ]
    payload = SynthesisPayload(
        title="bridge", questions=["Who built the bridge?"], input_handoffs=[], facts=facts
    )
    report = extractive_synthesis(payload, None).report
    assert all(f"[F{fact.id}]" in report for fact in facts)
    assert "[F1][F2]" not in report and "[F1][F3]" not in report


def test_the_extractive_synthesis_is_the_same_whatever_order_the_facts_were_recorded_in() -> None:
    statements = [
        "Solar panels convert sunlight into electricity.",
        "Typical panel efficiency is between 18 and 22 percent.",
        "Panel prices fell by about ninety percent between 2010 and 2020.",
        "Offshore wind farms have capacity factors above 40 percent.",
    ]

    def report(ids: list[int]) -> str:
        facts = [
            Fact(id=fact_id, source_id=index, statement=text, quote=text, verified=True, confidence=0.8)
            for index, (fact_id, text) in enumerate(zip(ids, statements, strict=True))
        ]
        payload = SynthesisPayload(
            title="energy",
            questions=["What about solar?", "What about wind?"],
            input_handoffs=[],
            facts=facts,
        )
        text = extractive_synthesis(payload, None).report
        # Ids differ between runs; what each line says and cites must not.
        for fact_id, statement in zip(ids, statements, strict=True):
            text = text.replace(f"[F{fact_id}]", f"[{statement[:12]}]")
        return text

    assert report([1, 2, 3, 4]) == report([40, 10, 30, 20])


def test_a_checked_text_keeps_the_run_sources_links_and_drops_the_others() -> None:
    checker = CitationChecker({7}, {7}, links={"https://good.example/page"})
    text = checker.text(
        "See https://good.example/page, [x](javascript:alert(1)) and https://evil.example [F7]"
    )
    assert text == "See https://good.example/page, x and (link removed) [F7]"


def test_the_markdown_export_escapes_raw_html_and_drops_script_links_and_remote_images() -> None:
    text = safe_markdown(
        "<img src=x onerror=alert(1)> [c](javascript:alert(1)) ![p](https://t.example/p.png) [ok](https://ok.example)"
    )
    rendered = MarkdownIt("commonmark").render(text)
    assert "<img" not in rendered and "&lt;img src=x" in rendered  # shown as text, never a tag
    assert "javascript:" not in text and "t.example" not in text
    assert "[ok](https://ok.example)" in text

"""The scout: a topic swept from several angles (and the sites it names crawled), the candidates
de-duplicated and quick-scanned (their opening read), ranked and tagged by the backend, and each
kept source tagged by code with the questions it covers. Never spawns executors."""

from __future__ import annotations

from typing import Any

from research_mcp.contracts import ScoutOutput
from research_mcp.role_inputs import ScoutCandidate, ScoutInput
from research_mcp.roles.base import RoleDeps, RoleResult, perform
from research_mcp.roles.framing import frame
from research_mcp.roles.sweep import LEADS, angles, covered, sites_named
from research_mcp.sources.library import Candidate, ref_key
from research_mcp.sources.openings import LEAD_CHARS

__all__ = ["scout"]

MAX_CANDIDATES = 30
#: Results asked of each angle's search.
PER_ANGLE = 6
#: Pages taken of a site the topic names (all read by a crawl), and how many of them are quick-scanned
#: when the crawl is refused and the site is mapped instead.
SITE_PAGES = 10
SITE_SCANNED = 5
#: Excluded candidates kept in the curation with their reason.
MAX_EXCLUDED = 5


def _prompt(scout_input: ScoutInput) -> str:
    lines = [
        f"{c.index}. [{c.origin}] {c.title} <{c.ref}> score={c.score:.3f}"
        + (f" published={c.published}" if c.published else "")
        + (f"\n   opening: {c.lead[:300]}" if c.lead else "")
        + f"\n   {c.snippet[:300]}"
        for c in scout_input.candidates
    ]
    questions = "\n".join(f"Q{n}. {q}" for n, q in enumerate(scout_input.questions, 1))
    return (
        f"Topic: {scout_input.topic}\n"
        + (frame("QUESTIONS THE SOURCES ARE FOR", questions) if questions else "")
        + frame("CANDIDATES", "\n".join(lines) or "(none found)")
    )


def _summary(output: ScoutOutput) -> list[str]:
    kept = [item for item in output.ranked if item.include]
    return [f"{len(kept)} sources ranked of {len(output.ranked)} candidates"]


async def _sweep(
    deps: RoleDeps, topic: str, searched: list[str], failures: list[str], led: dict[str, list[str]]
) -> tuple[list[Candidate], dict[str, list[str]]]:
    """Every angle searched and every site named mapped: the candidates, one per address, and the
    angles that found each (by ref); `led` gets the angles whose first results each was among."""
    found: dict[str, Candidate] = {}
    found_by: dict[str, list[str]] = {}
    for angle in searched:
        deps.budget.check()
        for rank, candidate in enumerate(
            await deps.sources.search(angle, limit=PER_ANGLE, failures=failures)
        ):
            key = ref_key(candidate.ref)
            found.setdefault(key, candidate)
            found_by.setdefault(key, []).append(angle)
            if rank < LEADS:
                led.setdefault(key, []).append(angle)
    for site in sites_named(searched):
        deps.budget.check()
        pages = await deps.sources.site_pages(
            site, instructions=topic, limit=SITE_PAGES, scan=SITE_SCANNED, failures=failures
        )
        for page in pages:
            found.setdefault(ref_key(page.ref), page)
    return list(found.values()), found_by


async def scout(
    deps: RoleDeps,
    topic: str,
    *,
    queries: list[str] | None = None,
    questions: list[str] | None = None,
    limit: int = 8,
    run_id: str | None = None,
    node_id: str | None = None,
    iteration: int = 0,
) -> RoleResult[ScoutOutput]:
    """Sweep for sources on `topic` (roles/sweep.py: angles, sites, coverage), quick-scan them, and
    have the backend rank them; each kept source is tagged with the `questions` it covers."""
    failures: list[str] = []  # searches that failed, named in the output for the syntheses above
    questions = [q for q in dict.fromkeys(" ".join(q.split()) for q in questions or []) if q]
    searched = angles(topic, queries or [], questions)
    led: dict[str, list[str]] = {}
    found, found_by = await _sweep(deps, topic, searched, failures, led)
    candidates = [
        ScoutCandidate(
            index=index,
            ref=c.ref,
            title=c.title,
            snippet=c.snippet,
            score=c.score,
            origin=c.origin,
            published=c.published,
            lead=deps.sources.opening_of(c.ref) if c.origin == "corpus" else "",
        )
        for index, c in enumerate(found[:MAX_CANDIDATES])
    ]
    scout_input = ScoutInput(topic=topic, queries=searched, candidates=candidates, questions=questions)

    def finish(handoff_id: str, output: ScoutOutput) -> dict[str, Any]:
        kept: list[dict[str, Any]] = []
        excluded: list[dict[str, Any]] = []
        seen: set[int] = set()
        for item in sorted(output.ranked, key=lambda r: -r.score):
            if item.index >= len(candidates) or item.index in seen:
                continue
            seen.add(item.index)
            c = candidates[item.index]
            curated = {
                "ref": c.ref,
                "title": c.title,
                "score": item.score,
                "tags": item.tags,
                "rationale": item.rationale,
                "origin": c.origin,
                "covers": covered(c, questions, led.get(ref_key(c.ref), [])),
                "found_by": [searched.index(a) + 1 for a in found_by.get(ref_key(c.ref), [])],
                "lead": (c.lead or c.snippet)[:LEAD_CHARS],
            }
            (kept if item.include else excluded).append(curated)
        kept = kept[:limit]
        covering = {number for source in kept for number in source["covers"]}
        return {
            "sources": kept,
            "searches": len(searched),
            "candidates": len(candidates),
            "failures": failures,
            "angles": searched,
            "questions": questions,
            "uncovered": [n for n in range(1, len(questions) + 1) if n not in covering],
            "excluded": excluded[:MAX_EXCLUDED],
        }

    return await perform(
        deps,
        role="scout",
        input=scout_input,
        output_type=ScoutOutput,
        prompt=_prompt(scout_input),
        summarize=_summary,
        finish=finish,
        run_id=run_id,
        node_id=node_id,
        iteration=iteration,
    )

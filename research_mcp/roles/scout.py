"""The scout: a topic into searches, candidates de-duplicated, ranked and tagged. Never spawns executors."""

from __future__ import annotations

from typing import Any

from research_mcp.contracts import ScoutOutput
from research_mcp.role_inputs import ScoutCandidate, ScoutInput
from research_mcp.roles.base import RoleDeps, RoleResult, perform
from research_mcp.roles.framing import frame
from research_mcp.sources.library import Candidate

__all__ = ["scout"]

MAX_CANDIDATES = 30


def _queries(topic: str, extra: list[str]) -> list[str]:
    unique: list[str] = []
    for query in (topic, *extra):
        if query.strip() and query.lower() not in {q.lower() for q in unique}:
            unique.append(query)
    return unique[:4]


def _prompt(scout_input: ScoutInput) -> str:
    lines = [
        f"{c.index}. [{c.origin}] {c.title} <{c.ref}> score={c.score:.3f}"
        + (f" published={c.published}" if c.published else "")
        + f"\n   {c.snippet[:300]}"
        for c in scout_input.candidates
    ]
    return f"Topic: {scout_input.topic}\n" + frame("CANDIDATES", "\n".join(lines) or "(none found)")


def _summary(output: ScoutOutput) -> list[str]:
    kept = [item for item in output.ranked if item.include]
    return [f"{len(kept)} sources ranked of {len(output.ranked)} candidates"]


async def scout(
    deps: RoleDeps,
    topic: str,
    *,
    queries: list[str] | None = None,
    limit: int = 8,
    run_id: str | None = None,
    node_id: str | None = None,
) -> RoleResult[ScoutOutput]:
    found: dict[str, Candidate] = {}
    failures: list[str] = []  # searches that failed, named in the output for the syntheses above
    for query in _queries(topic, queries or []):
        deps.budget.check()
        for candidate in await deps.sources.search(query, limit=limit, failures=failures):
            found.setdefault(candidate.ref, candidate)
    candidates = [
        ScoutCandidate(
            index=index,
            ref=c.ref,
            title=c.title,
            snippet=c.snippet,
            score=c.score,
            origin=c.origin,
            published=c.published,
        )
        for index, c in enumerate(list(found.values())[:MAX_CANDIDATES])
    ]
    scout_input = ScoutInput(topic=topic, queries=_queries(topic, queries or []), candidates=candidates)

    def finish(handoff_id: str, output: ScoutOutput) -> dict[str, Any]:
        ranked = []
        seen: set[int] = set()
        for item in sorted(output.ranked, key=lambda r: -r.score):
            if item.include and item.index < len(candidates) and item.index not in seen:
                seen.add(item.index)
                c = candidates[item.index]
                ranked.append(
                    {
                        "ref": c.ref,
                        "title": c.title,
                        "score": item.score,
                        "tags": item.tags,
                        "rationale": item.rationale,
                        "origin": c.origin,
                    }
                )
        return {
            "sources": ranked[:limit],
            "searches": len(scout_input.queries),
            "candidates": len(candidates),
            "failures": failures,
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
    )

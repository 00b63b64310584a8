"""The scout: a topic swept from several angles (and the sites it names crawled), the candidates
de-duplicated and clustered, the first few quick-scanned by the extractor (roles/quick_scan.py),
ranked and tagged by the backend with what the scans found, and each kept source tagged by code
with the questions it covers. Never spawns executors."""

from __future__ import annotations

import time
from typing import Any

import anyio

from research_mcp.core.contracts import RankedCandidate, ScoutOutput
from research_mcp.core.role_inputs import ScoutCandidate, ScoutInput
from research_mcp.roles.base import HandoffContext, Place, Role, RoleDeps, RoleResult, perform
from research_mcp.roles.framing import frame
from research_mcp.roles.quick_scan import Scans, quick_scan, rescored
from research_mcp.roles.sweep import LEADS, Folded, angles, cluster, covered, fold_copies, sites_named
from research_mcp.sources.library import Candidate, ref_key
from research_mcp.sources.opening_paragraph import LEAD_CHARS
from research_mcp.storage.outputs import StoredCuration

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
        + (f"\n   quick scan: {c.scan}" if c.scan else "")
        + f"\n   {c.snippet[:300]}"
        for c in scout_input.candidates
    ]
    questions = "\n".join(f"Q{n}. {q}" for n, q in enumerate(scout_input.questions, 1))
    return (
        f"Topic: {scout_input.topic}\n"
        + (frame("QUESTIONS THE SOURCES ARE FOR", questions) if questions else "")
        + frame("CANDIDATES", "\n".join(lines) or "(none found)")
    )


def _folded(item: Folded) -> dict[str, Any]:
    """A near-duplicate folded by the sweep, as an excluded candidate with its reason."""
    return {
        "ref": item.candidate.ref,
        "title": item.candidate.title,
        "score": 0.0,
        "origin": item.candidate.origin,
        "rationale": f"{item.reason} of {item.into.title!r} <{item.into.ref}>",
        "lead": item.candidate.snippet[:LEAD_CHARS],
    }


def _summary(output: ScoutOutput) -> list[str]:
    kept = [item for item in output.ranked if item.include]
    return [f"{len(kept)} sources ranked of {len(output.ranked)} candidates"]


async def _sweep(
    deps: RoleDeps,
    topic: str,
    searched: list[str],
    failures: list[str],
    led: dict[str, list[str]],
    box_seconds: float,
) -> tuple[list[Candidate], dict[str, list[str]], dict[str, int]]:
    """Every angle searched and every site named mapped, within the sweep's time box: the
    candidates, one per address, the angles that found each and its best rank in any of their
    results (by ref); `led` gets the angles whose first results each was among."""
    found: dict[str, Candidate] = {}
    found_by: dict[str, list[str]] = {}
    ranks: dict[str, int] = {}
    made: list[str] = []
    sites = sites_named(searched)
    with anyio.move_on_after(box_seconds) as box:
        for angle in searched:
            deps.budget.check()
            for rank, candidate in enumerate(
                await deps.sources.search(angle, limit=PER_ANGLE, failures=failures)
            ):
                key = ref_key(candidate.ref)
                found.setdefault(key, candidate)
                found_by.setdefault(key, []).append(angle)
                ranks[key] = min(ranks.get(key, rank), rank)
                if rank < LEADS:
                    led.setdefault(key, []).append(angle)
            made.append(angle)
        for site in sites:
            deps.budget.check()
            pages = await deps.sources.site_pages(
                site, instructions=topic, limit=SITE_PAGES, scan=SITE_SCANNED, failures=failures
            )
            for rank, page in enumerate(pages):
                found.setdefault(ref_key(page.ref), page)
                ranks.setdefault(ref_key(page.ref), rank)
            made.append(site)
    if box.cancelled_caught:
        left = [step for step in [*searched, *sites] if step not in made]
        failures.append(
            f"The sweep's {box_seconds:g} s box closed before {len(left)} of its {len(searched) + len(sites)} "
            f"searches and crawls: {'; '.join(left)[:300]}"
        )
    return list(found.values()), found_by, ranks


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
    box_seconds: float | None = None,
) -> RoleResult[ScoutOutput]:
    """Sweep for sources on `topic` (roles/sweep.py: angles, sites, coverage), quick-scan them, and
    have the backend rank them; each kept source is tagged with the `questions` it covers."""
    failures: list[str] = []  # searches that failed, named in the output for the syntheses above
    questions = [q for q in dict.fromkeys(" ".join(q.split()) for q in questions or []) if q]
    searched = angles(topic, queries or [], questions)
    led: dict[str, list[str]] = {}
    box = box_seconds if box_seconds is not None else deps.settings.sweep_seconds
    started = time.monotonic()
    found, found_by, ranks = await _sweep(deps, topic, searched, failures, led, box)
    found, folded = cluster(found)
    found, copies = await anyio.to_thread.run_sync(fold_copies, found, deps.sources.fingerprint_of)
    folded += copies
    # Each search's first results first (rank 0 of every angle, then rank 1...), so the scans serve
    # every question the sweep searched, not the first angle's alone.
    tops = sorted(found, key=lambda c: ranks.get(ref_key(c.ref), PER_ANGLE))
    scan_place = Place(run_id, f"{node_id or ''}/scan", iteration)  # `/scan`: scout_sources' own
    left = box - (time.monotonic() - started)
    scans = await quick_scan(deps, tops, topic, questions, scan_place, seconds=left)
    if scans.stopped:
        failures.append(scans.stopped)
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
            scan=finding.note if (finding := scans.found.get(ref_key(c.ref))) else "",
        )
        for index, c in enumerate(found[:MAX_CANDIDATES])
    ]
    scout_input = ScoutInput(topic=topic, queries=searched, candidates=candidates, questions=questions)

    curation = Curation(scout_input, limit=limit, failures=failures, led=led, found_by=found_by, scans=scans)
    curation.folded = [_folded(item) for item in folded]
    for item in copies:
        curation.copies.setdefault(ref_key(item.into.ref), []).append(item.candidate.ref)
    return await perform(deps, curation, Place(run_id, node_id, iteration))


class Curation(Role[ScoutOutput, StoredCuration]):
    """The candidates ranked by the backend; the check keeps the included ones, best first, each
    tagged by code with the questions it covers and the angles that found it."""

    name = "scout"
    output_type = ScoutOutput
    stored_type = StoredCuration

    def __init__(
        self,
        scout_input: ScoutInput,
        *,
        limit: int,
        failures: list[str],
        led: dict[str, list[str]],
        found_by: dict[str, list[str]],
        scans: Scans | None = None,
    ) -> None:
        super().__init__(scout_input)
        self.scout_input, self.limit, self.failures = scout_input, limit, failures
        self.led, self.found_by = led, found_by
        self.scans = scans or Scans()
        self.folded: list[dict[str, Any]] = []  # near-duplicates the sweep folded, shown as excluded
        self.copies: dict[str, list[str]] = {}  # by the kept candidate's ref key: its copies' refs

    def prompt(self) -> str:
        return _prompt(self.scout_input)

    def summary(self, output: ScoutOutput) -> list[str]:
        return _summary(output)

    def check(self, context: HandoffContext, output: ScoutOutput) -> StoredCuration:
        candidates, questions = self.scout_input.candidates, self.scout_input.questions
        searched, limit, failures = self.scout_input.queries, self.limit, self.failures
        led, found_by = self.led, self.found_by
        kept: list[dict[str, Any]] = []
        excluded: list[dict[str, Any]] = []
        seen: set[int] = set()
        for item, score in self._scanned(output):
            if item.index in seen:
                continue
            seen.add(item.index)
            c = candidates[item.index]
            curated = {
                "ref": c.ref,
                "title": c.title,
                "score": score,
                "tags": item.tags,
                "rationale": item.rationale,
                "origin": c.origin,
                "covers": covered(c, questions, led.get(ref_key(c.ref), [])),
                "found_by": [searched.index(a) + 1 for a in found_by.get(ref_key(c.ref), [])],
                "lead": (c.lead or c.snippet)[:LEAD_CHARS],
                "scan": c.scan,
                "copies": self.copies.get(ref_key(c.ref), []),
            }
            (kept if item.include else excluded).append(curated)
        kept = kept[:limit]
        covering = {number for source in kept for number in source["covers"]}
        if folded := sum(len(refs) for refs in self.copies.values()):
            note = f"{output.coverage_note} {folded} copies (the same document under another name or in another format) listed with the one they copy."
            output = output.model_copy(update={"coverage_note": note[:1000]})
        return self.stored(
            output,
            **{
                "sources": kept,
                "searches": len(searched),
                "candidates": len(candidates),
                "failures": failures,
                "angles": searched,
                "questions": questions,
                "uncovered": [n for n in range(1, len(questions) + 1) if n not in covering],
                "scanned": len(self.scans.found),
                "excluded": [*excluded, *self.folded][:MAX_EXCLUDED],
            },
        )

    def _scanned(self, output: ScoutOutput) -> list[tuple[RankedCandidate, float]]:
        """The backend's ranking, its scores as the scans leave them (`rescored`), best first (ties
        keep the backend's order)."""
        candidates = self.scout_input.candidates
        items = [item for item in output.ranked if item.index < len(candidates)]
        keys = [(ref_key(candidates[item.index].ref), item.score, item.include) for item in items]
        scores = rescored(keys, self.scans)
        return sorted(zip(items, scores, strict=True), key=lambda pair: -pair[1])

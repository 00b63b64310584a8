"""The scout without a model: search results ranked from their scores, topic match and metadata.

score = 0.4 · search score (as given when within 0..1, else divided by the largest of its origin)
      + 0.4 · topic match (relevance of title, opening and snippet to the topic or any of its queries; terms
              weigh alike, since every result shares the topic's words)
      + 0.1 · recency (1 within a year of today, falling to 0 at ten years; 0.4 when undated)
      + 0.1 · origin (1 for the user's corpus, 0.5 for the web)
A candidate with the same address or a near-identical title (site suffix dropped, word-set Jaccard
of at least `SAME_TITLE`) as a better one is excluded as its duplicate; one whose topic match is below
`OFF_TOPIC` is excluded as off-topic. Tags come from the same numbers and from the address.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import Literal
from urllib.parse import urlsplit

import numpy as np

from research_mcp.core.citations import normalize
from research_mcp.core.contracts import Embedder, RankedCandidate, ScoutOutput
from research_mcp.core.role_inputs import ScoutCandidate, ScoutInput
from research_mcp.llm.extractive.scoring import Relevance

__all__ = ["OFF_TOPIC", "SAME_TITLE", "scout"]

Tag = Literal["authoritative", "recent", "broad", "specific", "diverse", "primary", "secondary"]
WEIGHTS = {"search": 0.4, "topic": 0.4, "recency": 0.1, "origin": 0.1}
OFF_TOPIC = 0.1
SAME_TITLE = 0.8
DIVERSE_BELOW = 0.5
UNDATED_RECENCY = 0.4

#: Public bodies' and universities' domains ("nih.gov", "ox.ac.uk"), named by their kind only.
_AUTHORITATIVE = re.compile(r"\.(?:gov|edu|int|mil)$|\.(?:gov|ac|edu)\.")
_BROAD = re.compile(
    r"\b(?:overview|introduction|guide|survey|review|what is|history of|tutorial|handbook|primer)\b", re.I
)
_TITLE_SUFFIX = re.compile(r"\s+[-|–—:]\s+[^-|–—:]{1,40}$")
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")


def scout(
    payload: ScoutInput, embedder: Embedder | None, today: Callable[[], date] = date.today
) -> ScoutOutput:
    candidates = payload.candidates[:200]
    if not candidates:
        return ScoutOutput(coverage_note="No candidates to rank. Extractive scout: no language model.")
    now = today()
    texts = [f"{c.title}. {c.lead} {c.snippet}".strip(". ") for c in candidates]  # the quick scan too
    relevance = Relevance(texts, embedder, flat=True)
    topic = np.max([relevance.scores(query) for query in [payload.topic, *payload.queries]], axis=0)
    search = _search_scores(candidates)
    recency = [_recency(candidate.published, now) for candidate in candidates]
    origin = [1.0 if candidate.origin == "corpus" else 0.5 for candidate in candidates]
    scores = [
        round(
            WEIGHTS["search"] * search[i]
            + WEIGHTS["topic"] * float(topic[i])
            + WEIGHTS["recency"] * recency[i][0]
            + WEIGHTS["origin"] * origin[i],
            4,
        )
        for i in range(len(candidates))
    ]
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i].index))
    title_similarity = _title_similarity([_core_title(candidate.title) for candidate in candidates])
    content_similarity = relevance.similarity(range(len(candidates)))

    kept: list[int] = []
    ranked: list[RankedCandidate] = []
    duplicates = off_topic = 0
    for i in order:
        candidate = candidates[i]
        numbers = f"search {search[i]:.2f}, topic match {float(topic[i]):.2f}, {candidate.origin}" + (
            f", published {candidate.published} ({recency[i][1]:.1f} y)"
            if recency[i][1] is not None
            else ", undated"
        )
        twin = next((k for k in kept if _same(candidates[k], candidate, float(title_similarity[k, i]))), None)
        if twin is not None:
            duplicates += 1
            reason, include = f"duplicate of #{candidates[twin].index} {candidates[twin].title[:60]!r}", False
        elif float(topic[i]) < OFF_TOPIC or not (candidate.title or candidate.snippet).strip():
            off_topic += 1
            reason, include = f"off-topic (topic match below {OFF_TOPIC})", False
        else:
            reason, include = "", True
        tags = _tags(candidate, float(topic[i]), recency[i][1])
        if include:
            if kept and max(float(content_similarity[k, i]) for k in kept) < DIVERSE_BELOW:
                tags.append("diverse")
            kept.append(i)
        rationale = f"{numbers}; score {scores[i]:.2f}" + (f"; {reason}" if reason else "")
        ranked.append(
            RankedCandidate(
                index=candidate.index,
                include=include,
                score=min(1.0, max(0.0, scores[i])),
                tags=tags,
                rationale=rationale[:300],
            )
        )
    ranked.sort(key=lambda item: not item.include)  # stable: included first, each part by score
    hosts = sorted({_host(candidates[i].ref) or "corpus" for i in kept})
    note = (
        f"{len(candidates)} candidates, {len(kept)} kept, {duplicates} duplicates and {off_topic} off-topic "
        f"excluded; {len(hosts)} distinct hosts ({', '.join(hosts[:8])}). Ranked by 0.4 search score + 0.4 "
        "topic match + 0.1 recency + 0.1 origin. Extractive scout: no language model."
    )
    return ScoutOutput(ranked=ranked[:40], coverage_note=note[:1000])


def _search_scores(candidates: list[ScoutCandidate]) -> list[float]:
    """Search scores on 0..1: as given when an origin's scores are within 0..1, else divided by its largest."""
    largest: dict[str, float] = {}
    for candidate in candidates:
        largest[candidate.origin] = max(largest.get(candidate.origin, 0.0), candidate.score)
    return [
        round(max(0.0, c.score) / largest[c.origin] if largest[c.origin] > 1 else max(0.0, c.score), 4)
        for c in candidates
    ]


def _recency(published: str | None, now: date) -> tuple[float, float | None]:
    """(recency 0..1, age in years) of a publication date given as ISO text or containing a year."""
    when = _parse_date(published)
    if when is None:
        return UNDATED_RECENCY, None
    age = max(0.0, (now - when).days / 365.25)
    return round(max(0.0, min(1.0, 1 - (age - 1) / 9)), 4), round(age, 1)


def _parse_date(published: str | None) -> date | None:
    if not published:
        return None
    try:
        return date.fromisoformat(published.strip()[:10])
    except ValueError:
        year = _YEAR.search(published)
        return date(int(year.group()), 7, 1) if year else None


def _host(ref: str) -> str:
    host = urlsplit(ref).hostname or ""
    return host.removeprefix("www.")


def _address(ref: str) -> str:
    parts = urlsplit(ref.strip())
    if not parts.hostname:
        return ref.strip()
    return f"{parts.hostname.removeprefix('www.')}{parts.path.rstrip('/')}?{parts.query}"


def _core_title(title: str) -> str:
    return _TITLE_SUFFIX.sub("", title.strip())


def _title_similarity(titles: list[str]) -> np.ndarray:
    """Pairwise word-set Jaccard of the titles, every word counting (so "3.11" differs from "3.12")."""
    words = [set(normalize(title).split()) for title in titles]
    return np.array(
        [[len(a & b) / len(a | b) if a | b else 0.0 for b in words] for a in words], dtype=np.float64
    )


def _same(kept: ScoutCandidate, candidate: ScoutCandidate, title_similarity: float) -> bool:
    if _address(kept.ref) == _address(candidate.ref):
        return True
    kept_title, title = normalize(_core_title(kept.title)), normalize(_core_title(candidate.title))
    return bool(title) and (kept_title == title or title_similarity >= SAME_TITLE)


def _tags(candidate: ScoutCandidate, topic: float, age: float | None) -> list[Tag]:
    """Tags from the address's kind of domain, the date, the title and the origin; no site is named."""
    tags: list[Tag] = []
    if _AUTHORITATIVE.search(_host(candidate.ref)):
        tags.append("authoritative")
    if age is not None and age <= 2:
        tags.append("recent")
    if _BROAD.search(candidate.title):
        tags.append("broad")
    elif topic >= 0.5:
        tags.append("specific")
    if candidate.origin == "corpus" or candidate.ref.lower().endswith(".pdf"):
        tags.append("primary")
    return tags

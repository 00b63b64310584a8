"""The scout's sweep, by code and the same in every backend: the angles it searches, the sites it
crawls, and which of the questions each candidate covers.

- **Angles**: the topic, the queries given, each question the sources are for, and the topic's key
  terms alone (a question's wording, "How does ... handle ...", can hide its subject from a search).
  Repeats are searched once; at most `MAX_ANGLES`.
- **Sites**: an address or a domain named in the topic or the queries ("the docs at docs.python.org")
  is crawled (Tavily's crawl; its map and extract where the crawl is refused), and its pages most
  relevant to the topic become candidates.
- **Coverage**: a candidate covers a question when its title, opening and snippet share two of
  the question's terms (`bears_on`), or one when it was among the first `LEADS` results of the
  search for that question. Questions no kept
  candidate covers are named, so a discovery leaf's gaps say what the sources will not answer.
- **Clusters**: near-duplicates (the same title once a site suffix is dropped, or titles sharing
  `SAME_TITLE` of their words) fold into the first found; a site's candidates beyond `PER_SITE`
  go after every other site's, so one site cannot fill the list the ranker reads. Copies of one
  document (the same text under another name, the same page in two formats: research_mcp/core/copies.py)
  fold into the first found too, so the scout lists them as one cluster.
- **Box**: the sweep has its own time (`RESEARCH_MCP_SWEEP_SECONDS`); what it found when the box
  closes is ranked, and the searches it did not make are named.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from research_mcp.answering.terms import bears_on, terms
from research_mcp.core.copies import Fingerprint, copy_clusters
from research_mcp.core.role_inputs import ScoutCandidate
from research_mcp.sources.library import Candidate

__all__ = [
    "LEADS",
    "MAX_ANGLES",
    "PER_SITE",
    "Folded",
    "angles",
    "cluster",
    "covered",
    "fold_copies",
    "key_terms",
    "sites_named",
]

#: The most searches one scout makes (angles), before any site map.
MAX_ANGLES = 6
#: A search's first results, each taken to cover what was searched.
LEADS = 2
#: The most sites one scout maps.
MAX_SITES = 2
#: A site's candidates ahead of the other sites' (the rest follow them).
PER_SITE = 2
#: Titles sharing this share of their words are one source's.
SAME_TITLE = 0.8
_TITLE_SUFFIX = re.compile(r"\s+[-|–—:]\s+[^-|–—:]{1,40}$")
_WORD = re.compile(r"[\w'’-]+")
_SITE = re.compile(
    r"\bhttps?://[^\s<>\"')\]]+|\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,24})\b(?:/[^\s<>\"')\]]*)?",
    re.IGNORECASE,
)
# Name endings that look like domains but are file names: "report.pdf", "config.yaml". A site whose
# domain ends so (docs.rs) is mapped when given as an address (https://docs.rs).
_NOT_SITES = re.compile(
    r"\.(?:pdf|txt|md|rst|html?|csv|tsv|json|ya?ml|toml|ini|cfg|conf|log|xml|py|js|ts|rs|go|rb|java|c|h|cpp|hpp|sh|"
    r"lock|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|zip|gz|tgz|tar|bz2|xz)$",
    re.I,
)


def key_terms(text: str) -> str:
    """`text` reduced to its content words, in order (question words and stop words dropped)."""
    keep = set(terms(text))
    words = [w for w in _WORD.findall(text) if terms(w) and terms(w)[0] in keep]
    return " ".join(dict.fromkeys(words))


def angles(
    topic: str, queries: Sequence[str], questions: Sequence[str], limit: int = MAX_ANGLES
) -> list[str]:
    """What to search, in order, at most `limit`: the topic, the queries given, the questions, the
    topic's key terms; an angle with the same words as an earlier one (case and spacing aside), or
    with no content word, is left out."""
    chosen: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for angle in (topic, *queries, *questions, key_terms(topic)):
        angle = " ".join(angle.split())
        words = tuple(_WORD.findall(angle.lower()))
        if not terms(angle) or words in seen:
            continue
        seen.add(words)
        chosen.append(angle)
        if len(chosen) == limit:
            break
    return chosen


def sites_named(texts: Sequence[str], limit: int = MAX_SITES) -> list[str]:
    """The sites (as https addresses) named in `texts`, in order: full addresses as given, bare
    domains as their home page; file names and version numbers are not sites."""
    found: list[str] = []
    for text in texts:
        for match in _SITE.finditer(text):
            site = match.group().rstrip(".,;:")
            if _NOT_SITES.search(site.split("?", 1)[0]) or not re.search(r"[a-z]", site.split("/")[0], re.I):
                continue
            address = site if site.lower().startswith(("http://", "https://")) else f"https://{site}"
            if address not in found:
                found.append(address)
    return found[:limit]


def covered(candidate: ScoutCandidate, questions: Sequence[str], led: Sequence[str]) -> list[int]:
    """The numbers (from 1) of the questions `candidate` covers: its title, opening and snippet
    bear on it (two shared terms), or it led the results of a search for the question (`led`: the
    angles whose first `LEADS` results it was among) and shares one of its terms."""
    text = f"{candidate.title}. {candidate.lead} {candidate.snippet}"
    said = set(terms(text))
    searched = {" ".join(angle.split()).lower() for angle in led}
    return [
        number
        for number, question in enumerate(questions, 1)
        if bears_on(text, question)
        or (" ".join(question.split()).lower() in searched and said & set(terms(question)))
    ]


@dataclass(frozen=True)
class Folded:
    """A near-duplicate candidate folded into the one kept for it: its title nearly the same
    ("near-duplicate"), or its text a copy of the other's ("copy": research_mcp/core/copies.py)."""

    candidate: Candidate
    into: Candidate
    reason: str = "near-duplicate"


def fold_copies(
    candidates: Sequence[Candidate], fingerprint_of: Callable[[str], Fingerprint | None]
) -> tuple[list[Candidate], list[Folded]]:
    """The candidates with copies of one document (research_mcp/core/copies.py: the same text under
    another name, the same page in another format) folded into the first of each, order kept; a
    candidate without a fingerprint (a web result, not read yet) stands alone."""
    prints = [(n, fingerprint_of(candidate.ref)) for n, candidate in enumerate(candidates)]
    clusters = copy_clusters((n, found) for n, found in prints if found is not None)
    first = {member: members[0] for members in clusters for member in members}
    kept = [candidate for n, candidate in enumerate(candidates) if first.get(n, n) == n]
    folded = [
        Folded(candidate, candidates[first[n]], "copy")
        for n, candidate in enumerate(candidates)
        if first.get(n, n) != n
    ]
    return kept, folded


def _title_words(title: str) -> frozenset[str]:
    return frozenset(_WORD.findall(_TITLE_SUFFIX.sub("", title.strip()).lower()))


def _site(ref: str) -> str:
    if not ref.lower().startswith(("http://", "https://")):
        return ""
    return (urlsplit(ref).hostname or "").removeprefix("www.")


def cluster(candidates: Sequence[Candidate]) -> tuple[list[Candidate], list[Folded]]:
    """The candidates with near-duplicates folded into the first of each cluster, a site's beyond
    `PER_SITE` moved after the others (each group keeps its order), and what was folded into what."""
    kept: list[tuple[Candidate, frozenset[str]]] = []
    folded: list[Folded] = []
    for candidate in candidates:
        words = _title_words(candidate.title)
        twin = next(
            (c for c, seen in kept if words and len(words & seen) / len(words | seen) >= SAME_TITLE), None
        )
        if twin is not None:
            folded.append(Folded(candidate, twin))
        else:
            kept.append((candidate, words))
    ahead: list[Candidate] = []
    after: list[Candidate] = []
    per_site: dict[str, int] = {}
    for candidate, _ in kept:
        site = _site(candidate.ref)
        per_site[site] = per_site.get(site, 0) + 1
        (after if site and per_site[site] > PER_SITE else ahead).append(candidate)
    return ahead + after, folded

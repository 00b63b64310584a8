"""One front for every kind of source: read a reference into a stored `Source`, or search for candidates.

References: an http(s) URL (fetched safely), `corpus:<id>` (a local document), `S<id>` (a source
already in the store), or plain text given by the user (stored as `text:<hash>`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from research_mcp.core.contracts import Source
from research_mcp.core.copies import Fingerprint, fingerprint, stem_of
from research_mcp.core.errors import InvalidInput, NotConfigured, ResearchError, SourceError, shown
from research_mcp.core.ids import corpus_number, corpus_ref, kind_of_id, source_number
from research_mcp.sources.corpus import RELEVANCE_FLOOR
from research_mcp.sources.opening_paragraph import opening, page_title
from research_mcp.sources.ranking import Page

if TYPE_CHECKING:
    from research_mcp.sources.corpus import Corpus
    from research_mcp.sources.fetch import SafeFetcher
    from research_mcp.sources.search import WebSearch
    from research_mcp.storage.store import Store

__all__ = ["Candidate", "SourceLibrary", "canonical_url", "classify_ref", "coverage_said_once", "ref_key"]

logger = logging.getLogger(__name__)

MIN_TEXT_CHARS = 20
#: A one-line reference this long at most may be a path relative to a corpus folder.
MAX_PATH_CHARS = 1024
_INDEXED = re.compile(r"([\d,]+) (?:of [\d,]+ )?documents indexed")
# Seconds a search waits for a pass scanning the corpus folders to know what it has to read.
SCAN_WAIT_S = 10.0
PARTIAL_CORPUS = "searches saw only the documents indexed so far; retry once indexing has finished"


def coverage_said_once(failures: list[str]) -> list[str]:
    """The failures (or gaps) with one partial-corpus line, where the first stood: the one that saw
    the most documents indexed, without a part's title before it (searches of several parts each
    name the coverage they saw)."""
    partial = [failure for failure in failures if failure.endswith(PARTIAL_CORPUS)]
    if len(partial) < 2:
        return failures
    latest = max(partial, key=_documents_indexed)
    latest = latest[latest.find("corpus: ") :] if "corpus: " in latest else latest  # not one part's
    first = failures.index(partial[0])
    kept = [failure for failure in failures if not failure.endswith(PARTIAL_CORPUS)]
    return [*kept[:first], latest, *kept[first:]]


def _documents_indexed(coverage: str) -> int:
    counted = _INDEXED.search(coverage)
    return int(counted.group(1).replace(",", "")) if counted else 0


# A local file: file:// URL, or one line starting like an absolute, home or relative path.
_PATH = re.compile(r"^(?:file:|~[/\\]|\.{1,2}[/\\]|/|[A-Za-z]:[/\\])[^\n]*$", re.IGNORECASE)
_TRACKING = re.compile(r"^(utm_|fbclid$|gclid$|mc_)")


@dataclass(frozen=True)
class Candidate:
    """A search result not yet read."""

    ref: str
    title: str
    snippet: str
    score: float
    origin: Literal["web", "corpus"]
    published: str | None = None


def classify_ref(ref: str) -> Literal["web", "corpus", "stored", "path", "text"]:
    ref = ref.strip()
    if ref.lower().startswith(("http://", "https://")):
        return "web"
    if kind_of_id(ref) == "corpus document":
        return "corpus"
    if kind_of_id(ref) == "source":
        return "stored"
    if _PATH.match(ref):
        return "path"
    return "text"


def ref_key(ref: str) -> str:
    """How a reference is compared: web addresses in canonical form."""
    return canonical_url(ref) if classify_ref(ref) == "web" else ref.strip()


def canonical_url(url: str) -> str:
    """Lower-cased scheme and host, no fragment, no tracking parameters, no trailing slash."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url.strip())
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if not _TRACKING.match(k)])
    path = parts.path.rstrip("/") or "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, query, ""))


class SourceLibrary:
    """Reads and searches sources; every source read is stored with its text and content hash."""

    def __init__(
        self,
        store: Store,
        *,
        fetcher: SafeFetcher | None = None,
        web: WebSearch | None = None,
        corpus: Corpus | None = None,
        web_max_age: timedelta = timedelta(days=7),
    ) -> None:
        self.store = store
        self.fetcher = fetcher
        self.web = web
        self.corpus = corpus
        self.web_max_age = web_max_age
        self.searches = 0
        self._fingerprints: dict[str, Fingerprint] = {}  # by content hash: a text's never changes

    @property
    def web_configured(self) -> bool:
        return self.web is not None and self.web.configured

    def page_of(self, ref: str) -> Page | None:
        """The corpus page a reference reads, whatever its format (``git-reset.txt`` and
        ``git-reset.html`` are one page); None for any other source or a document of one format."""
        if self.corpus is None or classify_ref(ref) != "corpus":
            return None
        return self.corpus.page(corpus_number(ref.strip()))

    async def read(self, ref: str, *, title: str = "") -> Source:
        """The stored source for a reference, reading it first when needed."""
        kind = classify_ref(ref)
        ref = ref.strip()
        if kind == "stored":
            return self.store.get_source(source_number(ref))
        if kind == "web":
            return await self._read_web(ref)
        if kind == "path" or (kind == "text" and self._names_a_corpus_file(ref)):
            ref = corpus_ref(self._corpus_document_at(ref))
            kind = "corpus"
        if kind == "corpus":
            if self.corpus is None:
                raise NotConfigured("No local corpus is configured: set RESEARCH_MCP_CORPUS to your folders.")
            document = self.corpus.read(corpus_number(ref))
            return self.store.add_source(
                ref=document.ref,
                kind="corpus",
                title=document.title,
                text=document.text,
                content_hash=document.content_hash,
                metadata={"path": document.path, "root": document.root},
            )
        if len(ref) < MIN_TEXT_CHARS:
            raise InvalidInput(
                f"source {ref!r} is neither a URL (http/https), a corpus id (corpus:<id>), a path of a "
                f"corpus file (absolute, or relative to a corpus folder), a stored source (S<id>) nor a "
                f"text of at least {MIN_TEXT_CHARS} characters."
            )
        digest = hashlib.sha256(ref.encode()).hexdigest()
        return self.store.add_source(
            ref=f"text:{digest[:16]}", kind="text", title=title or ref[:60], text=ref, content_hash=digest
        )

    def _names_a_corpus_file(self, ref: str) -> bool:
        """A reference such as ``notes/kelp.md``: a path relative to a corpus folder, of a file there."""
        if self.corpus is None or "\n" in ref or len(ref) > MAX_PATH_CHARS:
            return False
        try:
            return self.corpus.resolve(ref).is_file()
        except (InvalidInput, OSError):
            return False

    def _corpus_document_at(self, ref: str) -> int:
        """A local path (or file:// URL) is read only as the corpus document it is; never as text."""
        path = ref
        if ref.lower().startswith("file:"):
            from urllib.parse import unquote, urlsplit

            parts = urlsplit(ref)
            if parts.netloc not in ("", "localhost"):
                raise InvalidInput(
                    f"{ref!r} names a file on another host; only local files in the corpus are read."
                )
            path = unquote(parts.path)
        if self.corpus is None:
            raise InvalidInput(
                f"{ref!r} is a local file, and local files are read only from the corpus folders: add its "
                "folder to RESEARCH_MCP_CORPUS, or give the text itself or a URL."
            )
        try:
            return self.corpus.document_at(path)
        except OSError as error:  # a name longer than the file system allows, a folder without access
            raise InvalidInput(
                f"{shown(path)} cannot be read ({error.strerror or type(error).__name__}); give the path of "
                "a document in the corpus folders."
            ) from None

    async def _read_web(self, url: str) -> Source:
        known = self.store.latest_source(canonical_url(url))
        if known is not None and datetime.now(UTC) - known.fetched_at < self.web_max_age:
            return known
        if self.fetcher is None:
            raise NotConfigured("Fetching web pages is disabled in this server.")
        document = await self.fetcher.fetch(url)
        if not document.text.strip():
            raise SourceError(f"{url} has no readable text.")
        return self.store.add_source(
            ref=canonical_url(url),
            kind="web",
            title=document.title,
            text=document.text,
            content_hash=document.content_hash,
            metadata={"final_url": document.url, "content_type": document.content_type},
        )

    async def search(
        self, query: str, *, limit: int = 8, failures: list[str] | None = None
    ) -> list[Candidate]:
        """Candidates from the web (when configured) and the local corpus, de-duplicated by address.

        A failed web search does not stop the others; it is logged and, given `failures`, named there."""
        self.searches += 1
        found: list[Candidate] = []
        if self.corpus is not None:
            import anyio

            await self.corpus_scanned()
            coverage = self.corpus_coverage()
            said = failures is not None and any(failure.endswith(PARTIAL_CORPUS) for failure in failures)
            if coverage is not None and failures is not None and not said:  # said once, not per search
                failures.append(f"{coverage}: {PARTIAL_CORPUS}")
            # In a worker thread: a search embeds the query, and may wait while a batch is stored.
            search = functools.partial(self.corpus.search, query, limit=limit, min_similarity=RELEVANCE_FLOOR)
            hits = await anyio.to_thread.run_sync(search)
            for hit in hits:
                found.append(
                    Candidate(
                        ref=hit.ref, title=hit.title, snippet=hit.snippet, score=hit.score, origin="corpus"
                    )
                )
        if self.web_configured:
            assert self.web is not None
            try:
                for web_hit in await self.web.search(query, max_results=limit):
                    found.append(
                        Candidate(
                            ref=web_hit.url,
                            title=web_hit.title,
                            snippet=web_hit.snippet,
                            score=web_hit.score,
                            origin="web",
                            published=web_hit.published_date,
                        )
                    )
            except SourceError as error:
                logger.warning("web search failed, going on with other sources: %s", error)
                if failures is not None:
                    failures.append(f"Web search for {query!r} failed: {error}")
        seen: set[str] = set()
        unique = []
        for candidate in found:
            key = canonical_url(candidate.ref) if candidate.origin == "web" else candidate.ref
            if key not in seen:
                seen.add(key)
                unique.append(candidate)
        return unique

    def opening_of(self, ref: str) -> str:
        """The opening of a corpus document (its first paragraph of prose), for a scout's quick scan;
        "" for any other reference or a document no longer there."""
        if self.corpus is None or classify_ref(ref) != "corpus":
            return ""
        try:
            return opening(self.corpus.read(corpus_number(ref)).text)
        except ResearchError:
            return ""

    def fingerprint_of(self, ref: str) -> Fingerprint | None:
        """A corpus document's fingerprint (research_mcp/core/copies.py: which documents are copies of
        one another), its path giving the stem; None for any other reference or a document gone."""
        if self.corpus is None or classify_ref(ref) != "corpus":
            return None
        try:
            document = self.corpus.read(corpus_number(ref))
        except ResearchError:
            return None
        if document.content_hash not in self._fingerprints:
            self._fingerprints[document.content_hash] = fingerprint(document.text, document.path)
        known = self._fingerprints[document.content_hash]
        # The same bytes under another name: the same words, but this name's stem.
        return Fingerprint(known.digest, known.sketch, known.shingles, stem_of(document.path))

    async def site_pages(
        self, site: str, *, instructions: str, limit: int, scan: int, failures: list[str] | None = None
    ) -> list[Candidate]:
        """A site's pages as candidates, each with its opening as a quick scan: Tavily's crawl, one
        request reading the pages relevant to `instructions`. Where the crawl is refused (a plan
        without it, a site it cannot walk), Tavily's map lists the pages and extract reads the first
        `scan`. Without web search, or when both fail (named in `failures`), none."""
        if not self.web_configured:
            return []
        assert self.web is not None
        self.searches += 1
        try:
            texts = await self.web.crawl(site, instructions=instructions, limit=limit)
            pages = list(texts)
        except SourceError as crawl_error:
            logger.info("site crawl of %s failed, mapping it instead: %s", site, crawl_error)
            try:
                pages = await self.web.map(site, instructions=instructions, limit=limit)
                texts = await self.web.extract(pages[:scan]) if scan and pages else {}
            except SourceError as error:
                logger.warning("site map of %s failed, going on without it: %s", site, error)
                if failures is not None:
                    failures.append(f"Site crawl and map of {site} failed: {error}")
                return []
        return [
            Candidate(
                ref=page,
                title=page_title(page),
                snippet=opening(texts.get(page, "")),
                score=round(1.0 - position / (2 * len(pages)), 4),  # the site's order, as a score on 0.5..1
                origin="web",
            )
            for position, page in enumerate(pages)
        ]

    async def corpus_scanned(self) -> None:
        """Wait while a pass scans the corpus folders (a few seconds at most), which is about to know
        whether the index is complete: a search then never calls a complete index partial."""
        if self.corpus is not None:
            import anyio

            await anyio.to_thread.run_sync(self.corpus.progress.wait_scanned, SCAN_WAIT_S)

    def corpus_coverage(self) -> str | None:
        """While the corpus is being indexed, a line saying how much of it is searchable; else None."""
        if self.corpus is None:
            return None
        status = self.corpus.status()
        return None if status.complete else status.line()

    def nothing_found(self) -> str:
        """Why a run found no source, and how to give it some."""
        if not self.web_configured and self.corpus is None:
            return (
                "no sources to search: set RESEARCH_MCP_CORPUS (folders of your documents) or "
                "TAVILY_API_KEY (web search), or give each plan leaf its sources"
            )
        searched = [
            *(["the web"] if self.web_configured else []),
            *([f"a corpus of {self.corpus.document_count():,} documents"] if self.corpus is not None else []),
        ]
        coverage = self.corpus_coverage()
        return (
            f"no relevant sources found in {' and '.join(searched)}"
            + (f" ({coverage})" if coverage else "")
            + "; add documents on it to RESEARCH_MCP_CORPUS, set TAVILY_API_KEY, or give leaf sources"
        )

    def describe(self) -> dict[str, str]:
        corpus = f"{self.corpus.document_count()} documents" if self.corpus is not None else "not configured"
        return {"web_search": "tavily" if self.web_configured else "not configured", "corpus": corpus}

"""Keeping a served corpus indexed: the first pass in the background while the server answers its
host, then a rescan every ``rescan_seconds``, so a document saved into a corpus folder while the
server runs is found without a restart. A rescan only ``stat``s the files; it reads the new and
changed ones alone (``indexing.py``) and stays quiet unless it changed something.
"""

from __future__ import annotations

import logging
import threading
import time

import anyio

from research_mcp.core.errors import ResearchError
from research_mcp.sources.index_progress import IndexReport
from research_mcp.sources.indexing import Corpus

__all__ = ["index_in_background", "keep_indexed"]

logger = logging.getLogger("research_mcp.sources.indexing")

#: Seconds between the progress lines a background pass logs.
LOG_EVERY_S = 5.0
#: Skipped files named one by one in the log of a background pass; the rest are counted.
LOGGED_ERRORS = 20


async def index_in_background(
    corpus: Corpus, stop: threading.Event, *, log_every: float = LOG_EVERY_S
) -> None:
    """One pass in a worker thread, logging progress to stderr every ``log_every`` seconds.

    Never raises: a pass that fails is logged and shown in the corpus status, and searches go on
    over what was indexed before. Set ``stop`` to end the pass early (a server shutting down).
    """
    finished = anyio.Event()

    async def log_progress() -> None:
        while not finished.is_set():
            with anyio.move_on_after(log_every):
                await finished.wait()
            if not finished.is_set():
                logger.info("%s", corpus.status().line())

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        group.start_soon(log_progress)
        try:
            report = await anyio.to_thread.run_sync(_background_pass, corpus, stop)
        finally:
            finished.set()
    if report is None:
        return
    for error in report.errors[:LOGGED_ERRORS]:
        logger.warning("corpus: %s", error)
    if len(report.errors) > LOGGED_ERRORS:
        logger.warning("corpus: %d more files skipped", len(report.errors) - LOGGED_ERRORS)
    if (skipped := report.skipped_line()) is not None:
        logger.info("corpus: %s", skipped)
    logger.info(
        "%s; this pass took %.1f s: %d added, %d updated, %d removed, %d skipped",
        corpus.status().line(),
        time.monotonic() - started,
        report.added,
        report.updated,
        report.removed,
        report.skipped,
    )


def _background_pass(corpus: Corpus, stop: threading.Event) -> IndexReport | None:
    try:
        return corpus.index(stop=stop)
    except ResearchError as error:  # a data folder that cannot be written (read-only, full)
        message = " ".join(str(error).split())
        logger.warning("corpus index not updated, searches use it as it was: %s", message)
        corpus.progress.failed(message[:200])
        return None
    except Exception as error:  # the top of a background thread: record it, never take the server down
        logger.exception("corpus indexing failed; searches use what was indexed before")
        corpus.progress.failed(" ".join(str(error).split())[:200] or type(error).__name__)
        return None


async def keep_indexed(corpus: Corpus, stop: threading.Event, *, rescan_seconds: float) -> None:
    """The first pass now, then a quiet rescan every ``rescan_seconds`` (0: never) until ``stop``."""
    await index_in_background(corpus, stop)
    while rescan_seconds > 0 and not stop.is_set():
        await anyio.sleep(rescan_seconds)
        if stop.is_set():
            return
        report = await anyio.to_thread.run_sync(_background_pass, corpus, stop)
        if report is not None and (report.added or report.updated or report.removed):
            logger.info(
                "%s; a rescan found %d new, %d changed and %d removed files",
                corpus.status().line(),
                report.added,
                report.updated,
                report.removed,
            )
        if report is not None:
            for error in report.errors[:LOGGED_ERRORS]:
                logger.debug("corpus: %s", error)

"""The few exception types of research-mcp, each carrying what the user should do.

    ResearchError                 base; `str(err)` is a message fit for the host's model
     +-- InvalidInput             a tool argument or a suggested plan is wrong; says what to fix
     +-- NotFound                 an id that the store does not hold
     +-- NotConfigured            a capability needs configuration (no model, no search key)
     +-- AtCapacity               the server takes no more of this work now; try again shortly
     +-- ModelError               a model backend failed (refusal, max_tokens, invalid output, HTTP)
     +-- SourceError              a source could not be read (refused address, too large, bad type)
     +-- BudgetExhausted          a run spent its token, cost, time or source budget
     +-- NodeBudgetExhausted      a plan node spent its own budget; the node ends with what it has
     +-- StoreError               the data folder's database could not be read or written
          +-- StoreFull           the disk holding the data folder is full
          +-- StoreReadOnly       the data folder (or its database) cannot be written
          +-- StoreBusy           another process held the database past the busy timeout
          +-- StoreIOError        the disk failed, or the database file is damaged

The server turns every ResearchError into an `isError` tool result with its message.
Anything else is a bug and is logged with its traceback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "ECHO_LIMIT",
    "MESSAGE_LIMIT",
    "AtCapacity",
    "BudgetExhausted",
    "InvalidInput",
    "ModelError",
    "NodeBudgetExhausted",
    "NotConfigured",
    "NotFound",
    "ResearchError",
    "SourceError",
    "StoreBusy",
    "StoreError",
    "StoreFull",
    "StoreIOError",
    "StoreReadOnly",
    "bounded",
    "clipped",
    "shown",
    "without_echoes",
]

#: Characters of anything a caller gave that a message quotes at most.
ECHO_LIMIT = 80
#: Characters of an error message a caller gets at most.
MESSAGE_LIMIT = 2_000
# A run without spaces twice an echo long: a quoted address, path or id, however a layer spelled it.
_LONG_RUN = re.compile(rf"\S{{{2 * ECHO_LIMIT + 1},}}")


def shown(value: object, limit: int = 80) -> str:
    """A value quoted for a message: its repr (control characters and lone surrogates escaped), cut
    to `limit` characters so that a huge input is never echoed back whole."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clipped(text: str, limit: int = ECHO_LIMIT) -> str:
    """`text` cut to `limit` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def without_echoes(text: str, given: Iterable[str]) -> str:
    """`text` with each of the `given` strings longer than ECHO_LIMIT, as is or as its repr spells
    it, cut to that where it occurs."""
    for value in sorted({item for item in given if len(item) > ECHO_LIMIT}, key=len, reverse=True):
        for form in dict.fromkeys((value, repr(value)[1:-1])):
            if form in text:
                text = text.replace(form, clipped(form))
    return text


def bounded(text: str, given: Iterable[str] = (), *, limit: int = MESSAGE_LIMIT) -> str:
    """A message (an error, a log line) that quotes at most ECHO_LIMIT characters of anything it was
    given: each of the `given` strings longer than that is cut where it occurs (`without_echoes`);
    so is any run without spaces more than twice that long (an address or a path a layer spelled its
    own way); and the whole is at most `limit` characters. Linear in the text."""
    text = _LONG_RUN.sub(lambda run: clipped(run.group()), without_echoes(text, given))
    return clipped(text, limit)


class ResearchError(Exception):
    """Base of every anticipated failure; the message says what to do next."""


class InvalidInput(ResearchError):
    """A tool argument or suggested plan is invalid."""


class NotFound(ResearchError):
    """The store holds nothing under this id."""

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(
            f"No {kind} with id {shown(ident)}: give an id that an earlier result returned "
            f"(plan_research, execute_plan, extract_source, scout_sources)."
        )
        self.kind = kind
        self.ident = ident


class NotConfigured(ResearchError):
    """A capability needs configuration that is missing."""


class AtCapacity(ResearchError):
    """The server is doing as much of this work as it takes at once; try again shortly."""


class ModelError(ResearchError):
    """A model backend could not produce a valid output."""

    # What the failed calls still cost (an llm.base.Usage), when the backend knows: answers that
    # did not validate, or were cut off or refused, are paid for all the same.
    usage: object = None


class SourceError(ResearchError):
    """A source could not be read."""


class BudgetExhausted(ResearchError):
    """A budget (tokens, cost, time, sources) was spent."""

    def __init__(self, what: str) -> None:
        super().__init__(f"Budget exhausted: {what}.")
        self.what = what


class NodeBudgetExhausted(ResearchError):
    """A plan node's own budget was spent: its remaining reads are skipped, the run goes on."""

    def __init__(self, what: str) -> None:
        super().__init__(f"Budget exhausted: {what}.")
        self.what = what


class StoreError(ResearchError):
    """The store (the SQLite file in the data folder) failed; the message names the folder and the fix.

    Nothing is half-written: the failed write was rolled back, and every earlier commit is intact.
    """

    def __init__(self, message: str, folder: str) -> None:
        super().__init__(message)
        self.folder = folder


class StoreFull(StoreError):
    """The disk holding the data folder is full."""


class StoreReadOnly(StoreError):
    """The data folder or its database cannot be written."""


class StoreBusy(StoreError):
    """Another process kept the database locked past the busy timeout."""


class StoreIOError(StoreError):
    """A disk I/O error, or a damaged database file."""

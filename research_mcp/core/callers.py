"""Who asked: the caller a plan, run or handoff belongs to, and who may read it.

A caller is a string: `user:<name>` for a request authenticated over HTTP with one of the tokens of
RESEARCH_MCP_HTTP_TOKENS (or `user:token` for the one RESEARCH_MCP_HTTP_TOKEN), `session:<id>` for
an unauthenticated HTTP session, `anonymous` for an unauthenticated request with no session (the
2026-07-28 envelope), and None for the local host (stdio, in memory, the command line).

- A task (a run started as a protocol task) is read, listed and cancelled only by the caller that
  started it, whatever the protocol version; the local host sees every run.
- A run, plan or handoff of a user (`user:<name>`) is read only by that user and the local host;
  without tokens every caller on this machine reads every run by id, as before.
- The shared knowledge base lends a user's run a known fact only from a source every caller may
  read (a web page, the corpus) or found by that user's own research; what earlier sources left
  open (follow-ups, gaps, cited sources) only from the user's own research.
"""

from __future__ import annotations

__all__ = ["LOCAL", "SHARED_KINDS", "USER", "may_lend", "may_read", "may_see_task", "user"]

LOCAL = None  # the local host: stdio, in memory, the command line
USER = "user:"
# Sources every caller may read: web pages and the server's corpus (a given text is its giver's).
SHARED_KINDS = frozenset({"web", "corpus"})


def user(name: str) -> str:
    return USER + name


def may_see_task(owner: str | None, caller: str | None) -> bool:
    """A task is its starter's alone; the local host (which holds the one connection) sees all."""
    return caller is LOCAL or owner == caller


def may_read(owner: str | None, caller: str | None) -> bool:
    """What a user made is theirs (and the local host's); what an unauthenticated caller or the local
    host made is read by any caller who is not a user."""
    if caller is LOCAL or owner == caller:
        return True
    return not caller.startswith(USER) and not (owner or "").startswith(USER)


def may_lend(kind: str, owner: str | None, caller: str | None) -> bool:
    """Whether the knowledge base may lend `caller` a fact of a source of this kind found by `owner`:
    from a source every caller may read, or found by research the caller may read."""
    return kind in SHARED_KINDS or may_read(owner, caller)

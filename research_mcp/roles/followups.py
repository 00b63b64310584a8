"""Where a reader goes next, from this run alone: no dead ends, and nothing another run asked.

A synthesis's follow-ups, in this order, at most `MAX_FOLLOWUPS`:

1. the question that would settle each disagreement between its sources;
2. what the backend suggested;
3. the leads its own sources name: a follow-up question an extractor of this run raised, a source
   they cite that was not read;
4. the next question a reader would ask: a term the cited facts define or single out (in quotes,
   or a capitalised name after a sentence's first word) that no question asked names, asked of the
   source that uses it ("What does GPL-3 mean by "Corresponding Source"?"), but a term naming
   that source itself ("Apache License" in Apache-2.0).

Never a question the run was asked (answered or left open: the gaps say so), and never what an
earlier run's sources left open (runs/prior.py gives those to the synthesizer as context only: over
HTTP the knowledge base is shared, and one caller's question must not reach another's results).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from research_mcp.answering.questions import reads_as_question
from research_mcp.core.citations import normalize
from research_mcp.core.contracts import Fact
from research_mcp.core.ids import source_label
from research_mcp.core.role_inputs import SourceInsight
from research_mcp.roles.contradictions import Disagreement

__all__ = ["MAX_FOLLOWUPS", "followups"]

MAX_FOLLOWUPS = 5
#: Terms the cited facts single out that become a reader's next questions.
MAX_TERMS = 3
_QUOTED = re.compile(r"[\"“]([^\"”]{3,60})[\"”]")
_NAME = re.compile(r"(?<=[a-z,;:] )((?:[A-Z][\w'-]+ ){1,3}[A-Z][\w'-]+)")


def followups(
    *,
    asked: Sequence[str],
    open_questions: Iterable[str],
    disagreements: Sequence[Disagreement],
    insights: Sequence[SourceInsight],
    read: set[str],
    cited: Sequence[Fact],
    title_of: Callable[[int], str],
    suggested: Sequence[str],
) -> list[str]:
    """This synthesis's follow-ups (see the module). `asked`: its questions; `open_questions`: those
    its gaps leave open (below too); `insights`: what this run's sources leave open; `read`: the
    addresses read; `cited`: the facts its report cites; `title_of`: a source's title."""
    known = {normalize(question) for question in [*asked, *open_questions]}
    found: list[str] = []

    def add(text: str) -> None:
        key = normalize(text)
        if key and key not in known:
            known.add(key)
            found.append(text[:300])

    for disagreement in disagreements:
        add(disagreement.question)
    for text in suggested:
        if reads_as_question(text) or text.startswith("Read "):
            add(text)
    for item in insights:
        if item.earlier:
            continue  # an earlier run's source: context, never a follow-up of this run
        if item.kind == "follow_up" and reads_as_question(item.text):
            add(item.text)
        elif item.kind == "link" and item.text not in read:
            add(f"Read {item.text} (cited by {source_label(item.source_id)})")
            read = read | {item.text}
    for term, source_id in _terms(cited, asked):
        title = title_of(source_id) or source_label(source_id)
        if not _words(term) & _words(title):  # "Apache License" in Apache-2.0 is its own name
            add(f'What does {title} mean by "{term}"?')
    return found[:MAX_FOLLOWUPS]


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[^\W\d_]{3,}", text.casefold())}


def _terms(cited: Sequence[Fact], asked: Sequence[str]) -> list[tuple[str, int]]:
    """Terms the cited facts single out (quoted, or capitalised names inside a sentence) that no
    question names, each with the source of the first fact using it; at most MAX_TERMS."""
    said = normalize(" ".join(asked))
    found: dict[str, int] = {}
    for fact in cited:
        for term in [*_QUOTED.findall(fact.quote), *_NAME.findall(fact.quote)]:
            term = term.strip(" .,;:")
            if len(term.split()) > 4 or normalize(term) in said or term in found:
                continue
            found[term] = fact.source_id
    return list(found.items())[:MAX_TERMS]

"""A gap: one thing a synthesis leaves open, typed as code found it (what kind, which question,
from which part), with the sentence a person reads. Code reads the kind, never the sentence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

__all__ = ["NEVER_MENTIONED", "NOT_ESTABLISHED", "UNANSWERED", "Gap", "GapKind", "GapList"]

#: How a gap reads when no verified fact was found for a question, when the facts found do not
#: answer it, and when no document of the corpus holds some of its words. Only written: code reads a
#: gap's `kind` and `question`, never its text.
UNANSWERED = "No verified fact was found for: "
NOT_ESTABLISHED = "Not established by the verified facts: "
NEVER_MENTIONED = "No document of the corpus mentions "
#: What a gap is: a question left unanswered or not established, a list cut short, a gap a source
#: names, words no document holds, an acceptance criterion unmet, another requirement not met or not
#: checked (a format, a phase's criterion), a part that failed, or anything else (a model's words).
GapKind = Literal[
    "unanswered",
    "not_established",
    "cut_short",
    "source_gap",
    "never_mentioned",
    "criterion_unmet",
    "requirement",
    "failure",
    "other",
]


class Gap(BaseModel):
    """One thing a synthesis leaves open, as code found it: its kind, the question it leaves open
    (unanswered, not established, or asking about `words` no document holds), the part it was
    carried up from, and `text`, the sentence a person reads (under the part's title)."""

    model_config = ConfigDict(frozen=True)

    kind: GapKind = "other"
    text: str
    question: str | None = None
    part: str | None = None
    words: tuple[str, ...] = ()

    @classmethod
    def unanswered(cls, question: str) -> Gap:
        return cls(kind="unanswered", question=question, text=f"{UNANSWERED}{question}"[:500])

    @classmethod
    def not_established(cls, question: str) -> Gap:
        return cls(kind="not_established", question=question, text=f"{NOT_ESTABLISHED}{question}"[:500])

    @classmethod
    def never_mentioned(cls, words: Sequence[str], question: str) -> Gap:
        said = ", ".join(repr(word) for word in words)
        text = f"{NEVER_MENTIONED}{said} (asked: {question[:200]})"
        return cls(kind="never_mentioned", question=question[:200], words=tuple(words), text=text)

    def under(self, part: str) -> Gap:
        """The gap as a parent synthesis carries it up: under the part's title (the first part's)."""
        return self.model_copy(update={"part": self.part or part, "text": f"{part}: {self.text}"[:500]})


def _as_gaps(items: object) -> object:
    """A list of gaps, each a `Gap` or (stored before gaps were typed) its text, of kind `other`."""
    if isinstance(items, list):
        return [Gap(text=item) if isinstance(item, str) else item for item in items]
    return items


#: Gaps, read also from their texts alone (kept before gaps had a kind: never parsed).
GapList = Annotated[list[Gap], BeforeValidator(_as_gaps)]

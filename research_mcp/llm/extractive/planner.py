"""The planner without a model: the query's own structure decides the tree.

- A comparison ("X vs Y", "compare X and Y", "difference between X and Y", "how does X differ from
  Y", "X or Y: which …", "Which …, X or Y?", "Are X and Y both / of the same …?", "What do X and Y
  each …?") becomes a discovery leaf scouting for the items and one leaf per compared item, searching
  for its item; a question of what X and Y
  "each" or "both" are or do asks each leaf the same question of its item ("What does X grant …?");
  any other comparison (a difference, a choice between X or Y) is asked whole of every leaf.
- A later question that leans on a pronoun ("… and what does it require?") takes the first
  question's subject in its place ("What does zlib's licence require?").
- A conjunction of questions ("What is A? How does B …?", "A; and B", "What is A, and how does B
  …?") becomes one leaf per question (a question that is itself a comparison becomes an executor
  over its items, still within three executor levels), and a phase on the root whose criteria are
  the parts: it iterates while verified facts leave a part uncovered (llm/extractive/plan_shapes.py).
- A query too broad for one run ("survey the entire history of X": ``scope.py``) becomes one leaf per
  facet of its subject (origins, milestones, today, outlook).
- Anything else is one leaf asking the query.

Every leaf carries a task spec: its questions and the form its findings take.

A suggested plan is adopted as given (ids cleared) when it passes the feasibility rules and the
last attempt reported no violations.
"""

from __future__ import annotations

import re

from research_mcp.contracts import PlannerOutput, PlanNode
from research_mcp.feasibility import check_feasible
from research_mcp.llm.extractive.plan_shapes import (
    COVERAGE_ITERATIONS,
    coverage_phase,
    discovery_leaf,
    with_task_spec,
)
from research_mcp.matching.subjects import LEADING_PREPOSITION, asked_subject, led_subject, of_subject
from research_mcp.matching.terms import STOPWORDS, clip
from research_mcp.role_inputs import PlannerInput
from research_mcp.scope import judge_scope

__all__ = ["plan"]


NOTE = "Extractive planner: split by the query's structure, no language model."

_SPACE = re.compile(r"\s+")
_QUESTION_LEAD = (
    r"(?:what|which|who|whom|whose|how|why|when|where|whether"
    r"|is|are|was|were|do|does|did|can|could|should|would|will|has|have)"
)
# "Under which licence is bzip2 distributed, and who packaged it?": a question led by a preposition.
_LED_QUESTION = re.compile(
    rf"(?:{LEADING_PREPOSITION}\s+(?=(?:which|what|whom|whose)\b))?{_QUESTION_LEAD}\b",
    re.IGNORECASE,
)
_ASPECT_TAIL = re.compile(
    r"\s*(?:[,:;]\s*|\s+(?:in terms of|with respect to|regarding|for|when it comes to)\s+)(.+)$"
)
_VERSUS = re.compile(r"\s+(?:vs\.?|versus)\s+", re.IGNORECASE)
_ITEM_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|with|to|versus|vs\.?)\s+", re.IGNORECASE)
_COMPARISONS = [
    re.compile(
        r"^(?:compare|comparing|contrast)\s+(?P<items>.+?)(?:\s+(?:in terms of|on|regarding|for|by)\s+.+)?$",
        re.I,
    ),
    re.compile(r"\bdifferences?\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+)$", re.I),
    re.compile(
        rf"^{_QUESTION_LEAD}\s+(?:does|do|did|is|are)\s+(?P<a>.+?)\s+(?:differ|different)\s+from\s+(?P<b>.+)$",
        re.I,
    ),
    re.compile(r"^(?P<items>[^:]+?\s+or\s+[^:]+?)\s*:\s*(?:which|who|what)\b", re.I),
    re.compile(r"^(?:which|who|what)\b[^,:]*[,:]\s*(?P<items>.+?\s+or\s+.+)$", re.I),
    re.compile(
        rf"^{_QUESTION_LEAD}\s+(?:do|does|did|is|are|was|were|have|has)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+"
        r"(?:each|both)\b",
        re.I,
    ),
    re.compile(
        r"^(?:are|were|is|was|do|does|did|have|has)\s+(?:both\s+)?(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+"
        r"(?:both|each|of the same|the same|in the same|from the same|located in the same)\b",
        re.I,
    ),
]
_COMPARISON_WORDS = frozenset(
    {"compare", "comparing", "contrast", "difference", "differences", "differ", "different"}
    | {"vs", "versus", "both", "same", "terms", "respect"}
)
_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|this|these|those|he|she|his|her)\b", re.IGNORECASE)
_AUXILIARY = r"(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|may|must)"
# "…, and what does it require?", "…, and which field does fsck read?", "…, and which licences in
# common-licenses allow linking?" (after a comma, "and which" starts a question whatever its verb): a
# question starts ("… and who died in 2007?" goes on describing the first question's subject).
_AND_QUESTION = re.compile(
    rf",\s+and\s+(?=which\b|who\b)"
    rf"|,?\s+and\s+(?=(?:what|how|why|when|where|whether)\b|which\s+[\w'’-]+\s+{_AUXILIARY}\b)",
    re.I,
)
# "…, what does the fourth field hold?": a question starts after a comma, when what is before the
# comma is a question too ("When the disk is full, what does dpkg do?" is one question).
_COMMA_QUESTION = re.compile(
    rf",\s+(?=(?:what|which|who|how|why|when|where)\s+(?:[\w'’-]+\s+)?{_AUXILIARY}\b)", re.I
)
# A list of questions ends ", and <question word>"; before it, a comma and a question word start
# the next ("who maintains procps" has no auxiliary, which _COMMA_QUESTION needs elsewhere).
_LISTED_AND = re.compile(r",\s+and\s+(?:what|which|who|how|why|when|where|whether)\b", re.IGNORECASE)
_LISTED_QUESTION = re.compile(r",\s+(?=(?:what|which|who|how|why|when|where)\s)", re.IGNORECASE)
_QUESTION_FORM = re.compile(
    rf"^(?:(?:who|what|which)\s+[\w'’-]+|(?:how|why|when|where|whether)\s+(?:[\w'’-]+\s+)?"
    rf"(?:{_AUXILIARY}|many|much|long|often|far|old)\b|{_AUXILIARY}\b)",
    re.IGNORECASE,
)


def plan(payload: PlannerInput) -> PlannerOutput:
    suggested = payload.suggested_plan
    if suggested is not None and not payload.violations and not check_feasible(suggested.root):
        return PlannerOutput(
            root=_without_ids(suggested.root), rationale=f"Adopted the suggested plan as given. {NOTE}"
        )
    query = _SPACE.sub(" ", payload.query).strip()
    if len(query) < 3:
        query = f"What is {query or 'this'}?"
    parts = question_parts(query)
    items = comparison_items(query) if len(parts) == 1 else []
    phases = []
    if len(parts) > 1:
        parts = [parts[0], *(with_subject(part, parts[0]) for part in parts[1:])]
        children = [_question_node(part, context=parts[0]) for part in parts]
        phases = [coverage_phase(parts)]
        why = (
            f"{len(parts)} distinct questions: one leaf each, and a phase that iterates (at most "
            f"{COVERAGE_ITERATIONS} times) until verified facts cover every part."
        )
    elif items:
        children = _comparison_children(query, items)
        why = (
            f"A comparison of {len(items)} items ({', '.join(items)}): a discovery leaf scouting for "
            "them, then one leaf per item, each asked the comparison."
        )
    elif (scope := judge_scope(query)).too_broad:
        children = [_leaf(split) for split in scope.splits]
        why = f"Too broad for one run ({scope.reason}): one leaf per facet."
    else:
        children = [_leaf(query)]
        why = "A single question: one leaf."
    root = PlanNode(kind="executor", title=clip(query, 200), children=children, phases=phases)
    return PlannerOutput(root=_specified(root), rationale=f"{why} {NOTE}")


def _comparison_children(comparison: str, items: list[str]) -> list[PlanNode]:
    leaves = [_item_leaf(item, comparison, items) for item in items]
    return [discovery_leaf(items, comparison), *leaves]


def _specified(node: PlanNode) -> PlanNode:
    """The tree with a task spec on every leaf (its questions and the form of its findings)."""
    children = [_specified(child) for child in node.children]
    return with_task_spec(node).model_copy(update={"children": children})


def comparison_items(query: str) -> list[str]:
    """The compared items when the query is plainly a comparison, else []."""
    text = query.strip().rstrip("?.! ")
    if len(parts := _VERSUS.split(text)) > 1:
        first = re.split(r"[,:?]\s*", parts[0])[-1]
        last = _ASPECT_TAIL.sub("", parts[-1])
        return _valid_items([first, *parts[1:-1], last])
    for pattern in _COMPARISONS:
        match = pattern.search(text)
        if not match:
            continue
        found = match.groupdict()
        if found.get("items"):
            items = _ITEM_SEPARATOR.split(found["items"])
        else:
            items = [found["a"], _ASPECT_TAIL.sub("", found["b"])]
        if valid := _valid_items(items):
            return valid
    return []


def question_parts(query: str) -> list[str]:
    """The separate questions of a conjunction ("What is A? How does B …?", "A; and B"), else [query]."""
    pieces = [piece for piece in re.split(r"(?<=\?)\s+|\s*;\s*(?:and\s+|also\s+)?", query) if piece.strip()]
    parts: list[str] = []
    for piece in pieces:
        if _LED_QUESTION.match(piece):
            parts.extend(_split_questions(piece))
        else:
            parts.append(piece)
    parts = [_as_question(part) for part in _shared_tail(parts)]
    if not 1 < len(parts) <= 10 or any(len(part.split()) < 2 or not _content_words(part) for part in parts):
        return [query]
    return parts


_EACH = re.compile(r"\s+(?:each|both|respectively)\s+(?P<tail>[^?]+?)\s*\??$", re.IGNORECASE)


def _shared_tail(parts: list[str]) -> list[str]:
    """Parts asking one thing of each item: "What does an account expiration and what does a password
    expiration each prevent?" asks "... an account expiration prevent?" too (the first part has no
    verb of its own); the tail after "each" is the question asked of every part opening as it does
    ("Who wrote zlib, and what do they each require?" is left as it is)."""
    match = _EACH.search(parts[-1]) if len(parts) > 1 else None
    lead = parts[-1].casefold().split()[:2]
    if match is None or any(part.casefold().split()[:2] != lead for part in parts[:-1]):
        return parts
    tail = match.group("tail")
    last = f"{parts[-1][: match.start()]} {tail}?"
    return [f"{part.strip().rstrip('?,;')} {tail}?" for part in parts[:-1]] + [last]


def _split_questions(piece: str) -> list[str]:
    """One sentence's questions: split at ", and what …" always, at ", what does …" when every piece
    has a question's form, and in a list of questions ("A, B, and C") at each comma before a question
    word: "What does GPL stand for, who maintains procps, and when was man-db 2.0 released?"."""
    anded = _AND_QUESTION.split(piece)
    if len(anded) > 1 and _LISTED_AND.search(piece):
        listed = [part for each in anded[:-1] for part in _LISTED_QUESTION.split(each)] + anded[-1:]
        if all(_QUESTION_FORM.match(part.strip()) for part in listed):
            return listed
    split = [part for each in anded for part in _COMMA_QUESTION.split(each)]
    if all(_QUESTION_FORM.match(part.strip()) for part in split):
        return split
    return anded


_BE = r"(?:is|are|was|were)"
_PREPOSITION = r"(?:under|about|for|in|on|from|of|with|by|at)"
# "What licence is zlib under?" -> zlib's licence; "What is zlib?" -> zlib.
_SUBJECT = re.compile(
    rf"^(?:what|which|who|whose)\s+(?:(?P<kind>[\w'’-]+(?:\s+[\w'’-]+)?)\s+)?{_BE}\s+(?P<subject>.+?)"
    rf"(?:\s+{_PREPOSITION})?\s*\??$",
    re.IGNORECASE,
)
_STANDS_FOR = {"it": "{s}", "its": "{s}'s", "they": "{s}", "them": "{s}", "their": "{s}'s"} | {
    "he": "{s}",
    "she": "{s}",
    "him": "{s}",
    "his": "{s}'s",
}
# A capitalized word after a question's first: a name it asks about.
_NAME = re.compile(r"(?<![\w'’-])(?!I\b)[A-Z][\w'’-]*")
_LEANS = re.compile(r"\b(?:it|its|they|them|their|he|she|him|his)\b", re.IGNORECASE)


def with_subject(part: str, first: str) -> str:
    """A later part of a split question that leans on a pronoun, with the first question's subject in
    its place: "What licence is zlib under?" then "what does it require?" asks "What does zlib's
    licence require?"; one naming only the first's kind of thing takes its subject after it ("What
    does the sixth field of an fstab line do?"); one naming no name and no pronoun, the first's subject
    after it ("which file gives further information about fakeroot?"), but not one naming a name of
    its own ("who packaged dash for Debian?"). Unchanged when the subject cannot be read off its form."""
    led = led_subject(first)
    if not _LEANS.search(part):
        carried = of_subject(part, first)
        if (
            led is None
            or carried != part
            or set(_content_words(led.casefold())) & set(_content_words(part.casefold()))
            or _NAME.search(part.strip().split(" ", 1)[-1])  # its own: "who packaged dash for Debian?"
        ):
            return carried
        # "On which operating system does fakeroot ...?" then "which file gives further information?"
        return f"{part.rstrip(' ?')} about {led}?"
    match = _SUBJECT.match(first.strip())
    if match:
        subject = match.group("subject").strip()
        if match.group("kind"):
            subject = f"{subject}'s {match.group('kind')}"
    elif (asked := asked_subject(first) or led) is not None:
        subject = asked  # "Which characters may host names contain?" then "What must they begin with?"
        if asked is not led:
            subject = _before_shared_verb(subject, part)
    else:
        return part
    if len(subject.split()) > 6:
        return part

    def replace(found: re.Match[str]) -> str:
        return _STANDS_FOR[found.group(0).casefold()].format(s=subject)

    return _LEANS.sub(replace, part, count=1)


# Words a subject shares with any later part without the part repeating its verb ("in", "of").
_JOINING = frozenset(
    {"a", "an", "and", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with"}
)


def _before_shared_verb(subject: str, part: str) -> str:
    """A subject read between a question's auxiliary and its last word ends where its verb begins when
    the later part repeats that verb after its pronoun: "What permissions does adduser give new home
    directories, and which login shell does it give new users?" asks of "adduser", not of "adduser give
    new home"."""
    found = _LEANS.search(part)
    after = {word.casefold() for word in re.findall(r"[^\W_]+", part[found.end() :])} if found else set()
    words = subject.split()
    for at, word in enumerate(words[1:], start=1):
        if word.casefold() in after and word.casefold() not in _JOINING:
            return " ".join(words[:at])
    return subject


def _valid_items(items: list[str]) -> list[str]:
    cleaned = [item.strip(" ,.;:\"'") for item in items]
    cleaned = [
        re.sub(r"^(?:between|both|compare|comparing)\s+", "", item, flags=re.IGNORECASE) for item in cleaned
    ]
    if not 2 <= len(cleaned) <= 6 or len({item.casefold() for item in cleaned}) != len(cleaned):
        return []
    for item in cleaned:
        words = item.split()
        named = any(word[:1].isupper() or word[:1].isdigit() for word in words)
        if not 1 <= len(words) <= 8 or not (named or _content_words(item)):
            return []
        if re.match(rf"{_QUESTION_LEAD}\b", item, re.IGNORECASE):
            return []
    return cleaned


def _content_words(text: str) -> list[str]:
    return [word for word in re.findall(r"[^\W_]+", text) if word.casefold() not in STOPWORDS]


def _as_question(part: str) -> str:
    part = part.strip().rstrip(",;")
    if _LED_QUESTION.match(part) and not part.endswith("?"):
        part = part.rstrip(".") + "?"
    return part[0].upper() + part[1:] if part else part


def _search_queries(*candidates: str) -> list[str]:
    queries: list[str] = []
    for candidate in candidates:
        candidate = clip(candidate.strip(), 300)
        if candidate and candidate.casefold() not in {query.casefold() for query in queries}:
            queries.append(candidate)
    return queries[:3]


def _leaf(question: str, *, context: str = "") -> PlanNode:
    """A leaf asking one question; a question that leans on a pronoun ("How does it work?") searches
    with the words of the query's first question as well."""
    question = clip(question, 500)
    keywords = " ".join(_content_words(question))
    if context and _PRONOUN.search(question):
        keywords = " ".join(dict.fromkeys(_content_words(context) + _content_words(question)))
    return PlanNode(
        kind="leaf",
        title=clip(question, 200),
        questions=[question],
        search_queries=_search_queries(question, keywords),
    )


def _item_leaf(item: str, comparison: str, items: list[str]) -> PlanNode:
    """A leaf for one compared item: asked the whole comparison, searching for the item and the aspect."""
    named = {word.casefold() for each in items for word in _content_words(each) + each.split()}
    aspect = [
        word
        for word in _content_words(comparison)
        if word.casefold() not in _COMPARISON_WORDS and word.casefold() not in named
    ]
    return PlanNode(
        kind="leaf",
        title=clip(item, 200),
        questions=[clip(asked_of(item, comparison, items), 500)],
        search_queries=_search_queries(f"{item} {' '.join(aspect)}", item),
    )


_SINGULAR = {"do": "does", "are": "is", "were": "was", "have": "has"}


def asked_of(item: str, comparison: str, items: list[str]) -> str:
    """The comparison's question asked of one item: "What do the Apache License 2.0 and the MPL 2.0
    each grant regarding patents?" asks "What do the MPL 2.0 grant regarding patents?" of the MPL,
    so each item's leaf answers the same question for its item. A comparison not worded as a question
    with its items side by side ("Compare X and Y", "X vs Y") is asked whole."""
    if aspect := compared_aspect(comparison):
        return f"What about {aspect} for {item}?"
    if not re.match(rf"{_QUESTION_LEAD}\b", comparison, re.IGNORECASE) or not re.search(
        r"\b(?:each|both)\b", comparison, re.IGNORECASE
    ):
        return comparison  # "What is the difference between X and Y?" is one question of both
    lowered = comparison.casefold()
    first, last = lowered.find(items[0].casefold()), lowered.rfind(items[-1].casefold())
    if first < 0 or last < first:
        return comparison
    if not re.search(r"\band\b", lowered[first:last]):
        return comparison  # a choice ("Who was born first, X or Y?") is one question of both
    asked = comparison[:first] + item + comparison[last + len(items[-1]) :]
    asked = re.sub(r"\s+(?:both|each)\b", "", asked, flags=re.IGNORECASE)
    # One item: "What do X and Y ..." asks "What does X ...", "Are X and Y ..." asks "Is X ...".
    asked = re.sub(
        r"^((?:what|which|who|how|where|when|why)\s+)?(do|are|were|have)\b",
        lambda m: (m.group(1) or "") + _SINGULAR[m.group(2).casefold()],
        asked.strip(),
        count=1,
        flags=re.IGNORECASE,
    )
    return _SPACE.sub(" ", asked[0].upper() + asked[1:])


_COMPARED_ON = re.compile(
    r"^(?:compare|comparing|contrast)\s+.+?\s+(?:in terms of|with respect to|regarding|on|for|by)\s+(?P<aspect>.+)$"
    r"|\s(?:vs\.?|versus)\s.+?\s+(?:in terms of|with respect to|regarding|on|for)\s+(?P<tail>.+)$",
    re.IGNORECASE,
)


def compared_aspect(comparison: str) -> str:
    """What a comparison not worded as a question compares its items on ("Compare X and Y on patent
    grants": "patent grants"; "X vs Y for write-heavy workloads"); "" when it names none."""
    match = _COMPARED_ON.search(comparison.strip().rstrip("?.! "))
    if not match:
        return ""
    aspect = (match.group("aspect") or match.group("tail") or "").strip(" ,;:")
    return aspect if _content_words(aspect) else ""


def _question_node(question: str, *, context: str) -> PlanNode:
    items = comparison_items(question)
    if not items:
        return _leaf(question, context=context if question != context else "")
    return PlanNode(
        kind="executor", title=clip(question, 200), children=_comparison_children(question, items)
    )


def _without_ids(node: PlanNode) -> PlanNode:
    return node.model_copy(update={"id": "", "children": [_without_ids(child) for child in node.children]})

"""The parts a question asks, read off its syntax: no model, no word that names a thing.

Three moves, each by the closed-class words of English (question words, auxiliaries, conjunctions,
pronouns, comparison cues), never by examples:

- **Split** a list or conjunction of questions ("What is X, and how do I Y?"; "X? Y?"; "X; Y") into
  its parts only when every part is a question on its own: it opens with a question word or an
  auxiliary and has a verb of its own. Question words coordinated over one predicate ("Which year
  and which conference was the paper presented at?") leave a part with no verb ("Which year"), so
  the question stays whole. A comma alone splits only a list ("A, B, and C"): "When the disk is
  full, what does the installer do?" is one question.
- **Carry** the first part's topic into a later part that leans on a pronoun ("it", "its", "they",
  "each", "this", ...): "What is CRISPR? How does it edit genes?" asks "How does CRISPR edit genes?";
  after a comparison, "which one" ("which of them", "which of the two") chooses among its items.
- **Compare**: "Compare A and B [on X][: …]", "A vs B", "differences between A and B", "How does A
  differ from B", "Is A or B larger?", "Which is older, A or B?", "Do A and B each/both …?", "Are A
  and B of the same …?" become a `Comparison`: its items, the aspect, a question per item naming it.

A question none of these reads stays whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from research_mcp.answering.questions import AUXILIARIES, BE, WH_WORDS

__all__ = ["Comparison", "Part", "comparison_of", "decompose", "question_parts", "with_topic"]

WH = "(?:" + "|".join(WH_WORDS) + ")"
AUX = "(?:" + "|".join(AUXILIARIES) + ")"
PREPOSITION = r"(?:in|on|at|under|from|for|with|by|to|of|about|into|during|since|after|before|between)"
PERSONAL = frozenset({"i", "you", "we"})
# A pronoun standing for the first part's topic, and the possessives that stand for "<topic>'s".
STANDS_FOR = frozenset({"it", "they", "them", "this", "each", "he", "she", "him"})
POSSESSIVE = frozenset({"its", "their", "his", "her"})
DETERMINERS = POSSESSIVE | {"the", "a", "an", "this", "that", "these", "those", "my", "your", "our"}
# What a comparison names its aspect with ("… on patent grants", "… in terms of land use").
ASPECT_CUE = r"(?:in terms of|with respect to|with regard to|when it comes to|regarding|on|for|by|in)"
# One item of a singular form asks in the singular ("What do A and B each grant" -> "What does A grant").
SINGULAR = {"do": "does", "are": "is", "were": "was", "have": "has"}

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[\w'’.+#/-]+")
# Where a sentence ends: after "?" or "!", at ";", after "." when a question word or auxiliary
# opens the next ("What is X. How does it work?"), not after an abbreviation's "e.g." before a name.
_OPENERS = "|".join(word.capitalize() for word in (*WH_WORDS, *AUXILIARIES))
_SENTENCE = re.compile(rf"(?<=[?!])\s+|\s*;\s*(?:and\s+|also\s+|then\s+)?|(?<=\w\w\.)\s+(?=(?:{_OPENERS})\b)")
# Where a sentence's next question starts: after "and" (a comma before it or not) a question word,
# after ", and" an auxiliary (a yes-or-no question); after a comma alone, a question word in a list.
_AND_QUESTION = re.compile(rf",?\s+and\s+(?={WH}\b)|,\s+and\s+(?={AUX}\b)", re.IGNORECASE)
_LISTED = re.compile(rf",\s+(?={WH}\b)", re.IGNORECASE)
# A last part asking "each" or "both" shares its predicate with the parts before it ("What does A
# and what does B each prevent?"): the question is one.
_DISTRIBUTED = re.compile(r"\b(?:each|both|respectively)\b(?!\s+of\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Comparison:
    """A comparison: its items, the aspect they are compared on ("" when none is named), each
    item's questions (`asked[i]` for `items[i]`) and the comparison as it was asked (the goal)."""

    goal: str
    items: tuple[str, ...]
    aspect: str
    asked: tuple[tuple[str, ...], ...]


Part = str | Comparison


def decompose(query: str) -> list[Part]:
    """The query's parts, in order: each a question, or a comparison of items."""
    query = _SPACE.sub(" ", query).strip()
    whole = comparison_of(query)
    if whole is not None and (_COMPARE.search(query) or _VERSUS.search(query)):
        return [whole]  # "Compare A and B: where is each, and which is larger?" is one comparison
    parts = question_parts(query)
    first = comparison_of(parts[0])
    later = [(first and _among(part, first.items)) or with_topic(part, parts[0]) for part in parts[1:]]
    return [comparison_of(part) or part for part in [parts[0], *later]]


# --- splitting --------------------------------------------------------------------------------


def question_parts(query: str) -> list[str]:
    """The questions a list or conjunction asks, each on its own; [query] when any piece is not."""
    pieces = [
        piece for sentence in _SENTENCE.split(query) if sentence.strip() for piece in _clauses(sentence)
    ]
    pieces = [
        re.sub(r"^(?:and|also|then)\s+", "", piece.strip(" ,"), flags=re.IGNORECASE) for piece in pieces
    ]
    asks = all(is_question(main_clause(piece)) for piece in pieces)
    if len(pieces) < 2 or not asks or _DISTRIBUTED.search(pieces[-1]):
        return [query]
    return [_as_question(piece) for piece in pieces]


def _clauses(sentence: str) -> list[str]:
    """A sentence's questions, split where `_AND_QUESTION` and `_LISTED` say; a piece that is no
    question ("When the disk is full, what does it do, and ...") stays with the question after it."""
    anded = _AND_QUESTION.split(sentence)
    if len(anded) == 1:
        return anded
    pieces = [piece for each in anded[:-1] for piece in _LISTED.split(each)] + anded[-1:]
    clauses: list[str] = []
    for before, piece in zip([None, *pieces], pieces, strict=False):
        if before is not None and not is_question(before):
            clauses[-1] = f"{clauses[-1]}, {piece}"
        else:
            clauses.append(piece)
    return clauses


def main_clause(question: str) -> str:
    """The question a clause before it leads into ("When X, what does Y do?": "what does Y do?")."""
    head, _, last = question.rpartition(", ")
    if head and is_question(last) and not is_question(head.split(", ")[0]):
        return last
    return question


def is_question(piece: str) -> bool:
    """Whether a piece is a question on its own: a question word (after a preposition, perhaps) or an
    auxiliary first, and a verb of its own: an auxiliary, or a subject question's verb ("Who wrote
    X"), or words enough after the question word to hold one ("How many people live in X")."""
    words = [word.casefold() for word in _WORD.findall(piece)]
    if len(words) >= 2 and re.fullmatch(PREPOSITION, words[0]) and re.fullmatch(WH, words[1]):
        words = words[1:]
    if not words:
        return False
    if words[0] in AUXILIARIES:
        return len(words) >= 3
    if not re.fullmatch(WH, words[0]):
        return False
    rest = words[1:]
    if words[0] in ("when", "where", "why", "how", "whether"):
        # An adverb's question inverts its auxiliary ("When was X built?"); "When the disk is full"
        # does not, and is a clause of the question after it. "How many people live in X" counts.
        if not rest or rest[0] in AUXILIARIES:
            return bool(rest)
        return words[0] == "how" and (
            rest[0] in ("many", "much") or (len(rest) > 1 and rest[1] in AUXILIARIES)
        )
    if any(word in AUXILIARIES for word in rest):
        return True
    if words[0] in ("who", "whom"):
        return len(rest) >= 2
    if words[0] == "what" and len(rest) >= 2 and re.search(r"(?:s|ed)$", rest[0]):
        return True  # "What causes X", "What happened to X"; not "What programming language"
    return len(rest) >= 3


def _as_question(piece: str) -> str:
    piece = piece.strip().rstrip(",;.")
    return _capital(piece if piece.endswith("?") else piece + "?")


# --- carrying the topic -----------------------------------------------------------------------


def with_topic(part: str, first: str) -> str:
    """`part` with its first pronoun standing for `first`'s topic replaced by it ("why do they raise
    them?" carries the topic into "they", not "them"); unchanged when `part` has none or `first`'s
    topic cannot be read off its form."""
    topic = topic_of(first)
    if topic is None:
        return part
    for found in _PRONOUN.finditer(part):
        word, after = found.group(0).casefold(), part[found.end() :].strip(" ?.!")
        if word in ("this", "each") and not _stands_alone(after):
            continue  # a determiner ("this year", "each field"), not a pronoun
        if word == "her" and after and not re.match(PREPOSITION + r"\b", after, re.IGNORECASE):
            replaced = f"{topic}'s"  # "her book"; "call her" and "to her in" are objects
        else:
            replaced = f"{topic}'s" if word in POSSESSIVE - {"her"} else topic
        return part[: found.start()] + replaced + part[found.end() :]
    return part


# "Which one", "which of them", "which of the two": a choice among what the first part compares.
_WHICH_ONE = re.compile(
    r"which\s+(?:one|of\s+(?:them|these|those|both|the\s+two))\s+(?P<rest>\w.*?)[?.!]*$", re.IGNORECASE
)


def _among(part: str, items: tuple[str, ...]) -> str | None:
    """A later part choosing among the items the first part compares, asked of them ("…, and which
    one is the default?" after "How does A differ from B": "Which is the default, A or B?")."""
    found = _WHICH_ONE.fullmatch(part.strip())
    if found is None or len(items) < 2:
        return None
    return f"Which {found.group('rest')}, {', '.join(items[:-1])} or {items[-1]}?"


_PRONOUN = re.compile(
    rf"(?<![\w'’-])(?:{'|'.join(sorted(STANDS_FOR | POSSESSIVE))})(?![\w'’-])", re.IGNORECASE
)


def _stands_alone(after: str) -> bool:
    """Whether "this" or "each" followed by `after` is a pronoun: nothing, an auxiliary or a
    preposition after it, or one last word ("why is this popular?"), not a noun phrase."""
    words = after.split()
    return len(words) <= 1 or bool(re.match(rf"(?:{AUX}|{PREPOSITION})\b", after, re.IGNORECASE))


def topic_of(question: str) -> str | None:
    """What a question is about, read off its form: what follows its verb "be" ("What licence is
    the library under?": the library), else the names it gives ("How does CRISPR edit genes?"), else its subject
    after an auxiliary ("How do central banks set rates?"), else its object ("Who wrote Hamlet?")."""
    words = _WORD.findall(main_clause(question).rstrip("?.! "))
    lowered = [word.casefold() for word in words]
    aux = next((at for at, word in enumerate(lowered) if word in AUXILIARIES), None)
    if aux is not None and lowered[aux] in BE and re.fullmatch(WH, lowered[0]):
        after = words[aux + 1 :]
        if after and re.fullmatch(PREPOSITION, after[-1].casefold()):
            after = after[:-1]
        if len(after) > 1 and re.search(r"(?:ed|en)$", after[-1]):
            after = after[:-1]  # "When was the bridge opened?": the bridge
        return _phrase(after)
    start = next((at for at in range(1, len(words)) if _is_name(words[at])), None)
    if start is not None:
        end = next((at for at in range(start, len(words)) if not _is_name(words[at])), len(words))
        if lowered[start - 1] == "the":  # a name inside a noun phrase: "the Rust compiler"
            start -= 1
            if end < len(words) - 1 and not re.fullmatch(rf"{AUX}|{PREPOSITION}", lowered[end]):
                end += 1
        return " ".join(words[start:end])
    if aux is not None and lowered[aux] not in BE:
        return _subject(words[aux + 1 :], plural=lowered[aux] in ("do", "have"))
    if lowered and lowered[0] in ("who", "what") and len(words) > 2:
        start = 3 if re.fullmatch(PREPOSITION, lowered[2]) else 2
        return _phrase(words[start:])  # "Who wrote Hamlet?", "What happens to open connections?"
    return None


def _subject(words: list[str], *, plural: bool) -> str | None:
    """The subject after an auxiliary: a determiner and one word ("How does the kernel schedule
    tasks?"), or after a plural auxiliary up to the first plural word ("How do central banks set
    rates?"); after "I", "you" or "we", what they act on ("How do I install the package?")."""
    if words and words[0].casefold() in PERSONAL:
        return _phrase(words[2:])
    start = 1 if words and words[0].casefold() in DETERMINERS else 0
    end = start + 1
    if plural:
        end = next(
            (at + 1 for at in range(start, min(len(words), start + 3)) if words[at].endswith("s")), end
        )
    return _phrase(words[:end])


def _is_name(word: str) -> bool:
    """A word that names: capitalized past the first word (not "I"), or holding a digit or a
    joining mark inside ("HTTP/3", "x-ray", "2.0")."""
    if word in ("I",) or word.casefold() in STANDS_FOR | POSSESSIVE:
        return False
    return (
        any(char.isupper() for char in word)
        or any(char.isdigit() for char in word)
        or bool(re.search(r"\w[-._/+#]\w", word))
    )


def _phrase(words: list[str]) -> str | None:
    if not words or len(words) > 6 or words[0].casefold() in STANDS_FOR | POSSESSIVE | PERSONAL:
        return None
    return " ".join(words)


# --- comparisons ------------------------------------------------------------------------------

_ITEM_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|with|to|vs\.?|versus)\s+", re.IGNORECASE)
_END = r"\s*[?.!]?$"
_TAIL = rf"(?:\s+{ASPECT_CUE}\s+(?P<aspect>[^:;?]+?))?(?:\s*[:;]\s*(?P<rest>.+?))?"
_COMPARE = re.compile(rf"^(?:please\s+)?(?:compare|contrast|comparing)\s+(?P<items>.+?){_TAIL}{_END}", re.I)
_VERSUS = re.compile(rf"^(?P<items>[^,:;?]+?\s+(?:vs\.?|versus)\s+[^,:;?]+?){_TAIL}{_END}", re.I)
_BETWEEN = re.compile(rf"\bdifferences?\s+between\s+(?P<items>.+?){_TAIL}{_END}", re.I)
_DIFFER_FROM = re.compile(
    rf"^how\s+(?:does|do|did|is|are)\s+(?P<a>.+?)\s+(?:differ|different)\s+from\s+(?P<b>.+?){_TAIL}{_END}",
    re.I,
)
_DIFFER = re.compile(rf"^how\s+(?:do|did|are)\s+(?P<items>.+?)\s+(?:differ|compare){_TAIL}{_END}", re.I)
# "Is A or B larger?", "Which is older, A or B?", "Tea or coffee: which has more caffeine?"
_COMPARATIVE = r"(?:\w+(?:er|est)|more|less|most|least|better|worse|best|worst)"
_IS_A_OR_B = re.compile(
    rf"^(?P<aux>{AUX})\s+(?P<items>.+?\s+or\s+.+?)\s+(?P<pred>{_COMPARATIVE}\b.*?){_END}", re.I
)
_WHICH_A_OR_B = re.compile(
    rf"^(?P<clause>(?:which|who|what)\b[^,:]*?)\s*[,:]\s*(?P<items>.+?\s+or\s+.+?){_END}", re.I
)
_A_OR_B_WHICH = re.compile(
    rf"^(?P<items>[^:]+?\s+or\s+[^:]+?)\s*:\s*(?P<clause>(?:which|who|what)\b.+?){_END}", re.I
)
# "What do A and B each grant …?", "Are A and B both from …?", "Are both A and B from …?"
_LEAD = rf"^(?P<lead>{WH}\s+(?:\w+\s+)?)?(?P<aux>{AUX})\s+"
_EACH = re.compile(
    rf"{_LEAD}(?P<items>.+?\s+and\s+.+?)\s+(?:each|both|respectively)\s+(?P<rest>[^?]+?){_END}", re.I
)
_BOTH = re.compile(rf"{_LEAD}both\s+(?P<items>.+?\s+and\s+\S+)\s+(?P<rest>[^?]+?){_END}", re.I)
# "Are A and B of the same nationality?", "Do A and B use the same licence?"
_SAME = re.compile(
    rf"^(?P<aux>{AUX})\s+(?:both\s+)?(?P<items>.+?\s+and\s+.+?)\s+(?:(?P<prep>{PREPOSITION})|(?P<verb>[\w'-]+))"
    rf"\s+the\s+same\s+(?P<noun>[^?]+?){_END}",
    re.I,
)


def comparison_of(question: str) -> Comparison | None:
    """The comparison a question asks, or None when it asks none."""
    text = question.strip()
    for pattern in (_COMPARE, _VERSUS, _BETWEEN, _DIFFER):
        if (match := pattern.search(text)) and (items := _items(match.group("items"))):
            return _compared(text, items, match.group("aspect"), match.group("rest"))
    if (match := _DIFFER_FROM.search(text)) and (items := _items(f"{match['a']} and {match['b']}")):
        return _compared(text, items, match.group("aspect"), match.group("rest"))
    if (match := _SAME.search(text)) and (items := _items(match.group("items"))):
        aux, prep, noun = match["aux"].casefold(), match["prep"], match["noun"]
        ends = "" if prep is None or prep.casefold() == "of" else f" {prep}"
        verb = f" {match['verb']}" if match["verb"] else ""
        return _each(
            text, items, noun, [f"What {noun} {_agree(aux, item)} {item}{verb}{ends}?" for item in items]
        )
    if (match := _IS_A_OR_B.search(text)) and (items := _items(match.group("items"))):
        return _each(
            text, items, match["pred"], [_choice(match["aux"], item, match["pred"]) for item in items]
        )
    for pattern in (_WHICH_A_OR_B, _A_OR_B_WHICH):
        if (match := pattern.search(text)) and (items := _items(match.group("items"))):
            return _each(text, items, "", [_chosen(match["clause"], item) for item in items])
    for pattern in (_EACH, _BOTH):
        if (match := pattern.search(text)) and (items := _items(match["items"])):
            lead, aux, rest = match["lead"] or "", match["aux"].casefold(), match["rest"]
            return _each(text, items, rest, [f"{lead}{_agree(aux, item)} {item} {rest}?" for item in items])
    return None


def _items(text: str) -> tuple[str, ...]:
    """The compared items a span names, or () when it names no 2 to 6 distinct short items."""
    items = []
    for raw in _ITEM_SEPARATOR.split(text.strip(" ,.;:")):
        item = re.sub(r"^(?:both|between|either|the|an?)\s+", "", raw.strip(" ,.;:\"'"), flags=re.IGNORECASE)
        if not item or not 1 <= len(item.split()) <= 8 or re.match(rf"(?:{WH}|{AUX})\b", item, re.IGNORECASE):
            return ()
        items.append(item)
    if not 2 <= len(items) <= 6 or len({item.casefold() for item in items}) != len(items):
        return ()
    return tuple(items)


def _compared(goal: str, items: tuple[str, ...], aspect: str | None, rest: str | None) -> Comparison:
    """A comparison whose items are asked what follows it ("…: where is each?"), else its aspect."""
    aspect = (aspect or "").strip(" ,.;:")
    asks = question_parts(rest.strip()) if rest else []
    own = [part for part in asks if not _CHOOSING.match(part)]  # "which is larger" stays the goal's
    asked = []
    for item in items:
        if own:
            questions = [_of_item(part, item) for part in own]
        elif asks:
            questions = [_chosen(part.rstrip("?"), item) for part in asks]
        elif aspect:
            questions = [f"What about {aspect} for {item}?"]
        else:
            questions = [f"What is {item}?"]
        asked.append(tuple(_capital(question) for question in questions))
    return Comparison(goal, items, aspect or (rest or "").strip(" ?"), tuple(asked))


# "Which is larger", "Who is older": a choice among the items, which each item's question answers.
_CHOOSING = re.compile(rf"^(?:which|who)(?:\s+one)?\s+(?P<aux>{AUX})\s+(?P<pred>.+?)\s*\??$", re.IGNORECASE)


def _each(goal: str, items: tuple[str, ...], aspect: str, questions: list[str]) -> Comparison:
    """A comparison asking each item one question (`questions[i]` of `items[i]`)."""
    asked = tuple((_capital(_SPACE.sub(" ", question)),) for question in questions)
    return Comparison(goal, items, aspect.strip(" ?"), asked)


def _of_item(part: str, item: str) -> str:
    """A question asked of the items together ("where is each") asked of one of them; one naming
    none of them by a pronoun names its item before it."""
    asked = with_topic(part, f"What is {item}?")
    return asked if asked != part else f"{item}: {part}"


def _choice(aux: str, item: str, predicate: str) -> str:
    """ "Is A or B larger?" asked of A: "Is A larger?" ("Has A or B more …?": "Does A have more …?")."""
    aux = aux.casefold()
    if aux in ("has", "have"):
        return f"Does {item} have {predicate}?"
    return f"{_agree(aux, item)} {item} {predicate}?"


def _chosen(clause: str, item: str) -> str:
    """ "Which is older" asked of one item: "Is A older?"; a clause of another form names its item."""
    if match := _CHOOSING.match(clause.strip()):
        return _choice(match["aux"], item, match["pred"])
    return f"{item}: {clause.strip(' ?')}?"


def _agree(aux: str, item: str) -> str:
    """The auxiliary in agreement with one item: plural items ("cats") keep it."""
    last = item.split()[-1].casefold()
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
    return aux if plural else SINGULAR.get(aux, aux)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text

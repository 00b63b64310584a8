"""The extractor without a model: the source's best sentences for each question, quoted verbatim.

Each question is scored against every sentence (see `scoring`), a sentence that refers back ("she
was named ambassador") as what it refers back to (`references`); up to k sentences are chosen by
MMR (the best at or above `FACT_RELEVANCE`, each further one at or above `FURTHER_RELEVANCE`, or
`LEAD_FURTHER_RELEVANCE` in a source a lead brought the research to, and `RELATIVE_RELEVANCE` of
the best; a question that names the source's subject also scores each
sentence against the clause it says of that subject, `focus`), a source the question names also
gives its opening where it says what the subject is (`_add_definition`), and each becomes a fact
whose quote is the sentence sliced from the source (so it is found by construction) and whose
statement is the same sentence: this backend never paraphrases. A fact's confidence is 0.2 + its
score, at most 0.95, so a sentence at the threshold gets 0.4 and a strong one (score 0.5) the 0.7 a
model would typically give. A question counts as answered from `MIN_RELEVANCE` up.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from research_mcp.contracts import (
    Answer,
    Confidence,
    ConfidenceLevel,
    Embedder,
    ExtractedFact,
    ExtractorOutput,
    FollowUpQuestion,
    LinkedSource,
)
from research_mcp.llm.embeddings import english_words
from research_mcp.llm.extractive.focus import focus, names_subject, subject
from research_mcp.llm.extractive.references import referents, resolved_texts
from research_mcp.llm.extractive.scoring import Relevance, select_diverse
from research_mcp.llm.extractive.sentences import Sentence, completions, introduced_ends, split_sentences
from research_mcp.matching.answer_type import asks_for_credit, asks_for_number, credited_roles, states_number
from research_mcp.matching.boilerplate import is_boilerplate, is_credit
from research_mcp.matching.terms import clip, said_terms, terms
from research_mcp.role_inputs import ExtractorPayload

__all__ = ["MIN_RELEVANCE", "NO_ANSWER", "STRONG_RELEVANCE", "extract"]

MIN_RELEVANCE = 0.25
STRONG_RELEVANCE = 0.5
NO_ANSWER = "The source does not answer this."
MAX_FACTS = 40
K_BY_PRIORITY = {1: 5, 2: 4}
DEFAULT_K = 3
ANSWER_SHARE = 0.8
#: A source's best sentence for a question is quoted as a fact when it scores at least
#: FACT_RELEVANCE: one that answers weakly (a source a second hop reached, which names the bridge
#: but not the question's words) still gives its best. Each further sentence must score at least
#: FURTHER_RELEVANCE and RELATIVE_RELEVANCE of that best: a source that answers strongly gives its
#: answer, not also its weaker neighbours, and one that barely bears on the question (a search's
#: near miss) gives one sentence, not three.
FACT_RELEVANCE = 0.2
FURTHER_RELEVANCE = 0.35
#: The score of a credit line for a question not asking who: below every threshold.
MISSING = -1.0
#: A source a lead brought the research to (told why it is read: its `context`) is about what it is
#: asked, a bridge's name and the few words the question leaves open about it: such short questions
#: score lower, and its further sentences need LEAD_FURTHER_RELEVANCE ("Over 60 million people were
#: killed" in "World War II casualties", asked "World War II: fallen 60 million").
LEAD_FURTHER_RELEVANCE = 0.28
RELATIVE_RELEVANCE = 0.6
#: A sentence stating a number joins a number question's facts from this share of its best score.
NUMBER_SHARE = 0.5
#: A technical word of the question that at most this many sentences of a source say anchors the answer there.
ANCHOR_SENTENCES = 2
_WORD = re.compile(r"[\w.-]*\w")

# A study's limitations, not a licence's "Limitation of Liability" or its "including, without limitation".
_LIMITATION_HEADING = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?\s+)?(?:limitations?(?! of liability)|future (?:work|research|directions)|open (?:questions|problems)"
    r"|threats to validity|caveats|shortcomings)\b",
    re.IGNORECASE,
)
_LIMITATION_SENTENCE = re.compile(
    # A limitation the source owns ("One limitation of this study is ..."), not a licence's "may add
    # an explicit geographical distribution limitation".
    r"\b(?:(?:a|one|the|main|key|major|important|our|its|this|these)\s+(?:(?:main|key|major|important)\s+)?"
    r"limitations?\s+(?:is|are|was|were|of (?!liability))"
    r"|future (?:work|research|studies)|further (?:research|work|study|studies|investigation)"
    r"|remains? (?:unclear|unknown|open|to be (?:seen|determined))|not yet (?:known|understood|clear|established)"
    r"|open question)\b",
    re.IGNORECASE,
)
_URL = re.compile(
    r"\bhttps?://[^\s<>\"'\]\[)(]+|\bdoi:\s?10\.\d{4,9}/\S+|\b10\.\d{4,9}/[^\s\"'<>]+", re.IGNORECASE
)
_SPACE = re.compile(r"\s+")
_LICENCE_KEY = re.compile(r"licen[cs]e\s*:", re.IGNORECASE)
_DEP5 = re.compile(r"Format:\s*https?://(?:www\.)?debian\.org/doc/packaging-manuals/copyright-format/")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
# A sentence saying what is done in place of what the one before it ruled out.
_INSTEAD = re.compile(r"(?:Instead|Rather)\b")
# A DEP-5 field's value: the rest of its line and the indented lines continuing it.
_FIELD_VALUE = re.compile(r"[\w-]+:[ \t]*((?:[^\n]*)(?:\n[ \t]+\S[^\n]*)*)")
#: A question whose answer is a thing or a person: "Which name server ...", "Who wrote ...".
_ENTITY_QUESTION = re.compile(
    r"^\W*(?:(?:in|on|at|by|for|from|of|to|with)\s+)?(?:who|whom|whose|which|what)\b", re.IGNORECASE
)


def extract(payload: ExtractorPayload, embedder: Embedder | None) -> ExtractorOutput:
    questions = (payload.questions or _spec_questions(payload))[:10]  # positions kept: question_index
    prepared = _prepared(payload.source_text, embedder)
    sentences, claims, relevance, reach = (
        prepared.sentences,
        prepared.claims,
        prepared.relevance,
        prepared.reach,
    )
    if not questions or not claims:
        reason = "No questions were given." if not questions else "The source has no readable sentences."
        return ExtractorOutput(
            answers=[Answer(question=clip(q, 500), answer=NO_ANSWER) for q in questions],
            confidence=Confidence(level="low", reasoning=f"{reason} Extractive backend: no language model."),
        )
    # A sentence answers what the question asks of the source's own subject as well as the whole
    # question: each scores its best against either (focus.py).
    scores = [_scores(relevance, question, payload.source_title) for question in questions]
    per_question = max(1, min(_k(payload), MAX_FACTS // len(questions)))
    further = LEAD_FURTHER_RELEVANCE if payload.context else FURTHER_RELEVANCE
    chosen = [
        [
            index
            for position, index in enumerate(
                select_diverse(
                    relevance,
                    question_scores,
                    k=per_question,
                    threshold=max(FACT_RELEVANCE, RELATIVE_RELEVANCE * float(np.max(question_scores))),
                )
            )
            if position == 0 or question_scores[index] >= further
        ]
        for question_scores in scores
    ]

    _add_definition(chosen, scores, claims, payload)
    _add_number(chosen, scores, claims, questions)
    _add_anchor(chosen, scores, relevance, questions, payload.source_title)
    _add_field(chosen, scores, claims, questions, payload.source_text)
    _add_antecedents(chosen, prepared.antecedent, questions)
    _add_alternatives(chosen, claims, payload.source_text)
    _within_announcements(chosen, claims, reach)
    claims, reach = _add_credit(chosen, scores, prepared, questions)

    # One fact per sentence, assigned to the question it scores highest on.
    home: dict[int, int] = {}
    for question_index, indexes in enumerate(chosen):
        for index in indexes:
            current = home.get(index)
            if current is None or scores[question_index][index] > scores[current][index]:
                home[index] = question_index
    order = sorted(home, key=lambda index: (home[index], chosen[home[index]].index(index)))
    fact_of = {index: position for position, index in enumerate(order)}
    quotes = {index: payload.source_text[claims[index].start : reach[index]] for index in order}
    facts = [
        ExtractedFact(
            statement=_SPACE.sub(" ", quotes[index]),
            quote=quotes[index],
            question_index=home[index],
            confidence=_fact_confidence(float(scores[home[index]][index])),
        )
        for index in order
    ]
    answers = [
        _answer(question, chosen[i], scores[i], fact_of, quotes) for i, question in enumerate(questions)
    ]
    best = [float(np.max(question_scores)) for question_scores in scores]
    return ExtractorOutput(
        facts=facts,
        answers=answers,
        confidence=_confidence(best, len(claims), embedder),
        follow_up_questions=_follow_ups(questions, best),
        source_identified_gaps=_source_gaps(sentences),
        linked_candidate_sources=_linked_sources(payload, sentences, claims, scores),
    )


#: A source's sentences, claims and relevance are kept for its next extraction (a phase iteration, a
#: second hop, another leaf reading it): up to this many characters of source text in all (about
#: 15 bytes held a character), each source at most half of it. A 400 KB file takes 3-6 s to prepare.
PREPARED_CHARS = 2_000_000


class _Prepared(NamedTuple):
    """A source as the extractor reads it (see `_prepared`)."""

    sentences: list[Sentence]
    claims: list[Sentence]
    relevance: Relevance
    #: Per claim: the claim naming what it refers back to, and that name.
    antecedent: list[tuple[int, str] | None]
    #: Per claim: where its quote ends, with what it announces.
    reach: list[int]
    #: Credit and contact lines (boilerplate, never a claim), for questions asking who (`_add_credit`).
    credits: list[Sentence]
    credit_relevance: Relevance


_prepared_cache: OrderedDict[tuple[str, int], tuple[_Prepared, int]] = OrderedDict()
_prepared_lock = threading.Lock()


def _prepared(text: str, embedder: Embedder | None) -> _Prepared:
    """The source's sentences, the claims among them (sentences that may be quoted, no boilerplate),
    their relevance (each claim scored as what it says, under its heading), for each claim that
    refers back the claim naming what it refers to, and where each claim's quote ends (a sentence
    announcing a list, with the list: `introduced_ends`); its embeddings are kept with it, so a
    source asked again embeds only the sentences it had not embedded."""
    key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest(), id(embedder))
    with _prepared_lock:
        if (hit := _prepared_cache.get(key)) is not None and hit[0].relevance.embedder is embedder:
            _prepared_cache.move_to_end(key)
            return hit[0]
    sentences = split_sentences(text)
    # Scored as what it says: "she was named ambassador" with the name "she" refers back to.
    scored_as = _in_stanzas(text, sentences, _under_headings(sentences, resolved_texts(text, sentences)))
    ends = introduced_ends(text, sentences)
    # A sentence and the short one completing it ("Defaults to /bin/bash.") are one claim.
    completed = completions(text, sentences, ends)
    for position, closing in completed.items():
        ends[position] = sentences[closing].end
        scored_as[position] = f"{scored_as[position]} {_SPACE.sub(' ', sentences[closing].text)}"
    kept = [
        index
        for index, sentence in enumerate(sentences)
        if _claim(sentence) and not is_boilerplate(sentence.text) and index not in completed.values()
    ]
    claims = [sentences[index] for index in kept]
    relevance = Relevance([scored_as[index] for index in kept], embedder)
    claim_of = {sentence: claim for claim, sentence in enumerate(kept)}
    referent = referents(text, sentences)
    antecedent = [
        (claim_of[at], name) if at is not None and at in claim_of else None
        for name, at in (referent[sentence] for sentence in kept)
    ]
    credits = [sentence for sentence in sentences if _claim(sentence) and is_credit(sentence.text)]
    prepared = _Prepared(
        sentences,
        claims,
        relevance,
        antecedent,
        [ends[sentence] for sentence in kept],
        credits,
        Relevance([_SPACE.sub(" ", credit.text) for credit in credits], embedder),
    )
    if len(text) <= PREPARED_CHARS // 2:
        with _prepared_lock:
            _prepared_cache[key] = (prepared, len(text))
            while sum(entry[1] for entry in _prepared_cache.values()) > PREPARED_CHARS:
                _prepared_cache.popitem(last=False)
    return prepared


def _claim(sentence: Sentence) -> bool:
    """A sentence that may be quoted: running text of three words or more, or a field line."""
    if sentence.field:
        return sentence.words >= 2
    return not sentence.heading and sentence.words >= 3


def _under_headings(sentences: list[Sentence], texts: list[str]) -> list[str]:
    """Each sentence as scored: after the section heading it stands under, so that the text under
    "The sixth field (fs_passno)." or "Grant of Patent License." answers what the heading names (a
    title opening the document heads every sentence alike and is left out)."""
    heading = ""
    scored: list[str] = []
    for position, (sentence, text) in enumerate(zip(sentences, texts, strict=True)):
        if sentence.heading:
            # The document's own title, its first line, is what every sentence is under: no context.
            heading = _SPACE.sub(" ", sentence.text).strip(" #*_:.") if position else ""
            scored.append(text)
        else:
            scored.append(f"{heading}: {text}" if heading else text)
    return scored


def _in_stanzas(text: str, sentences: list[Sentence], scored: list[str]) -> list[str]:
    """A machine-readable Debian copyright file (DEP-5) says which files each licence covers: its
    "License:" line is scored with its paragraph's "Files:", the paragraph for every file ("Files: *")
    as the package's own (its "Upstream-Name"), so that "Under which licence is zstd distributed?"
    finds "License: BSD-3-clause or GPL-2" of "Files: *" rather than "License: zlib" of
    "Files: zlibWrapper/gz*.c"; so is the text under it in that paragraph. A "License:" paragraph
    without "Files:" holds a licence's text."""
    if not _DEP5.match(text):
        return scored
    package, files, whose = "", "", ""
    for position, sentence in enumerate(sentences):
        previous_end = sentences[position - 1].end if position else 0
        if _PARAGRAPH_BREAK.search(text, previous_end, sentence.start):
            files, whose = "", ""
        if whose and not sentence.field:
            # The text under a paragraph's "License:" is of its files too ("Changes by Ben Collins
            # ..., added --chuid ... options" of start-stop-daemon.c's public-domain notice).
            scored[position] = f"{whose}: {scored[position]}"
            continue
        key, _, value = sentence.text.partition(":")
        if key == "Files":
            # Its value may go on, or start, on the indented lines under it ("Files:\n utils/...").
            field = _FIELD_VALUE.match(text, sentence.start)
            files = " ".join(field.group(1).split()) if field else ""
        if not sentence.field:
            continue
        if key == "Upstream-Name":
            package = value.strip()
        elif key == "License" and files:
            whose = f"{package} (every file)" if files == "*" and package else f"Files {files}"
            scored[position] = f"{whose}: {scored[position]}"
    return scored


def _scores(relevance: Relevance, question: str, title: str) -> np.ndarray:
    """Each sentence's relevance to the question, or to its focus on the source's subject if higher."""
    whole = relevance.scores(question)
    clause = focus(question, title)
    return np.maximum(whole, relevance.scores(clause)) if clause else whole


def _add_definition(
    chosen: list[list[int]], scores: list[np.ndarray], claims: list[Sentence], payload: ExtractorPayload
) -> None:
    """A source about a thing the question names also gives, with its answer, the sentence that says
    what that thing is: its opening, where the opening names the subject its title names ("Local H
    is an American rock band ..." for "Are Local H and For Against both from the United States?",
    whose answering sentence says only where the members met). The answer says something of the
    thing; the definition says which thing it is, and a comparison or a synthesis joining two
    sources needs both. So does a source a lead reached by naming its subject (its context). A
    source the question does not name (a search's near miss) gives its answer alone. The opening
    goes with the question it scores best on among those the source answers (among all of them
    when it answers none: what the thing is, is then all it says of it)."""
    title = payload.source_title
    named = [*payload.questions, payload.context]
    if not claims or not any(names_subject(text, title) for text in named if text):
        return
    if not set(terms(subject(title))) <= set(terms(claims[0].text)):
        return
    if any(0 in indexes for indexes in chosen):
        return
    answered = [index for index, indexes in enumerate(chosen) if indexes] or list(range(len(chosen)))
    chosen[max(answered, key=lambda index: (float(scores[index][0]), -index))].append(0)


def _add_number(
    chosen: list[list[int]], scores: list[np.ndarray], claims: list[Sentence], questions: list[str]
) -> None:
    """A question asking how many, how long, when or which version is answered by a sentence stating
    a number (the classic answer-type check): where none of the sentences chosen for it states one,
    the best sentence that does is added, if it scores at least `NUMBER_SHARE` of the best and
    `FURTHER_RELEVANCE` (a source that barely bears on the question adds nothing) ("The
    machine ID is a single newline-terminated, hexadecimal, 32-character, lowercase ID." under the
    heading "/etc/machine-id" that outscores it for "How long is the machine ID?")."""
    for position, question in enumerate(questions):
        if not chosen[position] or not asks_for_number(question):
            continue
        if any(states_number(claims[index].text) for index in chosen[position]):
            continue
        question_scores = scores[position]
        floor = max(FURTHER_RELEVANCE, NUMBER_SHARE * float(np.max(question_scores)))
        for index in np.argsort(-question_scores, kind="stable"):
            if question_scores[index] < floor:
                break
            if states_number(claims[index].text):
                chosen[position].append(int(index))
                break


def _add_anchor(
    chosen: list[list[int]], scores: list[np.ndarray], relevance: Relevance, questions: list[str], title: str
) -> None:
    """A technical word of the question ("nofail", "PASS_WARN_AGE", "readline": no whole word of
    the English vocabulary MiniLM was trained with) that the source says in one or two sentences
    only anchors the answer there: where no chosen sentence says it, the best sentence that does
    joins them, one a question (the list entry "nofail do not report errors for this device if it
    does not exist." loses, on shared words, to "The following is a typical example of an fstab
    entry:"). Not a word of the source's title, which every sentence is about."""
    lexicon = relevance.lexicon
    named = set(terms(title))
    for position, question in enumerate(questions):
        if not chosen[position]:
            continue
        for word in _outside_vocabulary(question):
            said = [term for term in terms(word) if term not in named]
            if not said:
                continue
            holding = [
                index for index in range(lexicon.size) if all(t in lexicon.documents[index] for t in said)
            ]
            if not 0 < len(holding) <= ANCHOR_SENTENCES or any(i in chosen[position] for i in holding):
                continue
            chosen[position].append(max(holding, key=lambda index: (float(scores[position][index]), -index)))
            break


def _add_credit(
    chosen: list[list[int]], scores: list[np.ndarray], prepared: _Prepared, questions: list[str]
) -> tuple[list[Sentence], list[int]]:
    """A question asking who wrote, packaged or answers for a thing ("Who put together Debian's bash
    package?", "Whom should bugs in e2fsprogs be reported to?") is answered by a credit or contact
    line, boilerplate to every other question ("This package was put together by Matthias Klose
    <doko@debian.org>."): the best of the source's credit lines giving the part it asks about (the
    packager's, not the author's, for "put together") and saying a word of it joins the sentences
    chosen for it. Whether the line is about the thing asked (a copyright file's packager may be
    another package's) is the evidence rules' to judge: the thing named together with what is
    asked. The claims and their quotes' ends are returned with the credits after them, each
    question's scores extended to them (`MISSING` where it does not ask who)."""
    credits, asking = prepared.credits, [asks_for_credit(question) for question in questions]
    if not credits or not any(asking):
        return prepared.claims, prepared.reach
    offset = len(prepared.claims)
    for position, question in enumerate(questions):
        if not asking[position]:
            scores[position] = np.concatenate([scores[position], np.full(len(credits), MISSING)])
            continue
        credit_scores = prepared.credit_relevance.scores(question)
        scores[position] = np.concatenate([scores[position], credit_scores])
        roles, asked = credited_roles(question), terms(question)
        bearing = [
            index
            for index, credit in enumerate(credits)
            if roles & credited_roles(credit.text) and said_terms(asked, set(terms(credit.text)))
        ]
        if bearing:
            chosen[position].append(offset + max(bearing, key=lambda i: (float(credit_scores[i]), -i)))
    return [*prepared.claims, *credits], [*prepared.reach, *(credit.end for credit in credits)]


def _outside_vocabulary(question: str) -> list[str]:
    """The question's words (folded, once each) outside the English vocabulary MiniLM was trained
    with, numbers aside (the answer's kind is the number rule's): "nofail", "e2fsprogs"."""
    return [
        word
        for word in dict.fromkeys(_WORD.findall(question.casefold()))
        if word not in english_words() and any(char.isalpha() for char in word)
    ]


def _add_field(
    chosen: list[list[int]], scores: list[np.ndarray], claims: list[Sentence], questions: list[str], text: str
) -> None:
    """A field line whose key the question asks for ("Author: Philip A. Nelson" for "Who is the author
    of GNU bc?", "Version: bc version 1.01" for "Which version ...?") answers it in the document's
    own structure, however little its words resemble the question's: where a sentence of the source
    was chosen for the question and none is such a field, the best of them joins it, in a source
    saying every technical word the question does (bc's "Version:" does not answer "Which version of
    e2fsprogs ...?"). A "License:" field is scored with its stanza instead (`_in_stanzas`): a
    copyright file lists several."""
    keyed = [
        (index, key)
        for index, claim in enumerate(claims)
        if claim.field and not _LICENCE_KEY.match(claim.text) and (key := terms(claim.text.partition(":")[0]))
    ]
    if not keyed:
        return
    folded = text.casefold()
    for position, question in enumerate(questions):
        if not chosen[position] or not all(word in folded for word in _outside_vocabulary(question)):
            continue
        asked = set(terms(question))
        fields = [index for index, key in keyed if len(said_terms(key, asked)) == len(key)]
        if fields and not any(index in chosen[position] for index in fields):
            chosen[position].append(max(fields, key=lambda index: (float(scores[position][index]), -index)))


def _add_antecedents(
    chosen: list[list[int]], antecedent: list[tuple[int, str] | None], questions: list[str]
) -> None:
    """A question asking which thing or who ("Which name server can augment or replace /etc/hosts?")
    may be answered by a sentence that refers back ("It augments or replaces the /etc/hosts file
    ..."), scored with the name it refers to but not saying it: that name, which the question does
    not give, is the answer, and the sentence naming it ("The Berkeley Internet Name Domain (BIND)
    Server implements ...") is quoted before it. Other questions take the sentence alone."""
    for position, question in enumerate(questions):
        if _ENTITY_QUESTION.match(question) is None:
            continue
        asked = set(terms(question))
        indexes = chosen[position]
        for index in list(indexes):
            found = antecedent[index]
            if found is not None and found[0] not in indexes and not set(terms(found[1])) <= asked:
                indexes.insert(indexes.index(index), found[0])


def _add_alternatives(chosen: list[list[int]], claims: list[Sentence], text: str) -> None:
    """A sentence chosen for saying what not to do is quoted with the next one when that one says what
    to do instead, in the same paragraph: machine-id(5)'s "... the machine ID or any part of it must
    not be used directly." goes with "Instead the machine ID should be hashed with a cryptographic,
    keyed hash function ...", the answer to what an application should do with it."""
    for indexes in chosen:
        for index in list(indexes):
            after = index + 1
            if (
                after < len(claims)
                and after not in indexes
                and _INSTEAD.match(claims[after].text)
                and not _PARAGRAPH_BREAK.search(text, claims[index].end, claims[after].start)
            ):
                indexes.insert(indexes.index(index) + 1, after)


def _within_announcements(chosen: list[list[int]], claims: list[Sentence], reach: list[int]) -> None:
    """A sentence quoted with what it announces ("... the items listed below." and its items) holds
    the items: an item chosen as well is the announcement's fact, not a second quote of its words."""
    every = list(dict.fromkeys(index for indexes in chosen for index in indexes))
    holder = {
        index: next(
            (
                other
                for other in every
                if other != index
                and claims[other].start <= claims[index].start
                and claims[index].end <= reach[other]
            ),
            index,
        )
        for index in every
    }
    for position, indexes in enumerate(chosen):
        chosen[position] = list(dict.fromkeys(holder[index] for index in indexes))


def _spec_questions(payload: ExtractorPayload) -> list[str]:
    return list(payload.task_spec.questions) if payload.task_spec else []


def _k(payload: ExtractorPayload) -> int:
    return K_BY_PRIORITY.get(payload.task_spec.priority, DEFAULT_K) if payload.task_spec else DEFAULT_K


def _fact_confidence(score: float) -> float:
    return round(min(0.95, 0.2 + score), 2)


def _answer(
    question: str, indexes: list[int], scores: np.ndarray, fact_of: dict[int, int], quotes: dict[int, str]
) -> Answer:
    """The best sentence, and the second best when it scores within 80% of it; citing every chosen fact."""
    if not indexes:
        return Answer(question=clip(question, 500), answer=NO_ANSWER)
    top = float(scores[indexes[0]])
    lead = [index for index in indexes[:2] if float(scores[index]) >= ANSWER_SHARE * top]
    best = " ".join(_SPACE.sub(" ", quotes[index]) for index in lead)
    return Answer(
        question=clip(question, 500),
        answer=clip(best, 2000),
        fact_indexes=[fact_of[index] for index in indexes],
    )


def _confidence(best: list[float], sentence_count: int, embedder: Embedder | None) -> Confidence:
    answered = sum(score >= MIN_RELEVANCE for score in best)
    strong = sum(score >= STRONG_RELEVANCE for score in best)
    if answered == len(best) and strong == len(best):
        level: ConfidenceLevel = "high"
    elif answered == 0 or answered * 2 < len(best):
        level = "low"
    else:
        level = "medium"
    method = "lexical (BM25) and embedding similarity" if embedder else "lexical (BM25) similarity"
    reasoning = (
        f"{answered} of {len(best)} questions have a sentence scoring at least {MIN_RELEVANCE} "
        f"({strong} at least {STRONG_RELEVANCE}); best scores "
        + ", ".join(f"{score:.2f}" for score in best)
        + f" over {sentence_count} sentences. Extractive backend: sentences chosen by {method}, "
        "quoted verbatim, no language model."
    )
    return Confidence(level=level, reasoning=clip(reasoning, 1000))


def _follow_ups(questions: list[str], best: list[float]) -> list[FollowUpQuestion]:
    weak = sorted((score, index) for index, score in enumerate(best) if score < STRONG_RELEVANCE)
    return [
        FollowUpQuestion(
            question=clip(questions[index], 500),
            confidence=round(1 - score, 2),
            rationale=(
                f"Best sentence of this source scores {score:.2f} "
                + (
                    f"(below {MIN_RELEVANCE}: not answered)"
                    if score < MIN_RELEVANCE
                    else f"(below {STRONG_RELEVANCE})"
                )
                + "; look for another source."
            ),
        )
        for score, index in weak[:5]
    ]


def _source_gaps(sentences: list[Sentence]) -> list[str]:
    """Sentences under a limitations/future-work heading, and sentences that name a limitation."""
    gaps: list[str] = []
    in_section = 0
    for sentence in sentences:
        if sentence.heading or sentence.words <= 4:
            # a heading line, or a short run-in heading such as "Limitations:"
            if _LIMITATION_HEADING.match(sentence.text.strip("#*_: ")):
                in_section = 3
                continue
            if sentence.heading:
                in_section = 0
                continue
        if in_section or _LIMITATION_SENTENCE.search(sentence.text):
            in_section = max(0, in_section - 1)
            gap = clip(sentence.text, 500)
            if sentence.words >= 3 and gap not in gaps:
                gaps.append(gap)
        if len(gaps) == 5:
            break
    return gaps


def _linked_sources(
    payload: ExtractorPayload, sentences: list[Sentence], claims: list[Sentence], scores: list[np.ndarray]
) -> list[LinkedSource]:
    if not (payload.task_spec and payload.task_spec.discovery_intense):
        return []
    relevant = {
        (claims[index].start, claims[index].end)
        for question_scores in scores
        for index in range(len(claims))
        if question_scores[index] >= MIN_RELEVANCE
    }
    found: dict[str, LinkedSource] = {}
    for sentence in sentences:
        for match in _URL.finditer(sentence.text):
            ref = match.group().rstrip(".,;:!?")
            if ref in found or ref == payload.source_ref:
                continue
            priority = 2 if (sentence.start, sentence.end) in relevant else 3
            found[ref] = LinkedSource(ref=ref[:2000], context=clip(sentence.text, 500), priority=priority)
    ranked = sorted(found.values(), key=lambda link: link.priority)  # stable: position within a priority
    return ranked[:8]

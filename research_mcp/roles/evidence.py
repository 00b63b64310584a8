"""Confidence and gaps computed by code from the evidence a synthesis was given, whatever the backend.

A synthesizer's confidence is capped by what its facts support; each rule that lowers it says why:

- no verified fact in its input: `low`;
- questions covered: a question no verified fact was extracted for is a gap (judged where verified
  facts answer some of the questions asked); more than half such questions: `low`, some: `medium`;
- evidence strength: each answered question's best verified fact (its confidence; for the no-model
  backend 0.2 + its relevance score). A mean below `COVERED_EVIDENCE`: `low`; below
  `STRONG_EVIDENCE`: `medium`. A question whose facts share fewer than two of its content terms ("See the GNU
  Lesser General Public License for more details." for "What does the GPL-3 require when
  distributing modified versions?") is answered on paper only: `medium` at most;
- the thing a question names: a question naming it by an identifier ("GPL-3") is judged on the
  facts that name it too (in their statement, quote or source title); none does: `medium` at most,
  so facts on the GPL-2 do not corroborate an answer about the GPL-3;
- the subject a question names: most of its capitalized words ("the Protected field", "Debian") and
  quoted phrases mentioned by none of its verified facts (statement, quote or source title) means
  the facts answer something else that shares its common words ("dpkg", "package"): the question
  is a gap ("Not established by the verified facts: ..."), and confidence `low` when every question
  judged is so, else `medium`;
- what a question asks about: more than half of its content terms (numbers and framing words such
  as "say" aside) said by none of the facts extracted for it (statement, quote or source title)
  means they answer another question sharing a word or two ("Under which licence is zstd
  distributed?" by dpkg's "May be used and distributed freely for any purpose."), unless they say
  every name it capitalizes, two or more (then what is unsaid is how the things named relate; the
  one "IP" of "How do I configure a static IP address with netplan?" says little of its subject):
  a gap, `low` when every question judged is so, else `medium`. Calibrated on the dev sets of
  bench.answers, where every unanswerable question had more than half its terms unsaid and no
  answered realdocs question did;
- the kind of answer asked for: a question asking how many, how long, when or which version
  ("How long is the machine ID?") whose facts state no number, asking why whose facts give no
  reason or purpose ("Why is the machine ID written in lowercase?" answered by "The machine ID is
  a ... lowercase ID."), none of what the question names (LGPL-2.1's "hence the version number 2.1"
  for "Why was the Artistic License replaced by a version 2.0?"), asking for an e-mail address whose
  facts give none, asking when an event was whose facts state no date ("Version: bc version
  1.01" for "When was GNU bc version 1.07 released?"), asking who whose facts name no one the
  question does not ("GNU bc version 1.07:" for "Who is the author of GNU bc?"), asking what an
  abbreviation stands for whose facts never spell it out ("What does GECOS stand for?"), asking
  how a thing is done whose facts leave a word of it unsaid, a generic verb ("make", "use") aside
  ("How does NetworkManager choose the transient hostname from a DHCP lease?" answered by "Both
  NetworkManager and systemd-networkd allow this."),
  or asking for a default or a recommendation whose facts never say one with two more of its words
  ("What is the default value of the password warning period?" answered by "An empty field and
  value 0 mean that there are no password warning period.") is a gap, and `low` when every
  question judged is so, else `medium`; so is a question asking how many of a thing whose facts
  count no such thing ("versions 0.6 and later" for "How many keys does the keyring contain?"),
  asking which directory, file or option whose facts name none (no path, file name or option, nor
  the word for one), or asking which program does a thing whose facts name none the question does
  not, doing it ("dpkg(1) will ignore them" for "Which dpkg command lists the conffiles of a
  package?");
- the technical thing a question asks about (a file's path, a package, a command: "Where is the
  backup file of /etc/group kept?") said by no fact together with a word of what it asks of it
  ("/etc/passwd- Backup file for /etc/passwd." says "backup file" of another file; "The file
  /etc/securetty contains the names of terminals" says nothing of "What happens when /etc/securetty
  does not exist?"), or an identifier of a kind ("boot ID") said by no fact in those words: a gap,
  `low` when every question judged is so, else `medium`. A source's path names its thing
  ("man/fstab.5.txt"); capitalized names are the subject rule's;
- the condition a question puts on what it asks ("... if the user has modified it?", "... when
  /etc/nologin exists?") said by no fact (of the technical thing it names, if it names one): the
  facts answer the question without its condition, a gap, `low` when every question judged is so,
  else `medium`;
- corroboration: `high` needs at least half the answered questions backed by two sources (a fact
  the knowledge base found in another source, or verified facts from two sources);
- acceptance criteria of the leaf's task specs: some unmet, `medium`; all unmet, `low`.

Every list cut short (facts beyond what a synthesis reads) is a gap too.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from research_mcp.citations import normalize
from research_mcp.contracts import NOT_ESTABLISHED, UNANSWERED, Confidence, ConfidenceLevel, Fact
from research_mcp.llm.embeddings import english_words
from research_mcp.matching.answer_type import (
    asks_for_count,
    asks_for_date,
    asks_for_email,
    asks_for_expansion,
    asks_for_limit,
    asks_for_manner,
    asks_for_number,
    asks_for_person,
    asks_for_place_or_option,
    asks_for_program,
    asks_for_reason,
    counts,
    credited_roles,
    expands,
    names_place_or_option,
    names_someone,
    number_words,
    program_names,
    qualifiers,
    states_date,
    states_limit,
    states_number,
    states_reason,
)
from research_mcp.matching.boilerplate import EMAIL
from research_mcp.matching.subjects import PROGRAM_KINDS
from research_mcp.matching.terms import STOPWORDS, bears_on, joined_terms, said_terms, same_term, stem, terms
from research_mcp.storage.outputs import AcceptanceCheck

__all__ = [
    "COVERED_EVIDENCE",
    "NEVER_MENTIONED",
    "NOT_ESTABLISHED",
    "STRONG_EVIDENCE",
    "UNANSWERED",
    "Evidence",
    "bears_on",
    "cap_confidence",
    "fact_titles",
    "identifiers",
    "judge_evidence",
    "named_terms",
    "never_mentioned",
    "never_mentioned_cap",
    "one_of_a_kind",
    "same_term",
    "technical",
    "technical_subjects",
    "technical_terms",
]

#: How a leaf's note begins when words its question asks about are in no document of the corpus.
NEVER_MENTIONED = "No document of the corpus mentions "
_NOTE = re.compile(r"^.*?" + NEVER_MENTIONED + r"(?P<words>.*) \(asked: (?P<question>.*)\)$")
_QUOTED_WORD = re.compile(r"'([^']+)'")
STRONG_EVIDENCE = 0.6
COVERED_EVIDENCE = 0.4

_IDENTIFIER = re.compile(r"(?<![\w-])([A-Za-z]{2,})[-\u2010\u2011]?(\d+(?:\.\d+)*)(?![\w.-]*\d)")
_WORD = re.compile(r"[\w'’-]+")
# A version a question names ("man-db 2.0", "bc version 1.07"): a date answers when it was only beside it.
_VERSION = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w.]*\d)")
_VERSIONED = re.compile(r"\d+([a-z]{2,})")
_QUOTED = re.compile(r"[\"“‘]([^\"”’]{2,80})[\"”’]")
_LEVELS: dict[ConfidenceLevel, int] = {"low": 0, "medium": 1, "high": 2}
# A file's path ("/etc/hosts") names what a question is about, which the subject rules judge.
_PATH = re.compile(r"\S*/\S+")
# The technical things a question names (technical_subjects): an absolute file path ("/etc/group",
# "/usr/share/base-passwd"), a word or a dotted or hyphenated name ("debian-archive-keyring.gpg"),
# an identifier of a kind ("boot ID"); a hyphenated name's words are no part of what is asked of it.
_FILE_PATH = re.compile(r"(?<![\w/])/(?:[\w.+-]+/)*[\w.+-]*\w")
_DOTTED_WORD = re.compile(r"[\w'’]+(?:[.-][\w'’]+)*")
_IDENTIFIER_OF_A_KIND = re.compile(r"(?<![\w-])([a-z]{3,})\s+(IDs?|UUIDs?|UIDs?|GIDs?|PIDs?)\b")
_HYPHENATED = re.compile(r"[\w'’.]+(?:-[\w'’.]+)+")
# The one of a kind a question names: "www-data" of "the www-data user", "adduser" of "Who maintains
# the adduser package?", "Linux" of "the Linux kernel", "Debian" of "the Debian project". Kinds whose
# members are named, not described (a field or an option is often described: "the sixth field").
_ONE_OF_A_KIND = re.compile(
    rf"\bthe\s+([A-Za-z][\w.+-]*[\w+])\s+(users?|groups?|accounts?|kernels?|projects?|servers?|{PROGRAM_KINDS})\b"
)
# The kind a technical thing is of, said after it: "the DEBIAN/conffiles file", "the bash package".
_THING_KIND = rf"(?P<kind>{PROGRAM_KINDS}|files?|directory|directories|folders?|options?|fields?|keyrings?|librar(?:y|ies))\b"
# Words that describe the one of a kind rather than name it: "the same package", "the system user".
_DESCRIBING = frozenset(
    [
        "same",
        "other",
        "new",
        "old",
        "default",
        "system",
        "current",
        "binary",
        "source",
        "first",
        "last",
        "next",
        "previous",
        "given",
        "whole",
        "main",
        "real",
        "ordinary",
        "normal",
        "regular",
        "unprivileged",
        "privileged",
        "installed",
        "upstream",
    ]
)
#: A source path's last part without the extensions a rendering adds: "fstab" of "fstab.5.txt".
_TITLED = re.compile(r"\s+\([^()]*\)$")
_RENDERED = re.compile(r"(?:\.\d\w*)?\.(?:txt|md|rst|html?|gz)$")
# What a question asks for, no subject of it: "uid" of "Which uid does base-passwd reserve ...?".
_ASKED_KIND = re.compile(
    r"^\s*(?:which|what)\s+[\w.-]+(?=\s+(?:do|does|did|is|are|was|were|can|could|will|would|should|must|may|has|have)\b)",
    re.IGNORECASE,
)
#: Word endings, "" first: the stems a word may be a form of ("dedicat" of "dedicates").
_ENDINGS = ("", "e", "s", "es", "ed", "d", "ing", "er", "ers", "ion", "ions", "ation")
# Verbs that name no particular action: "How do panels make electricity?" is answered by "Solar
# panels convert sunlight into electricity", a particular one.
_GENERIC_VERBS = frozenset(
    terms("make made do done work get got use used happen go goe take took become come")
)
_ASKED_FOR = {"default": "a default", "recommend": "a recommendation"}
#: A question's terms that ask for a limit and what it measures, not what it is of ("the maximum
#: number of terminals": "terminals"): shadow(5)'s "maximum password age is the number of days" gives
#: no limit of /etc/securetty.
_LIMIT_TERM = re.compile(
    r"maxim\w*|max|minim\w*|min|least|most|limit\w*|number|length|size|count|amount|time"
)
# A condition a question puts on what it asks, after its first word ("When was ...?" asks a date): "if
# the user has modified it", "when /etc/nologin exists".
_CONDITION = re.compile(
    r"(?<=\s)(?:if|when|whenever|unless|once|before|after)\s+(?P<clause>[^?,;]+)", re.IGNORECASE
)
#: Stems that frame a question ("What does its README say about ...", "according to") rather than
#: name what it asks about.
_FRAMING = frozenset({"say", "said", "accord", "mention"})
# A question answered yes or no: "Is the MPL-2.0 compatible with ...?", "Can /etc/securetty ...?".
_YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|does|do|did|can|could|may|must|should|will|would|has|have|had)\b", re.IGNORECASE
)
# Words a question comparing things, or asking of several, is put in.
_COMPARING = re.compile(r"\b(?:and|or|both|either|neither|same|different|than)\b", re.IGNORECASE)


@dataclass
class Evidence:
    """What code found missing in a synthesis's evidence, and the confidence caps it implies."""

    gaps: list[str] = field(default_factory=list)
    caps: list[tuple[ConfidenceLevel, str]] = field(default_factory=list)

    def cap(self, confidence: Confidence) -> Confidence:
        """`confidence` no higher than the lowest cap, the reasoning naming every rule that caps it."""
        if not self.caps:
            return confidence
        level = min((level for level, _ in self.caps), key=_LEVELS.__getitem__)
        why = "; ".join(reason for cap, reason in self.caps if _LEVELS[cap] < _LEVELS[confidence.level])
        return cap_confidence(confidence, level, why)


def never_mentioned(note: str) -> tuple[list[str], str] | None:
    """The words and the question of a note that no document of the corpus mentions them (runs/
    leaf.py writes it: "No document of the corpus mentions 'umask' (asked: <question>)", perhaps
    carried up under a part's title), None for any other text."""
    found = _NOTE.match(note)
    if found is None:
        return None
    return _QUOTED_WORD.findall(found.group("words")), found.group("question")


def never_mentioned_cap(note: str) -> ConfidenceLevel:
    """How far a note that the corpus never mentions some of a question's words caps its confidence:
    `low` when one is a name the question gives (capitalised after its first word, in capitals, an
    identifier joined by "_", "." or "-": "PASS_WARN_AGE", "Australia", or said after a capitalised
    word, which one of it: "bookworm" of "Debian bookworm") or a technical term (a
    word outside common English in every spelling: "noatime", "umask"), the documents being about
    other things; `medium` for a common word ("people", "harbour") or two run together
    ("timeframe", which documents may write "time frame"), which a small folder may answer a
    question without."""
    parsed = never_mentioned(note)
    if parsed is None:
        return "medium"
    words, question = parsed
    later = " ".join(question.split()[1:])
    for word in words:
        joined = any(mark in word for mark in "_.-")
        capitals = word.isupper() and len(word) >= 2
        if (
            joined
            or capitals
            or (technical(word) and not _compound(word))
            or re.search(rf"(?<![\w-]){re.escape(word[:1].upper() + word[1:])}(?![\w-])", later)
            # A word naming which one of a name: "bookworm" of "Debian bookworm".
            or re.search(rf"(?<![\w-])[A-Z][\w-]+\s+{re.escape(word)}(?![\w-])", later)
        ):
            return "low"
    return "medium"


def _compound(word: str) -> bool:
    """Two English words of three letters or more run together: "timeframe", "fakeroot"."""
    english = english_words()
    folded = word.casefold()
    return any(folded[:cut] in english and folded[cut:] in english for cut in range(3, len(folded) - 2))


def technical(word: str) -> bool:
    """A word outside common English (MiniLM's vocabulary) in every spelling the matching knows:
    "noatime", "fakeroot", "ext4"; not "hashing" (its stem "hash" is English) nor a number."""
    if not word.isalnum() or word.isdigit():
        return False
    english = english_words()
    return not any(spelling in english for spelling in {word.casefold(), *terms(word)})


def technical_terms(text: str) -> list[str]:
    """The terms of the technical words of a text ("fakeroot", "dpkg"), in order, once each."""
    return list(dict.fromkeys(terms(" ".join(word for word in _WORD.findall(text) if technical(word)))))


def identifiers(text: str) -> set[str]:
    """The identifiers a text names: letters joined to a number ("GPL-3", "GPT-4", "COVID-19"),
    folded ("gpl3")."""
    return {f"{letters}{digits}".casefold() for letters, digits in _IDENTIFIER.findall(text)}


def named_terms(question: str) -> list[str]:
    """What a question names: its capitalized words but the first ("What does the Protected field
    of a dpkg package do?": "Protected") and its quoted phrases, as content terms, in order."""
    quoted = " ".join(_QUOTED.findall(question))
    words = _WORD.findall(_QUOTED.sub(" ", question))
    named = " ".join(word for word in words[1:] if word[:1].isupper() and word != "I")
    # A bare number ("3" of "GPL-3") is the identifiers rule's to judge, with the name it is joined to.
    return list(dict.fromkeys(term for term in terms(f"{named} {quoted}") if not term.isdigit()))


def judge_evidence(
    questions: Sequence[str],
    facts: Sequence[Fact],
    *,
    in_scope: int,
    read: int,
    acceptance: Sequence[AcceptanceCheck] = (),
    titles: Mapping[int, str] | None = None,
    cited_in: Mapping[int, Collection[int]] | None = None,
) -> Evidence:
    """The gaps and caps of a synthesis given `facts` (`read` of the `in_scope` facts were given);
    `titles`, the titles of their sources by id; `cited_in`, every source a fact was found in by its
    id (a line several files share, merged into one fact: zlib's licence, which zstd's copyright file
    quotes, is zlib's whichever file's extraction stored it first)."""
    titles = fact_titles(facts, titles or {}, cited_in or {})
    evidence = Evidence()
    asked = list(dict.fromkeys(q for q in questions if q.strip()))
    verified = [fact for fact in facts if fact.verified]
    by_question: dict[str, list[Fact]] = {}
    for fact in verified:
        if fact.question:
            by_question.setdefault(normalize(fact.question), []).append(fact)
    # Judged only where facts were extracted for these questions (task specs may ask others).
    judged = [q for q in asked if normalize(q) in by_question]
    unanswered = [q for q in asked if normalize(q) not in by_question] if judged else []
    evidence.gaps += [f"{UNANSWERED}{q}"[:500] for q in unanswered]
    if in_scope > read:
        evidence.gaps.append(
            f"Cut short: {in_scope - read} of {in_scope} facts in scope were not given to the "
            f"synthesis (at most {read}; the least verified and corroborated were left out)"
        )
    if not verified:
        evidence.caps.append(("low", "no verified fact in its input"))
        return evidence
    if unanswered:
        share = f"{len(unanswered)} of {len(asked)} questions without a verified fact"
        evidence.caps.append(("low" if len(unanswered) * 2 > len(asked) else "medium", share))
    # Every fact found for each judged question; `groups` narrows its copies to those bearing on it.
    extracted = [by_question[normalize(q)] for q in judged]
    groups = [list(facts) for facts in extracted] or [verified]
    _judge_identifiers(evidence, judged, groups, titles)
    # Strength and corroboration are judged on the facts that bear on the question: a licence's
    # boilerplate repeated in ten files corroborates nothing it asks.
    off_topic = _keep_bearing(judged, groups, titles)
    _judge_subjects(evidence, judged, extracted, titles)
    _judge_unsaid(evidence, judged, extracted, titles)
    _judge_kind(evidence, judged, groups, extracted, titles)
    _judge_together(evidence, judged, extracted, titles)
    _judge_named_together(evidence, judged, extracted, titles)
    _judge_condition(evidence, judged, extracted, titles)
    _judge_relation(evidence, judged, extracted, titles)
    if off_topic:
        evidence.caps.append(
            (
                "medium",
                f"no fact found for {len(off_topic)} question(s) shares two terms with it: {off_topic[0][:120]!r}",
            )
        )
    _judge_strength(evidence, groups)
    unmet = [check for check in acceptance if check.met is False]
    if unmet:
        level: ConfidenceLevel = "low" if len(unmet) == len(acceptance) else "medium"
        evidence.caps.append((level, f"{len(unmet)} of {len(acceptance)} acceptance criteria unmet"))
    return evidence


def fact_titles(
    facts: Sequence[Fact], titles: Mapping[int, str], cited_in: Mapping[int, Collection[int]]
) -> dict[int, str]:
    """The titles of the sources each fact was found in, by fact id, its own source's first, one a
    line: what the rules below read as the sources' titles."""
    return {
        fact.id: "\n".join(
            dict.fromkeys(
                titles[source] for source in [fact.source_id, *cited_in.get(fact.id, ())] if source in titles
            )
        )
        for fact in facts
    }


def _said(fact: Fact, titles: Mapping[int, str]) -> str:
    return f"{fact.statement} {fact.quote} {titles.get(fact.id, '')}"


def _said_terms(facts: Sequence[Fact], titles: Mapping[int, str], question: str = "") -> set[str]:
    """The terms `facts` say, a name after a version number as well ("4.0BSD" says "BSD"), and those
    of `question` they spell as one word or two the other way ("user name" by "username")."""
    text = " ".join(_said(f, titles) for f in facts)
    said = set(terms(text))
    said |= {match.group(1) for term in said if (match := _VERSIONED.fullmatch(term))}
    return said | joined_terms(question, text) if question else said


def _judge_identifiers(
    evidence: Evidence, judged: list[str], groups: list[list[Fact]], titles: Mapping[int, str]
) -> None:
    """A question naming a thing by an identifier ("GPL-3", "GPT-4") is judged on the facts naming
    it (`groups` narrowed to them); none does: `medium` at most."""
    unnamed = []
    for position, question in enumerate(judged):
        names = identifiers(question)
        if not names:
            continue
        about = [f for f in groups[position] if names & identifiers(_said(f, titles))]
        if about:
            groups[position] = about
        else:
            unnamed.append((question, sorted(names)))
    if unnamed:
        first, named = unnamed[0]
        what = f"({', '.join(named)}): {first[:120]!r}"
        evidence.caps.append(
            ("medium", f"no fact found for {len(unnamed)} question(s) names what it asks about {what}")
        )


def _keep_bearing(judged: list[str], groups: list[list[Fact]], titles: Mapping[int, str]) -> list[str]:
    """`groups` narrowed to the facts sharing two terms with their question, one of them perhaps
    said by the fact's source title ("This is the new version (1.47.0) ..." of doc/e2fsprogs/README
    bears on "Which version of e2fsprogs does its README describe?"); the questions none does."""
    off_topic = []
    for position, question in enumerate(judged):
        asked = terms(question)
        bearing = [
            f
            for f in groups[position]
            if bears_on(f"{f.statement} {f.quote}", question)
            or (
                said_terms(asked, set(terms(f"{f.statement} {f.quote}")))
                and bears_on(_said(f, titles), question)
            )
        ]
        if bearing:
            groups[position] = bearing
        else:
            off_topic.append(question)
    return off_topic


def _judge_subjects(
    evidence: Evidence, judged: list[str], extracted: list[list[Fact]], titles: Mapping[int, str]
) -> None:
    """The subject a question names (its names, and its technical terms: "Which licence is fakeroot
    distributed under?"), missing from all the facts extracted for it and their sources' titles:
    they answer something else."""
    elsewhere = []
    for question, facts in zip(judged, extracted, strict=True):
        said = _said_terms(facts, titles, question)
        technical_words = technical_terms(question)
        # A technical term said within a longer name counts: "zstd" by "doc/libzstd1/copyright".
        within = [t for t in technical_words if _within(t, said)]
        # Each kind judged apart: "dpkg" said does not make up for "Protected" unsaid.
        folders = _source_folders(facts, titles)
        # "GNU bc" is said by a fact of doc/bc/README: the name it qualifies is its source's folder.
        qualifying = [
            term
            for word, after in itertools.pairwise(_WORD.findall(question))
            if word[:1].isupper() and after.casefold() in folders
            for term in terms(word)
        ]
        for named in (named_terms(question), technical_words):
            mentioned = [*said_terms(named, said), *within, *qualifying]
            missing = [term for term in named if term not in mentioned]
            if len(missing) * 2 > len(named):  # most of what it names: "README" may go unsaid, "LibYAML" not
                elsewhere.append((question, missing))
                break
    _not_established_apart(evidence, judged, elsewhere, "mentions what it names")


def _source_folders(facts: Sequence[Fact], titles: Mapping[int, str]) -> set[str]:
    """The folders of the facts' sources' paths ("bc" of "doc/bc/README (README)")."""
    return {folder for fact in facts for parts in _paths_parts(fact, titles) for folder in parts[:-1]}


def _paths_parts(fact: Fact, titles: Mapping[int, str]) -> list[list[str]]:
    """The parts of the paths of the sources a fact was found in, lower-cased: a run titles a corpus
    source "path (title)" ("doc/bash/copyright (copyright)")."""
    return [_TITLED.sub("", title).casefold().split("/") for title in titles.get(fact.id, "").split("\n")]


def _judge_unsaid(
    evidence: Evidence, judged: list[str], extracted: list[list[Fact]], titles: Mapping[int, str]
) -> None:
    """A question most of whose terms none of its facts says: they answer something else."""
    unsaid = []
    for question, facts in zip(judged, extracted, strict=True):
        named = named_terms(question)
        if len(named) >= 2 and len(said_terms(named, _said_terms(facts, titles, question))) == len(named):
            continue  # on the very things it names: what is unsaid is how they relate
        missing = _unsaid_terms(question, facts, titles)
        if len(missing) * 2 > len(_asked_terms(question)):
            unsaid.append((question, missing))
    if unsaid:
        first, missing = unsaid[0]
        why = (
            f"most terms of {len(unsaid)} question(s) said by no fact extracted for it ({', '.join(missing)})"
        )
        _not_established(evidence, judged, [question for question, _ in unsaid], f"{why}: {first[:120]!r}")


def _judge_kind(
    evidence: Evidence,
    judged: list[str],
    groups: list[list[Fact]],
    extracted: list[list[Fact]],
    titles: Mapping[int, str],
) -> None:
    """A question asking for a quantity, a date or a version that no fact on it states a number for,
    asking why that none gives a reason for, asking who that none names anyone for, asking how a
    thing is done that leaves a word of it unsaid, or asking for a default (or a recommendation) that
    none says is one, has not been answered, however well its facts match its words. A number or a
    reason is looked for in the facts bearing on the question (`groups`); a name, the words of a
    how-question and a default in every fact extracted for it (`extracted`): "Author: Philip A.
    Nelson" shares one word with "Who is the author of GNU bc?" and answers it."""
    unmet = []
    for position, question in enumerate(judged):
        said = [f"{f.statement} {f.quote}" for f in groups[position]]
        if asks_for_number(question) and not any(states_number(text) for text in said):
            unmet.append((question, "asking how many, how long, when or which version states a number"))
        elif (things := asks_for_count(question)) and not any(counts(text, things) for text in said):
            unmet.append((question, f"asking how many {things} counts them"))
        elif (kind := asks_for_place_or_option(question)) and not any(
            names_place_or_option(text, kind, question) for text in said
        ):
            unmet.append((question, f"asking which {kind} names one"))
        elif (action := asks_for_program(question)) is not None and not any(
            _names_program(text, question, action) for text in said
        ):
            unmet.append((question, "asking which program does a thing names one doing it"))
        elif asks_for_date(question) and not any(
            states_date(text) and all(_says_version(text, version) for version in _VERSION.findall(question))
            for text in said
        ):
            unmet.append((question, "asking when states a date"))
        elif (short := asks_for_expansion(question)) and not any(
            expands(f.quote, short) for f in extracted[position]
        ):
            unmet.append((question, f"asking what {short} stands for spells it out"))
        elif asks_for_reason(question) and not any(
            states_reason(f"{f.statement} {f.quote}") and _says_named(question, f, titles)
            for f in groups[position]
        ):
            unmet.append((question, "asking why gives a reason, of what it names"))
        elif asks_for_email(question) and not any(EMAIL.search(text) for text in said):
            unmet.append((question, "asking for an e-mail address gives one"))
        elif asks_for_person(question) and not any(
            names_someone(f.quote, question) and _gives_role(f.quote, question) for f in extracted[position]
        ):
            unmet.append((question, "asking who names anyone in the part it asks about"))
        elif asks_for_manner(question) and (
            unsaid := [
                term
                for term in _unsaid_terms(_PATH.sub(" ", question), extracted[position], titles)
                if term not in _GENERIC_VERBS
            ]
        ):
            unmet.append((question, f"asking how says what it asks about ({', '.join(unsaid)})"))
        elif (side := asks_for_limit(question)) and not _limited(question, side, extracted[position]):
            unmet.append((question, f"asking for a {side} says one"))
        elif missing := _unqualified(question, extracted[position], titles):
            unmet.append((question, f"asking for {_ASKED_FOR[missing[0]]} says what it is"))
    if unmet:
        first, kind = unmet[0]
        why = f"no verified fact for {len(unmet)} question(s) {kind}: {first[:120]!r}"
        _not_established(evidence, judged, [question for question, _ in unmet], why)


def _names_program(text: str, question: str, action: str) -> bool:
    """Whether a text names a program a question does not, saying the thing the question asks it to
    do (`action`, a stem): "are displayed by pam_motd(8)" for "Which PAM module displays /etc/motd
    after a login?"; "dpkg(1) will ignore them" names none for "Which dpkg command lists the
    conffiles of a package?", and "dpkg-deb(1) will not accept building ..." another's doing."""
    asked = set(terms(question))
    if not any(not set(terms(name)) <= asked for name in program_names(text)):
        return False
    return not action or any(same_term(action, stem(word)) for word in _WORD.findall(text.casefold()))


def _says_named(question: str, fact: Fact, titles: Mapping[int, str]) -> bool:
    """Whether a fact says every name a question gives (in its words or its sources' titles) and a
    word of what it asks of them: LGPL-2.1's "hence the version number 2.1" gives a reason, not one
    of the Artistic License's; the Artistic License's "The intent of this document is to state the
    conditions ..., such that ..." gives one of the licence, not of its replacement."""
    named = named_terms(question)
    said = _said_terms([fact], titles, question)
    rest = [term for term in _asked_terms(question) if term not in named]
    return len(said_terms(named, said)) == len(named) and bool(not rest or said_terms(rest, said))


def _gives_role(text: str, question: str) -> bool:
    """Whether a text gives the part a question asks someone had, if it asks one: "Who wrote the first
    version of GNU bash?" is not answered by a line naming the GNU General Public License, nor by a
    packager's."""
    asked = credited_roles(question)
    return not asked or bool(asked & credited_roles(text))


def _says_version(text: str, version: str) -> bool:
    """Whether a text says this version number: "2.0" in "man-db 2.0 (4 March 1994)", not in "12.0"."""
    return bool(re.search(rf"(?<![\d.]){re.escape(version)}(?![\d]|\.\d)", text))


def _judge_together(
    evidence: Evidence, judged: list[str], extracted: list[list[Fact]], titles: Mapping[int, str]
) -> None:
    """A question about a technical thing (a file's path, a package, a command: "Where is the backup
    file of /etc/group kept?") none of whose facts says the thing together with what is asked of it
    has been answered about something else: "/etc/passwd- Backup file for /etc/passwd." says
    "backup file", of another file. One asking nothing but of its things ("Which shell does
    /etc/shells list for the root user?": "shell" is a word of the file) is answered by a fact
    naming a technical thing together with every one of a kind it names."""
    apart = []
    for question, facts in zip(judged, extracted, strict=True):
        things = technical_subjects(question)
        ones = one_of_a_kind(question)
        if not things and not ones:
            continue
        named = set(terms(" ".join([*things, *ones])))
        kinds = set(terms(" ".join(kind for _, kind in _ONE_OF_A_KIND.findall(question))))
        kinds |= set(terms(" ".join(_described(question, things))))
        # What is asked of the thing: its other words, but those asking for a number ("How long"), the
        # words of a hyphenated name ("base-files", no technical thing by its words) and the kind of
        # one named ("package" of "the adduser package").
        number = number_words(question)
        rest = _HYPHENATED.sub(" ", _PATH.sub(" ", question.replace(number, " ", 1) if number else question))
        asked = [t for t in _asked_terms(rest) if t not in named | kinds and t not in _GENERIC_VERBS]
        if asks_for_limit(question):  # "the maximum length of": the limit rule judges those words
            asked = [t for t in asked if not _LIMIT_TERM.fullmatch(t)]
        if not asked:
            if (
                things
                and ones
                and not any(
                    any(_names(t, f, titles) for t in things)
                    and all(_names_one(one, f, titles) for one in ones)
                    for f in facts
                )
            ):
                apart.append((question, list(dict.fromkeys([*things, *ones]))))
            continue
        # Any technical thing will do ("the nofail option to an fstab entry" is answered of nofail);
        # each one of a kind named must be ("the apache user", not base-passwd's uid ranges).
        said = [(fact, bool(said_terms(asked, _said_terms([fact], titles, question)))) for fact in facts]
        if (things and not any(_names(t, f, titles) for t in things for f, says in said if says)) or not all(
            any(_names_one(one, f, titles) for f, says in said if says) for one in ones
        ):
            apart.append((question, list(dict.fromkeys([*things, *ones]))))
    _not_established_apart(evidence, judged, apart, "says what it asks together with what it asks it of")


def _judge_named_together(
    evidence: Evidence, judged: list[str], extracted: list[list[Fact]], titles: Mapping[int, str]
) -> None:
    """A question naming a thing by its name and a technical thing ("Which PAM module reads
    /etc/hostname at boot?") is answered by a fact that says both, not by one saying the name of
    another file ("The contents of /etc/motd are displayed by pam_motd(8)") beside one saying the
    file ("The /etc/hostname file configures the name of the local system.")."""
    apart = []
    for question, facts in zip(judged, extracted, strict=True):
        things = technical_subjects(question)
        named = [term for term in named_terms(question) if not any(term in terms(thing) for thing in things)]
        if not things or not named:
            continue
        if not any(
            any(_names(thing, fact, titles) for thing in things)
            and said_terms(named, _said_terms([fact], titles, question))
            for fact in facts
        ):
            apart.append((question, [*named, *things]))
    _not_established_apart(evidence, judged, apart, "names what it names together")


def _judge_condition(
    evidence: Evidence, judged: list[str], extracted: list[list[Fact]], titles: Mapping[int, str]
) -> None:
    """A question putting a condition on what it asks ("What happens to a conffile flagged
    remove-on-upgrade if the user has modified it?") is answered by a fact that says a word of the
    condition, of the technical thing the question names if it names one: "to mark that a conffile
    needs to be removed on the next upgrade" says what the flag does, not what happens to a file the
    user changed; "If the file /etc/nologin exists ..." answers "What happens to the logins of users
    other than root when /etc/nologin exists?". So is one asking what held before or after an event
    ("Which licence did dpkg use before it moved to GPL-2+?"): "License: GPL-2+" says what it moved
    to, not what it used before."""
    apart = []
    for question, facts in zip(judged, extracted, strict=True):
        found = _CONDITION.search(question)
        if found is None:
            continue
        things = technical_subjects(question)
        # The things it names, a name among them: "before it moved to GPL-2+" is said by "moved", not
        # by the licence it moved to.
        named = set(terms(" ".join(things))) | set(named_terms(question))
        condition = [
            term
            for term in _asked_terms(_PATH.sub(" ", found.group("clause")))
            if term not in named and term not in _GENERIC_VERBS
        ]
        if condition and not any(
            said_terms(condition, _said_terms([fact], titles, question))
            and (not things or any(_names(thing, fact, titles) for thing in things))
            for fact in facts
        ):
            apart.append((question, condition))
    _not_established_apart(evidence, judged, apart, "says the condition it asks under")


def _judge_relation(
    evidence: Evidence, judged: list[str], extracted: list[list[Fact]], titles: Mapping[int, str]
) -> None:
    """A yes-or-no question of what it names ("Is the MPL-2.0 compatible with the Apache License
    2.0?") is answered by a fact saying at least half of what it asks of them, of one of them: the
    MPL's own notice and the Apache License's appendix, each naming its licence, say nothing of being
    compatible. Not one comparing things ("Are dpkg and bash distributed under the same ...?"): each
    item's fact answers for it alone."""
    apart = []
    for question, facts in zip(judged, extracted, strict=True):
        if not _YES_NO.match(question) or _COMPARING.search(question):
            continue
        things = technical_subjects(question)
        names = named_terms(question)
        subject = set(terms(" ".join([*things, *names, *identifiers(question)])))
        asked = [
            t for t in _asked_terms(_PATH.sub(" ", question)) if t not in subject and t not in _GENERIC_VERBS
        ]
        if not asked or not (things or names or identifiers(question)):
            continue
        if not any(
            2 * len(said_terms(asked, said := _said_terms([fact], titles, question))) >= len(asked)
            and (any(_names(thing, fact, titles) for thing in things) or bool(said_terms(names, said)))
            for fact in facts
        ):
            apart.append((question, asked))
    _not_established_apart(evidence, judged, apart, "says what it asks of what it names")


def _described(question: str, things: Sequence[str]) -> list[str]:
    """The words that say which thing a technical thing is, not what is asked of it: whose it is, its
    kind ("a package's" and "file" of "Does a package's DEBIAN/conffiles file allow comment
    lines?") and what of it is meant ("keys" of "the keys of debian-archive-keyring")."""
    words = []
    for thing in things:
        for match in re.finditer(
            rf"(?:\b([\w-]+)['’]s\s+)?(?<![\w.-])(?:[\w.-]*/)*{re.escape(thing.lstrip('/'))}(?![\w-])"
            rf"(?:\s+{_THING_KIND})?",
            question,
            re.IGNORECASE,
        ):
            words += [word for word in (match.group(1), match.group("kind")) if word]
        words += re.findall(
            rf"\b([\w-]+)\s+of\s+(?:the\s+|an?\s+)?(?:[\w.-]*/)*{re.escape(thing.lstrip('/'))}(?![\w-])",
            question,
            re.IGNORECASE,
        )
    return words


def _not_established_apart(
    evidence: Evidence, judged: list[str], apart: list[tuple[str, list[str]]], fails: str
) -> None:
    """`apart`'s questions (each with what its facts leave out) not established: no verified fact
    for them `fails` ("mentions what it names"), the first named in the reason."""
    if apart:
        first, what = apart[0]
        why = f"no verified fact for {len(apart)} question(s) {fails} ({', '.join(what)}): {first[:120]!r}"
        _not_established(evidence, judged, [question for question, _ in apart], why)


def _not_established(evidence: Evidence, judged: list[str], questions: list[str], why: str) -> None:
    """`questions` (of those `judged`) are gaps, not established by their facts for the reason `why`:
    confidence `low` when every question judged is so, else `medium`."""
    gaps = [f"{NOT_ESTABLISHED}{question}"[:500] for question in questions]
    evidence.gaps += [gap for gap in dict.fromkeys(gaps) if gap not in evidence.gaps]
    evidence.caps.append(("low" if len(questions) == len(judged) else "medium", why))


def technical_subjects(question: str) -> list[str]:
    """The technical things a question names, in order: file paths ("/etc/group"), an identifier of
    a kind ("boot ID", "user ID": which one, among those documents list side by side), names with a
    technical part, a digit, a dot or an underscore ("grsec-tpe", "fs_passno"; not "well-known") and
    technical words ("securetty"), these in lower case (a capitalized name, "GPL-3", is the subject
    and identifier rules' to judge)."""
    things = [match.strip(".,;:?!") for match in _FILE_PATH.findall(question)]
    # An identifier a word in lower case says which of its kind: "boot ID", not "machine ID".
    things += [
        f"{word} {short}" for word, short in _IDENTIFIER_OF_A_KIND.findall(question) if word not in STOPWORDS
    ]
    # What is asked for is no subject: "uid" of "Which uid does base-passwd reserve for ...?".
    rest = _ASKED_KIND.sub(" ", _FILE_PATH.sub(" ", question))
    for word in _DOTTED_WORD.findall(rest):
        parts = [part for part in re.split(r"[-.]", word) if part]
        if not word[:1].islower() or max(len(part) for part in parts) < 3:  # "e.g"
            continue
        if len(parts) > 1 or "_" in word:
            if re.search(r"[._\d]", word) or any(technical(part) for part in parts):
                things.append(word)
        elif technical(word) and not _compound(word) and not _inflected(word):
            things.append(word)
    return list(dict.fromkeys(things))


def one_of_a_kind(question: str) -> list[str]:
    """The names a question gives one of a kind, in order: "www-data" of "Which group does base-passwd
    give the www-data user?", "adduser" of "Who maintains the adduser package?"; not a word that
    describes it ("the same package")."""
    names = [name for name, _ in _ONE_OF_A_KIND.findall(question)]
    return list(dict.fromkeys(name for name in names if name not in STOPWORDS | _DESCRIBING))


def _names_one(name: str, fact: Fact, titles: Mapping[int, str]) -> bool:
    """Whether a fact names one of a kind: the name as a word of its own ("adduser(8)", not the file
    "adduser.conf"), or a part of its source's path ("doc/bash/copyright" names bash, and
    "man/adduser.conf.5.txt" the file adduser.conf, not adduser)."""
    text = f"{fact.statement} {fact.quote}".casefold()
    name = name.casefold()
    if re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w-]|\.\w)", text):
        return True
    return any(name in {*parts[:-1], _RENDERED.sub("", parts[-1])} for parts in _paths_parts(fact, titles))


def _inflected(word: str) -> bool:
    """A form of an English word MiniLM's vocabulary holds in another form only: "dedicates"
    ("dedicated"), "narrating" ("narrated"); not "securetty" nor "nofail"."""
    english = english_words()
    folded = word.casefold()
    stems = {folded[: len(folded) - len(end)] for end in _ENDINGS if folded.endswith(end)}
    return any(
        f"{stem}{end}" in english
        for stem in stems
        if len(stem) >= 4
        for end in _ENDINGS
        if f"{stem}{end}" != folded
    )


def _names(thing: str, fact: Fact, titles: Mapping[int, str]) -> bool:
    """Whether a fact names a technical thing: in its words (a file by its path, or by its name when
    that is technical: "securetty"; "boot ID" by those words together), or in its source's title
    ("man/fstab.5.txt" names fstab)."""
    text = f"{fact.statement} {fact.quote}".casefold()
    title = titles.get(fact.id, "").casefold()
    thing = thing.casefold()
    if thing.startswith("/"):
        name = thing.rstrip("/").rsplit("/", 1)[-1]
        return (
            thing in text
            or bool(name and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", title))
            or (technical(name) and bool(re.search(rf"(?<![\w/-]){re.escape(name)}(?![\w-])", text)))
        )
    if " " in thing:  # "boot ID": the words together; "machine ID" and "boot" apart are not it
        return bool(re.search(r"\b" + r"[\s-]+".join(map(re.escape, thing.split())) + r"\b", text))
    if "." in thing:  # a file's name, "login.defs": whole; "login" alone is another thing
        return thing in text or thing in title
    said = terms(f"{text} {title}")
    return (
        thing in text
        or thing in title
        or any(_within(term, said) or any(same_term(term, other) for other in said) for term in terms(thing))
    )


def _within(term: str, said: Collection[str]) -> bool:
    """A technical term said within a longer one, four letters or more: "zstd" by "libzstd1"."""
    return len(term) >= 4 and any(term in other for other in said)


def _unsaid_terms(question: str, facts: list[Fact], titles: Mapping[int, str]) -> list[str]:
    """The terms of a question (numbers and framing words aside) none of `facts` says."""
    said = _said_terms(facts, titles, question)
    return [term for term in _asked_terms(question) if term not in said_terms([term], said)]


def _asked_terms(question: str) -> list[str]:
    """A question's terms, once each, numbers and framing words ("say", "according") aside."""
    return [t for t in dict.fromkeys(terms(question)) if not t.isdigit() and t not in _FRAMING]


def _limited(question: str, side: str, facts: list[Fact]) -> bool:
    """Whether a fact says, in its own words, a limit of the side asked together with what the limit
    is of (a word of the question but its paths, which a page's title says of every line on it):
    "The hostname should be composed of up to 64 ... characters" gives the most a hostname may be,
    not the least; bc's "The timetest step takes a minimum of 10 minutes" not how long it takes at
    most; login.defs(5)'s "it may be a maximum of 32 bytes" (a user name) not the longest line of
    /etc/login.defs."""
    asked = [term for term in terms(_PATH.sub(" ", question)) if not _LIMIT_TERM.fullmatch(term)]
    return any(
        states_limit(f"{fact.statement} {fact.quote}", side)
        and said_terms(asked, _said_terms([fact], {}, question))
        for fact in facts
    )


def _unqualified(question: str, facts: list[Fact], titles: Mapping[int, str]) -> list[str]:
    """The qualifiers of a question ("default") no fact says with two more of its terms: "Changes in
    the default files are not important enough to warn the user" does not say what is the default
    of a password warning period."""
    asked = terms(question)
    missing = []
    for word in qualifiers(asked):
        others = [term for term in asked if term != word]
        if not any(
            word in (said := _said_terms([fact], titles, question)) and len(said_terms(others, said)) >= 2
            for fact in facts
        ):
            missing.append(word)
    return missing


def _judge_strength(evidence: Evidence, groups: list[list[Fact]]) -> None:
    """Caps by each question's best evidence on average, and by how many are backed by two sources."""
    best = [max(fact.confidence for fact in group) for group in groups]
    strength = sum(best) / len(best)
    if strength < COVERED_EVIDENCE:
        evidence.caps.append(
            ("low", f"best evidence per question {strength:.2f} on average, under {COVERED_EVIDENCE}")
        )
    elif strength < STRONG_EVIDENCE:
        evidence.caps.append(
            ("medium", f"best evidence per question {strength:.2f} on average, under {STRONG_EVIDENCE}")
        )
    corroborated = sum(
        1
        for group in groups
        if any(fact.corroborations > 1 for fact in group) or len({fact.source_id for fact in group}) > 1
    )
    if corroborated * 2 < len(groups):
        evidence.caps.append(
            ("medium", f"{corroborated} of {len(groups)} answered questions backed by two or more sources")
        )


def cap_confidence(confidence: Confidence, cap: ConfidenceLevel, why: str) -> Confidence:
    """`confidence` no higher than `cap`; when lowered, the reasoning says to what and why."""
    if _LEVELS[confidence.level] <= _LEVELS[cap]:
        return confidence
    reasoning = (
        f"Capped at {cap} by code ({why}); the synthesis said {confidence.level}: {confidence.reasoning}"
    )
    return Confidence(level=cap, reasoning=reasoning[:1000])

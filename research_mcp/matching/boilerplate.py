"""Text that is never a finding: what surrounds a document's content rather than saying anything.

Copyright and contact lines, licence preambles and version banners, bare URLs, man-page headers and
footers, headings standing alone, and the "(link removed)" marks the fetcher leaves. A sentence that
merely mentions copyright ("must retain the above copyright notice") says something, and is kept.
"""

from __future__ import annotations

import re

__all__ = ["EMAIL", "URL", "is_boilerplate", "is_credit", "is_run_in_heading"]

_SPACE = re.compile(r"\s+")
#: An e-mail address, perhaps in angle brackets: "<doko@debian.org>".
EMAIL = re.compile(r"<?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>?")
#: A web address: "https://www.gnu.org/licenses/", "<www.zlib.net>".
URL = re.compile(r"<?(?:https?|ftp)://\S+|<?www\.\S+")
_COPYRIGHT = re.compile(r"^(?:copyright\b|\(c\)|©|all rights reserved)", re.IGNORECASE)
# A field naming a person ("Author: Philip A. Nelson") says who wrote a thing; with an address it is
# a contact line, which the e-mail rule takes.
_FIELD = re.compile(
    r"^(?:upstream-(?:name|contact)|source|format|files(?:-excluded)?|maintainer|e-?mail|"
    r"homepage|bugs?|comment)\s*:",
    re.IGNORECASE,
)
# A Debian copyright file's "License: BSD-3-clause or GPL-2" field answers what a package is under,
# a README's "Author: Philip A. Nelson" who wrote it: fields, not headings.
_NAMING_FIELD = re.compile(r"^(?:licen[cs]e|author)\s*:\s*\S", re.IGNORECASE)
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_VERSION_BANNER = re.compile(
    rf"^(?:[A-Z][\w.-]*\s+){{0,6}}version\s+[\d.]+,?\s+(?:\d{{1,2}}\s+)?{_MONTH}\s+(?:\d{{1,2}},?\s+)?\d{{4}}",
    re.IGNORECASE,
)
_PREAMBLE = re.compile(
    r"everyone is permitted to copy and distribute verbatim copies of this license document"
    r"|terms and conditions for use, reproduction,? and distribution"
    r"|^end of terms and conditions|^how to apply these terms"
    # The notice a licence asks to be put in each file, quoted in its own appendix.
    r"|you may not use this file except in compliance with the license"
    r"|^you may obtain a copy of the license at"
    r"|^see the license for the specific language governing permissions"
    r"|^to apply the [\w ]{2,40} license to your work"
    r"|^see the [\w ]{2,60} for more details\.?$",
    re.IGNORECASE,
)
# The fields of a copyright file or a README that say who answers for a thing.
_CONTACT_FIELD = re.compile(r"^(?:upstream-contact|maintainer|e-?mail|bugs?)\s*:\s*\S", re.IGNORECASE)
_MAN_PAGE = re.compile(r"[\w.:+-]+\(\d\w*\)")
_RELEASE = re.compile(r"(?<![\w(])\d+(?:\.\d+)*(?![\w)])")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{2}/\d{2}/\d{4}\b|\b(?:19|20)\d{2}\b")
_WORD = re.compile(r"[^\W_][\w'’-]*")
_VERBS = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "must",
        "may",
        "might",
        "shall",
        "should",
        "will",
        "would",
        "can",
        "could",
        "does",
        "do",
        "did",
        "means",
        "mean",
        "need",
        "needs",
        "contains",
        "contain",
        "describes",
        "describe",
        "allows",
        "allow",
    ]
)
_LINK_REMOVED = "(link removed)"
# A title between rulers: "-------- Original comp.sources.reviewed README --------".
_RULED = re.compile(r"^[-=*#~_]{3,}.{0,80}?[-=*#~_]{3,}$")
#: Words beside an e-mail address up to which a line is a contact line, not a statement.
MAX_CONTACT_WORDS = 16
#: Words after a line's last e-mail address from which it says something of its own.
MIN_WORDS_AFTER_ADDRESS = 5


def is_boilerplate(text: str) -> bool:
    """Whether a quoted sentence is document furniture rather than something a source says."""
    text = _SPACE.sub(" ", text).strip()
    if not text:
        return True
    rest = _SPACE.sub(" ", URL.sub(" ", EMAIL.sub(" ", text.replace(_LINK_REMOVED, " ")))).strip(
        " .,;:()[]<>-"
    )
    words = _WORD.findall(rest)
    if len(words) < 3 and (len(rest) < len(text) or not words):
        return True  # a bare URL or address, or a line left with almost nothing once they are gone
    if all("/" in token for token in text.split()):
        return True  # file names alone: a man page's SYNOPSIS or FILES line ("/etc/machine-id")
    if _COPYRIGHT.match(text) or _FIELD.match(text) or _PREAMBLE.search(text) or _RULED.match(text):
        return True
    if _VERSION_BANNER.match(text) and len(words) <= 12:
        return True
    if _man_page_furniture(text, words):
        return True
    if EMAIL.search(text) and len(words) <= MAX_CONTACT_WORDS and not _says_after_address(text):
        return True  # "Jean-loup Gailly <jloup@gzip.org>", "packaged by X <x@debian.org>"
    return not _NAMING_FIELD.match(text) and _lone_heading(text, words)


def _says_after_address(text: str) -> bool:
    """Whether a line goes on past its last e-mail address to say what someone did: "Changes by Ben
    Collins <bcollins@debian.org>, added --chuid, --background and --make-pidfile options, ..." is a
    statement; "This package was put together by Matthias Klose <doko@debian.org>." a credit."""
    last = list(EMAIL.finditer(text))[-1]
    return len(_WORD.findall(URL.sub(" ", text[last.end() :]))) >= MIN_WORDS_AFTER_ADDRESS


def is_credit(text: str) -> bool:
    """Whether boilerplate says who wrote, packaged or answers for a thing: a contact line ("This
    package was put together by Matthias Klose <doko@debian.org>.", "please contact Ted Ts'o at
    tytso@mit.edu") or a contact field ("Upstream-Contact: chet@po.cwru.edu"). Never a finding of
    what a thing is or does, it is the answer to a question asking who (the extractor gives it to
    those only). Not a copyright line: which files a holder holds is said by the lines around it."""
    if not is_boilerplate(text):
        return False
    text = _SPACE.sub(" ", text).strip()
    if _COPYRIGHT.match(text) or not re.search(r"[A-Za-z]{2}", EMAIL.sub(" ", text)):
        return False
    return bool(EMAIL.search(text) or _CONTACT_FIELD.match(text))


def is_run_in_heading(text: str) -> bool:
    """Whether a sentence is a short title ("Grant of Patent License.", "1. Definitions.")."""
    text = _SPACE.sub(" ", text).strip()
    return bool(text) and _lone_heading(text, _WORD.findall(text))


def _man_page_furniture(text: str, words: list[str]) -> bool:
    """ "FSTAB(5) File formats FSTAB(5)", "util-linux 2.38.1 2022-05-11 FSTAB(5)", "systemd 252
    MACHINE-ID(5)", a SEE ALSO list."""
    pages = _MAN_PAGE.findall(text)
    if len(pages) >= 2 and len(_WORD.findall(_MAN_PAGE.sub(" ", text))) < 3:
        return True  # a SEE ALSO list: "systemd(1), sethostname(2), hostname(1),"
    if not pages or len(words) > 12:
        return False
    if len(pages) >= 2 and pages[0].casefold() == pages[-1].casefold():
        return True
    if not text.rstrip(" .").endswith(pages[-1]):
        return False
    # A footer: the package, its version, perhaps a date, the page ("systemd 252 MACHINE-ID(5)").
    return bool(_DATE.search(text)) or (
        len(words) <= 6 and pages[-1].isupper() and bool(_RELEASE.search(text))
    )


def _lone_heading(text: str, words: list[str]) -> bool:
    """A short title standing alone: "Grant of Patent License.", "1. Definitions.", "PORTABILITY
    NOTES": numbered, in capitals, or every word of four letters or more capitalised. A short
    sentence ("Gardens line the river banks.") is not one."""
    if not words or len(words) > 6 or (not text[0].isupper() and not text[0].isdigit()):
        return False
    if any(word.casefold() in _VERBS for word in words) or "," in text or text.endswith(";"):
        return False
    numbered = bool(re.match(r"^\(?[\dIVX]+(?:\.\d+)*[.)]\s", text))
    titled = all(word[0].isupper() or word[0].isdigit() for word in words if len(word) >= 4)
    return numbered or titled

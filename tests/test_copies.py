"""Which sources are the same document: copies and the same page in two formats count once."""

from __future__ import annotations

import random

from research_mcp.core.copies import (
    copy_clusters,
    fingerprint,
    independent_count,
    representatives,
    resemblance,
    same_document,
    stem_of,
)

_WORDS = [f"w{n}" for n in range(400)]


def _prose(seed: int, words: int = 1200) -> str:
    pick = random.Random(seed)
    return " ".join(pick.choice(_WORDS) for _ in range(words))


def test_a_byte_identical_copy_under_another_name_is_the_same_document() -> None:
    text = _prose(1)
    assert same_document(fingerprint(text, "licences/GPL"), fingerprint(text, "licences/GPL-3"))


def test_spacing_case_and_punctuation_do_not_make_another_document() -> None:
    text = _prose(2)
    reflowed = text.upper().replace(" ", ",\n  ")
    assert resemblance(fingerprint(text), fingerprint(reflowed)) == 1.0


def test_the_same_page_in_two_formats_is_one_document_when_its_markup_differs() -> None:
    body = _prose(3).split()
    # The source has markup words every few lines; the rendered page a navigation header instead.
    source = " ".join(word if n % 40 else f"linkgit {word}" for n, word in enumerate(body))
    rendered = "Contents Synopsis Description Options " + " ".join(body)
    a, b = fingerprint(source, "docs/page-reset.txt"), fingerprint(rendered, "docs/page-reset.html")
    assert 0.5 <= resemblance(a, b) < 0.9
    assert same_document(a, b)
    # Under names of their own, the same two texts are two documents (two versions of one text).
    assert not same_document(fingerprint(source, "v1"), fingerprint(rendered, "v2"))


def test_a_page_source_held_whole_in_its_rendered_page_is_the_same_document() -> None:
    included = _prose(4, 3000)
    source = _prose(5, 400)
    a, b = fingerprint(source, "page.txt"), fingerprint(f"{source} {included}", "page.html")
    assert resemblance(a, b) < 0.5
    assert same_document(a, b)


def test_different_texts_are_different_documents_even_with_one_stem() -> None:
    a, b = fingerprint(_prose(6), "a/intro.html"), fingerprint(_prose(7), "b/intro.txt")
    assert resemblance(a, b) < 0.1
    assert not same_document(a, b)
    assert not same_document(fingerprint(""), fingerprint(""))


def test_stems_drop_format_and_compression_suffixes_but_keep_versions() -> None:
    assert stem_of("docs/git-reset.html") == stem_of("git-reset.txt.gz") == "git-reset"
    assert stem_of("GPL-2.0") != stem_of("GPL-3.0")
    assert stem_of("https://example.org/guide/intro/?x=1") == "intro"


def test_clusters_keep_the_first_of_each_document_and_count_copies_once() -> None:
    one, other = _prose(8), _prose(9)
    items = [(11, fingerprint(one, "a")), (12, fingerprint(other, "b")), (13, fingerprint(one, "c"))]
    assert copy_clusters(items) == [[11, 13], [12]]
    first = representatives(items)
    assert first == {11: 11, 12: 12, 13: 11}
    assert independent_count([11, 13], first) == 1
    assert independent_count([11, 12, 13, 99], first) == 3

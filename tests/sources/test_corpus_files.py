"""Which files of a real folder the corpus takes as documents: Debian-style docs named without a
suffix, gzipped docs, and the files it passes over (programs, images, code), against real SQLite."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from research_mcp.core.errors import InvalidInput, SourceError
from research_mcp.sources.corpus import Corpus
from research_mcp.sources.folders import document_name, gunzip
from research_mcp.storage.store import Store

GPL = "GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n\nEveryone is permitted to copy and distribute verbatim copies.\n"
LGPL = (
    "GNU LESSER GENERAL PUBLIC LICENSE\nVersion 2.1, February 1999\n\nThe licensee may relink the library.\n"
)
README_DEBIAN = (
    "Notes for Debian\n\nThe dpkg database lives under /var/lib/dpkg and records every installed package.\n"
)
CHANGELOG = (
    "zlib (1:1.2.13) unstable; urgency=medium\n\n  * Fix the inflate window overflow in the deflate stream.\n"
)
GUIDE = "# Tidal guide\n\nSpring tides follow the new and the full moon.\n"
# An ELF header and a PNG header: binaries, whatever their names say.
PROGRAM = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8
IMAGE = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(200)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "doc"
    (root / "dpkg").mkdir(parents=True)
    (root / "GPL-3").write_text(GPL)
    (root / "LGPL-2.1").write_text(LGPL)
    (root / "dpkg" / "README.Debian").write_text(README_DEBIAN)
    (root / "dpkg" / "changelog.Debian.gz").write_bytes(gzip.compress(CHANGELOG.encode()))
    (root / "guide.md.gz").write_bytes(gzip.compress(GUIDE.encode()))
    (root / "dpkg-query").write_bytes(PROGRAM)
    (root / "logo.png").write_bytes(IMAGE)
    (root / "setup.py").write_text("print('code is not a document')\n")
    (root / "data.json").write_text('{"not": "a document"}\n')
    return root


def indexed(store: Store, folder: Path) -> dict[str, str]:
    """Path -> title of every document the index holds for the folder."""
    corpus = Corpus(store, [folder])
    return {row.path: corpus.read(row.id).title for row in corpus.known_files(corpus.roots[0])}


def test_text_files_named_without_a_suffix_and_gzipped_docs_are_indexed_and_binaries_are_not(
    store: Store, folder: Path
) -> None:
    report = Corpus(store, [folder]).index()
    assert report.errors == []  # a program or an image named without a suffix is no document to report
    assert indexed(store, folder) == {
        "GPL-3": "GPL-3",
        "LGPL-2.1": "LGPL-2.1",
        "dpkg/README.Debian": "README.Debian",
        "dpkg/changelog.Debian.gz": "changelog.Debian",
        "guide.md.gz": "Tidal guide",  # a gzipped Markdown file keeps its heading as its title
    }


def test_a_gzipped_document_is_searched_and_read_uncompressed(store: Store, folder: Path) -> None:
    corpus = Corpus(store, [folder])
    corpus.index()
    [hit] = [hit for hit in corpus.search("inflate window overflow", limit=3) if hit.path.endswith(".gz")]
    assert hit.path == "dpkg/changelog.Debian.gz"
    assert "inflate window overflow" in corpus.read(hit.doc_id).text
    assert corpus.document_at(folder / "dpkg" / "changelog.Debian.gz") == hit.doc_id


def test_a_man_pages_roff_source_is_read_as_the_text_man_shows(store: Store, folder: Path) -> None:
    # The opening of util-linux's fstab(5) as Debian installs it, /usr/share/man/man5/fstab.5.gz.
    page = Path(__file__).parents[1] / "fixtures" / "realdocs" / "fstab.5.gz"
    (folder / "man5").mkdir()
    (folder / "man5" / "fstab.5.gz").write_bytes(page.read_bytes())
    corpus = Corpus(store, [folder])
    corpus.index()
    [hit] = [
        hit for hit in corpus.search("fields on each line separated", limit=3) if hit.path.endswith(".5.gz")
    ]
    text = corpus.read(hit.doc_id).text
    assert (
        "Fields on each line are separated by tabs or spaces. Lines starting with '#' are comments." in text
    )
    assert "## The first field (fs_spec)." in text.split("\n")  # a subsection heading, a line of its own
    assert "It\u2019s also possible to use PARTUUID= and PARTLABEL=." in text
    assert not any(line.startswith((".", "'")) for line in text.split("\n")), text[:500]
    assert "\\f" not in text and "\\(" not in text


def test_a_gzip_bomb_and_a_broken_gzip_are_skipped_with_their_reason(store: Store, folder: Path) -> None:
    # 11 MB of zeros compress to about 11 KB: past the 10 MB text cap once uncompressed.
    (folder / "bomb.txt.gz").write_bytes(gzip.compress(b"a" * (11 * 2**20)))
    (folder / "broken.md.gz").write_bytes(b"\x1f\x8b\x08\x00garbage that inflates to nothing")
    errors = Corpus(store, [folder]).index().errors
    assert any(e.startswith("bomb.txt.gz: holds more than 10 MB once uncompressed") for e in errors), errors
    assert any(e.startswith("broken.md.gz: is not a valid gzip file") for e in errors), errors
    assert "bomb.txt.gz" not in indexed(store, folder)


def test_a_fifo_named_like_a_readme_is_passed_over_without_being_opened(store: Store, folder: Path) -> None:
    os.mkfifo(folder / "README")  # opening it for reading would block the indexer forever
    report = Corpus(store, [folder]).index()
    assert "README" not in indexed(store, folder)
    assert report.added == 5


def test_extract_source_refuses_a_binary_or_code_file_by_path_with_what_it_reads(
    store: Store, folder: Path
) -> None:
    corpus = Corpus(store, [folder])
    corpus.index()
    with pytest.raises(InvalidInput, match="is not a document research-mcp reads"):
        corpus.document_at(folder / "setup.py")
    with pytest.raises(InvalidInput, match="not a text document"):
        corpus.document_at(folder / "dpkg-query")


@pytest.mark.parametrize(
    ("name", "kind", "gzipped", "title"),
    [
        ("GPL-3", "", False, "GPL-3"),
        ("Apache-2.0", "", False, "Apache-2.0"),
        ("README.Debian", "", False, "README.Debian"),
        ("NEWS.Debian.gz", "", True, "NEWS.Debian"),
        ("Notes.PDF", ".pdf", False, "Notes"),
        ("page.htm.gz", ".htm", True, "page"),
        ("guide.rst", ".rst", False, "guide"),
    ],
)
def test_a_files_name_says_how_to_read_it(name: str, kind: str, gzipped: bool, title: str) -> None:
    named = document_name(name)
    assert named is not None
    assert (named.kind, named.gzipped, named.title) == (kind, gzipped, title)


@pytest.mark.parametrize("name", ["setup.py", "data.json", "photo.jpeg", ".bashrc", ".gz", "archive.tar.gz"])
def test_names_of_code_data_and_hidden_files_are_no_documents(name: str) -> None:
    assert document_name(name) is None


def test_gunzip_reads_every_member_and_refuses_a_truncated_stream() -> None:
    two = gzip.compress(b"first member. ") + gzip.compress(b"second member.")
    assert gunzip(two, 1024) == b"first member. second member."
    with pytest.raises(SourceError, match="truncated"):
        gunzip(gzip.compress(b"x" * 5000)[:-12], 2**20)


def test_a_file_named_in_latin_1_is_indexed_under_an_escaped_name_and_the_rest_of_the_corpus_too(
    store: Store, folder: Path
) -> None:
    latin1 = os.fsdecode(b"m\xe9moire.md")  # not UTF-8: the name holds a lone surrogate in Python
    (folder / latin1).write_text("# Memoire\n\nThe heron nests in the reed beds each April.\n")
    (folder / "zebra.md").write_text("# Zebra\n\nStripes sort after the Latin-1 name.\n")
    corpus = Corpus(store, [folder])
    report = corpus.index()
    assert report.errors == [] and report.added == 7
    assert indexed(store, folder)["m\\xe9moire.md"] == "Memoire"
    assert "zebra.md" in indexed(store, folder)
    [hit] = [hit for hit in corpus.search("heron reed beds", limit=3) if "heron" in hit.snippet]
    assert hit.path == "m\\xe9moire.md"
    assert corpus.document_at(folder / latin1) == hit.doc_id
    again = corpus.index()
    assert (again.added, again.removed, again.unchanged) == (0, 0, 7)  # the escaped name is stable


def test_readmes_with_any_suffix_and_latin_1_docs_gzipped_or_not_are_indexed_and_skips_are_counted(
    store: Store, folder: Path
) -> None:
    (folder / "README.source").write_text("Building the source package needs debhelper and quilt.\n")
    (folder / "README.api").write_text("The API module exposes one function per endpoint.\n")
    latin1 = "Änderungen: die Brücke über den Fluß wurde 1932 eröffnet.\n".encode("latin-1")
    (folder / "dpkg" / "changelog.de.gz").write_bytes(gzip.compress(latin1))
    (folder / "NOTES.txt").write_bytes(latin1)
    (folder / "empty.md").write_text("")
    (folder / "api.json.gz").write_bytes(gzip.compress(b'{"data": "not a document"}'))
    report = Corpus(store, [folder]).index()
    titles = indexed(store, folder)
    assert {"README.source", "README.api", "dpkg/changelog.de.gz", "NOTES.txt"} <= set(titles)
    corpus = Corpus(store, [folder])
    [hit] = [h for h in corpus.search("Brücke Fluß eröffnet", limit=5) if h.path == "dpkg/changelog.de.gz"]
    assert "die Brücke über den Fluß wurde 1932 eröffnet" in corpus.read(hit.doc_id).text  # not mojibake
    # Passed over, and counted: a program and an image (binary), code and data by their names, an empty file.
    assert (report.binary, report.empty) == (1, 1)
    assert report.not_documents == {".png": 1, ".py": 1, ".json": 1, ".json.gz": 1}
    assert report.skipped_line() == (
        "skipped 6 files: 4 not documents by their names (.json 1, .json.gz 1, .png 1, .py 1); "
        "1 named like documents but holding binary data; 1 empty"
    )


def test_extract_source_on_a_file_too_large_to_index_says_it_never_will_be(
    store: Store, folder: Path
) -> None:
    (folder / "huge.txt").write_bytes(b"tide tables\n" * (11 * 2**20 // 12 + 1))
    corpus = Corpus(store, [folder])
    assert any(error.startswith("huge.txt: larger than 10 MB") for error in corpus.index().errors)
    with pytest.raises(InvalidInput, match=r"larger than 10 MB.*never indexed") as caught:
        corpus.document_at(folder / "huge.txt")
    assert "try again later" not in str(caught.value)

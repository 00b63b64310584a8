"""Hostile documents, built in code: malformed and mutated PDFs, bombs, deep nesting, huge streams,
invalid encodings. Shared by the tests (one of each, 200 mutated PDFs) and the benchmarks
(`bench/pdf_fuzz.py`, `bench/hostile_docs.py`) that run many more.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterator

from tests.sources.pdf import assemble, minimal_pdf


def pdf_of(streams: list[bytes], *, filters: bytes = b"", info: bytes = b"", pages: int = 1) -> bytes:
    """A PDF of `pages` pages, each showing the content streams given (raw bytes, `filters` as the
    /Filter entry of each), with an optional /Info dictionary."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    font = 3
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for _ in range(pages):
        contents = []
        for stream in streams:
            objects.append(
                b"<< /Length %d%s >>\nstream\n" % (len(stream), b" /Filter " + filters if filters else b"")
                + stream
                + b"\nendstream"
            )
            contents.append(b"%d 0 R" % len(objects))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [%s]"
            b" /Resources << /Font << /F1 %d 0 R >> >> >>" % (b" ".join(contents), font)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), pages)
    if info:
        objects.append(info)
    return assemble(objects, info=len(objects) if info else None)


def text_stream(line: str) -> bytes:
    return f"BT /F1 12 Tf 72 720 Td ({line}) Tj ET".encode()


def flate_pdf(line: str) -> bytes:
    return pdf_of([zlib.compress(text_stream(line))], filters=b"/FlateDecode", info=b"<< /Title (Flate) >>")


def unknown_filter_pdf() -> bytes:
    """A valid PDF whose /FlateDecode was renamed: pypdf raises NotImplementedError on it."""
    return flate_pdf("Tidal power is predictable.").replace(b"/FlateDecode", b"/BogusDecode")


def slow_pdf(pages: int = 4) -> bytes:
    """A PDF of `pages` pages, each one deflated content stream of ~1.7 million tokens: just under
    pypdf's per-stream parsing budget, so every page parses (seconds each) and nothing stops early."""
    ops = b"1 0 Td (x) Tj "  # five tokens
    raw = b"BT /F1 12 Tf " + ops * 340_000 + b"ET"
    return pdf_of([zlib.compress(raw, 9)], filters=b"/FlateDecode", pages=pages)


def huge_stream_pdf(megabytes: int = 10) -> bytes:
    """A ~20 KB PDF holding one content stream of `megabytes` MB of text operators (deflated)."""
    ops = b"1 0 Td (x) Tj "
    raw = b"BT /F1 12 Tf " + ops * (megabytes * 1_000_000 // len(ops)) + b"ET"
    return pdf_of([zlib.compress(raw, 9)], filters=b"/FlateDecode")


def flate_bomb_pdf(megabytes: int = 70) -> bytes:
    """A PDF whose content stream inflates to `megabytes` MB of zero bytes (under pypdf's own cap)."""
    compressor = zlib.compressobj(9)
    block = bytes(1_000_000)
    body = b"".join(compressor.compress(block) for _ in range(megabytes)) + compressor.flush()
    return pdf_of([body], filters=b"/FlateDecode")


def deep_array_pdf(depth: int = 100_000) -> bytes:
    """A PDF whose page resources nest `depth` arrays deep."""
    pdf = flate_pdf("Nested.")
    return pdf.replace(b"/Resources <<", b"/Deep " + b"[" * depth + b"]" * depth + b" /Resources <<", 1)


def page_tree_loop_pdf() -> bytes:
    """A page tree whose /Kids point back at itself, claiming a million pages."""
    pdf = minimal_pdf("Loop", "Loop")
    return pdf.replace(b"/Kids [3 0 R] /Count 1", b"/Kids [2 0 R 2 0 R] /Count 1000000")


def many_pages_pdf(pages: int = 3000) -> bytes:
    return pdf_of([text_stream("Page")], pages=pages)


def span_soup_html(spans: int = 340_000) -> bytes:
    """A 4.7 MB page of `spans` one-letter <span>s in one paragraph (parsed in process, it took 55 s
    and 969 MB)."""
    return (
        b"<html><head><title>Spans</title></head><body><p>"
        + b"<span>a</span>" * spans
        + b"</p></body></html>"
    )


def deep_div_html(depth: int = 200_000) -> bytes:
    return b"<html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"


def entity_bomb_html() -> bytes:
    """The billion-laughs entity expansion, as an XHTML page."""
    entities = "".join(
        f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10 if i else "lol"}">' for i in range(10)
    )
    return (
        f'<?xml version="1.0"?><!DOCTYPE html [{entities}]>'
        f'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>&l9;</p></body></html>'
    ).encode()


def invalid_utf8_html() -> bytes:
    return (
        b'<html><head><meta charset="utf-8"><title>Bad \xff bytes</title></head><body>'
        + b"<p>Valid words \xc3\x28 and \xed\xa0\x80 surrogates \xf8\x88\x80\x80\x80 and more.</p>" * 200
        + b"</body></html>"
    )


def wrong_charset_html() -> bytes:
    return (
        b'<html><head><meta charset="utf-16"><title>Wrong</title></head><body>'
        b"<p>This page is ASCII but declares UTF-16.</p></body></html>"
    )


def invalid_utf8_text() -> bytes:
    rng = random.Random(7)
    return bytes(rng.choice(range(1, 256)) for _ in range(200_000))  # no NUL: read as text


# --- mutation fuzzing ------------------------------------------------------------------------

SEEDS: list[Callable[[], bytes]] = [
    lambda: minimal_pdf("Solar panels convert sunlight into electricity.", "Solar"),
    lambda: flate_pdf("Wind turbines turn kinetic energy into power."),
    lambda: pdf_of([text_stream("One"), text_stream("Two")], pages=3, info=b"<< /Title (Three) >>"),
]

# Tokens a mutation swaps in for another: names, numbers and syntax that malformed files carry.
TOKENS = [
    b"/FlateDecode",
    b"/BogusDecode",
    b"/LZWDecode",
    b"/ASCII85Decode",
    b"/ASCIIHexDecode",
    b"/RunLengthDecode",
    b"/DCTDecode",
    b"/JBIG2Decode",
    b"/Crypt",
    b"/Encrypt",
    b"/ObjStm",
    b"/XRef",
    b"/Prev",
    b"/Parent",
    b"/Kids",
    b"/Count",
    b"/Length",
    b"/DecodeParms << /Predictor 15 /Columns 999999 >>",
    b"-1",
    b"0",
    b"99999999999999999999",
    b"1e308",
    b"-2147483649",
    b"3.4.5",
    b"1 0 R",
    b"999 0 R",
    b"2 0 R",
    b"<<",
    b">>",
    b"[",
    b"]",
    b"(",
    b")",
    b"<",
    b">",
    b"\\",
    b"obj",
    b"endobj",
    b"stream",
    b"endstream",
    b"xref",
    b"trailer",
    b"startxref",
    b"%%EOF",
    b"null",
    b"true",
    b"/Type /Pages",
    b"/Type /Page",
    b"/Font",
    b"/ToUnicode 2 0 R",
    b"/Encoding /Bogus",
    b"/Differences [1 /a 2]",
    b"\xff\xfe",
    b"\x00",
]


def mutate(pdf: bytes, rng: random.Random) -> bytes:
    """One to eight random edits: byte flips, cuts, duplicated spans, swapped tokens, truncation."""
    data = bytearray(pdf)
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        choice = rng.random()
        at = rng.randrange(len(data))
        if choice < 0.25:
            data[at] = rng.randrange(256)
        elif choice < 0.4:
            del data[at : at + rng.randint(1, 64)]
        elif choice < 0.5:
            span = bytes(data[at : at + rng.randint(1, 128)])
            data[at:at] = span * rng.randint(1, 4)
        elif choice < 0.85:
            token = rng.choice(TOKENS)
            present = [t for t in TOKENS if t in data]
            if present and rng.random() < 0.6:
                old = rng.choice(present)
                where = data.find(old, rng.randrange(len(data)))
                where = where if where >= 0 else data.find(old)
                data[where : where + len(old)] = token
            else:
                data[at:at] = b" " + token + b" "
        elif choice < 0.95:
            digits = [i for i in range(len(data)) if 48 <= data[i] <= 57]
            if digits:
                i = rng.choice(digits)
                data[i : i + 1] = str(rng.choice([0, 9, 99999, 2**31, 2**63, -1])).encode()
        else:
            del data[rng.randrange(len(data)) :]
    return bytes(data)


def mutated_pdfs(count: int, seed: int = 0) -> Iterator[tuple[str, bytes]]:
    """`count` mutated PDFs, named `mutant-<seed>-<n>.pdf`, the same for the same seed."""
    rng = random.Random(seed)
    bases = [make() for make in SEEDS]
    for n in range(count):
        yield f"mutant-{seed}-{n}.pdf", mutate(rng.choice(bases), rng)

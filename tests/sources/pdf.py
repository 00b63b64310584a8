"""A hand-built PDF for tests that read PDFs: the corpus indexes it, the fetcher extracts its text."""

from __future__ import annotations


def minimal_pdf(line: str, title: str) -> bytes:
    """A one-page PDF showing `line` in Helvetica, with `title` in its metadata."""
    content = f"BT /F1 18 Tf 72 720 Td ({line}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    return assemble(objects, info=6)


def assemble(objects: list[bytes], *, info: int | None = None) -> bytes:
    """A PDF file of numbered objects (the first the catalog), with its cross-reference table and a
    trailer naming object `info` as the /Info dictionary."""
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer_info = b" /Info %d 0 R" % info if info is not None else b""
    pdf += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        trailer_info,
        xref,
    )
    return bytes(pdf)

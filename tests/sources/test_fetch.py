"""SafeFetcher against a loopback server: documents come back as text; anything unsafe is refused."""

from __future__ import annotations

import hashlib
import ipaddress
import re
import ssl
import tracemalloc
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from research_mcp.core.errors import SourceError
from research_mcp.sources import fetch
from research_mcp.sources.fetch import FetchedDocument, SafeFetcher, check_address
from research_mcp.sources.text import extract_text

from .loopback import LoopbackServer
from .pdf import minimal_pdf

#: A bound against a hang only, never a time limit that a loaded machine could reach.
HANG_S = 60

ARTICLE = b"""<!DOCTYPE html>
<html><head><title>Tide pools of the Pacific</title><script>var tracking = 1;</script></head>
<body><nav>Home | About</nav>
<article><h1>Tide pools</h1>
<p>Tide pools are rocky depressions on the shore that hold seawater when the tide goes out.</p>
<p>They shelter anemones, sea stars and hermit crabs, which must survive heat and changing salinity.</p>
<p>Researchers count species in fixed quadrats each spring to follow how the pools change over decades.</p>
</article><footer>Copyright</footer></body></html>"""


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture
def other_server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


def allowing(server: LoopbackServer, **options: Any) -> SafeFetcher:
    return SafeFetcher(allow=frozenset({f"127.0.0.1:{server.port}"}), **options)


# Documents come back as text.


async def test_an_html_page_is_fetched_as_its_article_text_and_title(server: LoopbackServer) -> None:
    server.serve("/tides", ARTICLE)
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            document = await fetcher.fetch(server.url("/tides"))

    assert document.content_type == "text/html"
    assert document.title == "Tide pools of the Pacific"
    assert "shelter anemones, sea stars and hermit crabs" in document.text
    assert "tracking" not in document.text
    assert document.content_hash == hashlib.sha256(document.text.encode("utf-8")).hexdigest()


async def test_a_very_short_html_page_still_yields_its_text(server: LoopbackServer) -> None:
    server.serve("/short", b"<html><head><title>Short</title></head><body><p>Only this.</p></body></html>")
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            document = await fetcher.fetch(server.url("/short"))

    assert (document.content_type, document.title, document.text) == ("text/html", "Short", "Only this.")


async def test_a_pdf_is_fetched_as_its_text_even_when_mislabelled(server: LoopbackServer) -> None:
    server.serve(
        "/paper", minimal_pdf("Coral bleaching doubled since 1998", "Reef survey"), "application/x-foo"
    )
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            document = await fetcher.fetch(server.url("/paper"))

    assert (document.content_type, document.title) == ("application/pdf", "Reef survey")
    assert "Coral bleaching doubled since 1998" in document.text


async def test_plain_text_is_decoded_with_the_charset_the_server_names(server: LoopbackServer) -> None:
    server.serve(
        "/notes.txt",
        "Café notes\n\nThe crème brûlée was fine.".encode("latin-1"),
        "text/plain; charset=latin-1",
    )
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            document = await fetcher.fetch(server.url("/notes.txt"))

    assert document == FetchedDocument(
        url=server.url("/notes.txt"),
        title="Café notes",
        text="Café notes\n\nThe crème brûlée was fine.",
        content_type="text/plain",
        content_hash=hashlib.sha256("Café notes\n\nThe crème brûlée was fine.".encode()).hexdigest(),
    )


async def test_a_gzip_encoded_page_is_decompressed(server: LoopbackServer) -> None:
    server.serve("/zipped", zlib.compress(b"Compressed but plain.", wbits=31), "text/plain",
                 headers=[("Content-Encoding", "gzip")])  # fmt: skip
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            document = await fetcher.fetch(server.url("/zipped"))

    assert document.text == "Compressed but plain."


async def test_redirects_are_followed_and_the_final_url_reported(server: LoopbackServer) -> None:
    server.redirect("/old", "/moved")
    server.redirect("/moved", server.url("/tides"), status=301)
    server.serve("/tides", ARTICLE)
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            document = await fetcher.fetch(server.url("/old"))

    assert document.url == server.url("/tides")
    assert server.paths == ["/old", "/moved", "/tides"]


async def test_the_request_carries_the_host_as_written_not_the_address(server: LoopbackServer) -> None:
    server.serve("/page", b"hello")
    with anyio.fail_after(HANG_S):
        async with SafeFetcher(allow=frozenset({f"localhost:{server.port}"})) as fetcher:
            await fetcher.fetch(f"http://localhost:{server.port}/page")

    assert server.requests[0][1]["host"] == f"localhost:{server.port}"


def self_signed_certificate(host: str, folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A certificate for `host`: the server's TLS context, and a client context that trusts it."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, host)])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certificate_pem = certificate.public_bytes(serialization.Encoding.PEM)
    (folder / "cert.pem").write_bytes(certificate_pem)
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return server_context, ssl.create_default_context(cadata=certificate_pem.decode("ascii"))


async def test_https_goes_to_the_checked_address_but_verifies_the_host_name(tmp_path: Path) -> None:
    server_context, client_context = self_signed_certificate("localhost", tmp_path)
    with LoopbackServer(tls=server_context) as server:
        server.serve("/secure", b"over tls", "text/plain")
        allow = frozenset({f"localhost:{server.port}"})
        with anyio.fail_after(HANG_S):
            async with SafeFetcher(allow=allow, ssl_context=client_context) as fetcher:
                document = await fetcher.fetch(f"https://localhost:{server.port}/secure")

    assert document.text == "over tls"
    assert server.server_names == ["localhost"]
    assert server.requests[0][1]["host"] == f"localhost:{server.port}"


async def test_https_to_a_name_the_certificate_does_not_hold_is_refused(tmp_path: Path) -> None:
    server_context, client_context = self_signed_certificate("localhost", tmp_path)
    with LoopbackServer(tls=server_context) as server:
        server.serve("/secure", b"over tls", "text/plain")
        with anyio.fail_after(HANG_S):
            async with allowing(server, ssl_context=client_context) as fetcher:
                with pytest.raises(SourceError, match="certificate"):
                    await fetcher.fetch(server.url("/secure"))  # https://127.0.0.1:port/

    assert server.requests == []


# Addresses outside the public internet are refused, however they are spelled.

LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "2130706433",  # decimal
    "0177.0.0.1",  # octal
    "0x7f.0.0.1",  # hex
    "0x7f000001",  # hex, one number
    "127.1",  # short form
    "[::ffff:127.0.0.1]",  # IPv4-mapped IPv6
    "[::1]",  # IPv6 loopback
    "localhost",
    "LocalHost",
    "0.0.0.0",  # reaches this machine on Linux
    "[::]",
]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
async def test_every_spelling_of_this_machine_is_refused_before_connecting(
    server: LoopbackServer, host: str
) -> None:
    server.serve("/secret", b"internal")
    with anyio.fail_after(HANG_S):
        async with SafeFetcher() as fetcher:
            with pytest.raises(SourceError, match=r"Refused to fetch .* resolves to"):
                await fetcher.fetch(f"http://{host}:{server.port}/secret")

    assert server.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://10.0.0.8/",
        "https://192.168.1.1/admin",
        "http://172.16.5.4:8080/",
        "http://100.64.0.1/",
        "http://[fe80::1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 form of 169.254.169.254
        "http://[2002:c0a8:101::]/",  # 6to4 form of 192.168.1.1
    ],
)
async def test_private_and_metadata_addresses_are_refused(url: str) -> None:
    with anyio.fail_after(HANG_S):
        async with SafeFetcher() as fetcher:
            with pytest.raises(SourceError, match="Only public internet addresses"):
                await fetcher.fetch(url)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "10.1.2.3", "172.31.255.255", "192.168.0.1", "169.254.169.254", "100.100.100.200",
        "100.64.0.1", "0.0.0.0", "224.0.0.251", "240.0.0.1", "255.255.255.255", "192.0.2.1",
        "::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "fec0::1", "2001:db8::1",
        "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "2002:7f00:1::", "64:ff9b::7f00:1",
        "64:ff9b:1::1", "2001::1",
    ],
)  # fmt: skip
def test_check_address_refuses_every_non_public_address(address: str) -> None:
    assert check_address(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]
)
def test_check_address_lets_public_addresses_through(address: str) -> None:
    assert check_address(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "gopher://example.com/",
        "data:text/plain,hi",
        "/relative",
    ],
)
async def test_urls_that_are_not_http_or_https_are_refused(url: str) -> None:
    async with SafeFetcher() as fetcher:
        with pytest.raises(SourceError, match="only http and https"):
            await fetcher.fetch(url)


async def test_a_metadata_refusal_does_not_suggest_the_allow_list() -> None:
    async with SafeFetcher() as fetcher:
        with pytest.raises(SourceError, match="cloud metadata endpoint") as refused:
            await fetcher.fetch("http://169.254.169.254/latest/meta-data/")

    assert "RESEARCH_MCP_FETCH_ALLOW" not in str(refused.value)


async def test_an_error_status_or_a_closed_port_is_reported_as_a_source_error(server: LoopbackServer) -> None:
    with LoopbackServer() as stopped:
        closed_port = stopped.port
    with anyio.fail_after(HANG_S):
        async with SafeFetcher(
            allow=frozenset({f"127.0.0.1:{server.port}", f"127.0.0.1:{closed_port}"})
        ) as fetcher:
            with pytest.raises(SourceError, match="answered HTTP 404 Not Found"):
                await fetcher.fetch(server.url("/missing"))
            with pytest.raises(SourceError, match="Could not connect"):
                await fetcher.fetch(f"http://127.0.0.1:{closed_port}/")


# Redirects are checked hop by hop.


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:{other}/secret",
        "http://2130706433:{other}/secret",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
async def test_a_redirect_to_a_refused_address_is_refused_at_that_hop(
    server: LoopbackServer, other_server: LoopbackServer, location: str
) -> None:
    server.redirect("/start", location.format(other=other_server.port))
    other_server.serve("/secret", b"internal")
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            with pytest.raises(SourceError, match=r"Refused to fetch the redirect from .*/start"):
                await fetcher.fetch(server.url("/start"))

    assert other_server.requests == []


async def test_a_redirect_to_another_scheme_is_refused(server: LoopbackServer) -> None:
    server.redirect("/start", "file:///etc/passwd")
    async with allowing(server) as fetcher:
        with pytest.raises(SourceError, match=r"redirect .* only http and https"):
            await fetcher.fetch(server.url("/start"))


async def test_more_redirects_than_allowed_are_refused(server: LoopbackServer) -> None:
    for hop in range(3, 0, -1):
        server.redirect(f"/hop/{hop}", f"/hop/{hop - 1}")
    server.serve("/hop/0", b"arrived")
    with anyio.fail_after(HANG_S):
        async with allowing(server, max_redirects=2) as fetcher:
            assert (await fetcher.fetch(server.url("/hop/2"))).text == "arrived"
            with pytest.raises(SourceError, match="redirected more than 2 times"):
                await fetcher.fetch(server.url("/hop/3"))


async def test_a_redirect_loop_is_stopped(server: LoopbackServer) -> None:
    server.redirect("/loop", "/loop")
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            with pytest.raises(SourceError, match="redirected more than 5 times"):
                await fetcher.fetch(server.url("/loop"))

    assert len(server.requests) == 6


# The allow-list opens exactly its host:port pairs.


async def test_the_allow_list_lets_exactly_its_pairs_through(
    server: LoopbackServer, other_server: LoopbackServer
) -> None:
    server.serve("/ok", b"allowed")
    other_server.serve("/ok", b"not allowed")
    with anyio.fail_after(HANG_S):
        async with allowing(server) as fetcher:
            assert (await fetcher.fetch(server.url("/ok"))).text == "allowed"
            with pytest.raises(SourceError, match=re.escape(f"add '127.0.0.1:{other_server.port}'")):
                await fetcher.fetch(other_server.url("/ok"))
            with pytest.raises(SourceError, match=r"resolves to 127\.0\.0\.1, a loopback address"):
                await fetcher.fetch(f"http://localhost:{server.port}/ok")

    assert other_server.requests == []
    assert server.paths == ["/ok"]


# Size and time are capped.


async def test_an_endless_body_is_cut_at_the_size_cap(server: LoopbackServer) -> None:
    def endless(handler) -> None:  # type: ignore[no-untyped-def]
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.end_headers()
        while not server.stopping.is_set():
            handler.wfile.write(b"all work and no play " * 3000)

    server.respond("/endless", endless)
    with anyio.fail_after(HANG_S):
        async with allowing(server, max_bytes=1_000_000) as fetcher:
            with pytest.raises(SourceError, match="larger than 1,000,000 bytes"):
                await fetcher.fetch(server.url("/endless"))


async def test_a_declared_length_over_the_cap_is_refused_before_reading(server: LoopbackServer) -> None:
    server.serve("/big", b"x" * 2_000, "text/plain")
    async with allowing(server, max_bytes=1_000) as fetcher:
        with pytest.raises(SourceError, match="larger than 1,000 bytes"):
            await fetcher.fetch(server.url("/big"))


async def test_a_slow_drip_is_cut_at_the_time_limit(server: LoopbackServer) -> None:
    def drip(handler) -> None:  # type: ignore[no-untyped-def]
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.end_headers()
        while not server.stopping.wait(0.05):
            handler.wfile.write(b"x")

    server.respond("/drip", drip)
    # The drip never ends by itself (a byte every 50 ms until the server stops): the fetch returning
    # at all, with this error, shows the cut. The bound only keeps a broken cut from hanging the suite;
    # it decides nothing on a loaded machine.
    with anyio.fail_after(60):
        async with allowing(server, timeout=1.0) as fetcher:
            with pytest.raises(SourceError, match="took longer than 1 s"):
                await fetcher.fetch(server.url("/drip"))


async def test_a_gzip_bomb_is_refused_without_being_inflated(server: LoopbackServer) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1_000_000)
    bomb = b"".join(compressor.compress(zeros) for _ in range(50)) + compressor.flush()  # 50 MB inflated
    server.serve("/bomb", bomb, "text/plain", headers=[("Content-Encoding", "gzip")])
    was_tracing = tracemalloc.is_tracing()
    tracemalloc.start()
    tracemalloc.reset_peak()
    baseline, _ = tracemalloc.get_traced_memory()
    try:
        with anyio.fail_after(HANG_S):
            async with allowing(server, max_bytes=1_000_000) as fetcher:
                with pytest.raises(SourceError, match="larger than 1,000,000 bytes"):
                    await fetcher.fetch(server.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()

    assert len(bomb) < 100_000
    assert peak - baseline < 10_000_000  # inflating it all would take 50 MB


# Bodies that are not documents are refused.


async def test_an_image_is_refused_with_its_type(server: LoopbackServer) -> None:
    server.serve("/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png")
    async with allowing(server) as fetcher:
        with pytest.raises(SourceError, match="is image/png, not an HTML page, PDF or text"):
            await fetcher.fetch(server.url("/logo.png"))


def test_html_served_as_plain_text_is_sniffed_as_html() -> None:
    assert extract_text(ARTICLE, "text/plain", "https://example.org/")[:2] == (
        "text/html",
        "Tide pools of the Pacific",
    )


def test_a_page_with_no_article_falls_back_to_its_visible_text() -> None:
    page = b"<html><head><title>Desk</title><style>p{}</style></head><body><footer>Ask at the desk</footer></body></html>"

    assert extract_text(page, "text/html", "https://example.org/") == ("text/html", "Desk", "Ask at the desk")


def test_the_public_api_is_declared() -> None:
    assert fetch.__all__ == ["FetchedDocument", "SafeFetcher", "check_address"]

"""Fetch a web page or PDF without letting a URL reach anything but the public internet.

A URL chosen by a model or a web page must not turn the server into a proxy for the user's
network. So, for the first request and again for every redirect hop:

1. The URL is split with :mod:`urllib.parse`; only ``http`` and ``https`` are accepted.
2. The host is resolved once, with ``getaddrinfo`` (through anyio). The resolver is what
   decides which address a spelling means, so decimal (``2130706433``), octal (``0177.0.0.1``),
   hex (``0x7f.0.0.1``), short (``127.1``) and bracketed IPv6 spellings all arrive here as the
   address they really name, and "localhost" as whatever the hosts file says.
3. Every resolved address is checked by :func:`check_address` with the standard
   :mod:`ipaddress` module, IPv6 forms that embed an IPv4 address (mapped, compatible, 6to4,
   NAT64) being unwrapped first. One refused address refuses the whole host.
4. The request is sent to the checked address itself: httpx is given a URL whose host is the
   IP literal, with the original name in the ``Host`` header and, for https, as
   ``extensions={"sni_hostname": name}``; httpcore uses that name for SNI *and* for
   certificate verification, so TLS is still checked against the real host. There is no
   second DNS lookup, hence no window for DNS rebinding. Connections are not kept alive
   (two hosts behind one IP must never share a connection verified for the other), no proxy
   from the environment is used, and cookies are never stored.

``allow`` names exact ``host:port`` pairs (host lowercased as written in the URL, IPv6 in
brackets, port defaulting to 80/443) that skip step 3, for a server the user runs locally.

The body is read raw and decompressed here, in steps bounded by ``max_bytes``, so a gzip bomb
is refused after inflating at most ``max_bytes``. The whole download, redirects included, runs
under one ``anyio.fail_after(timeout)``, so a server dripping a byte a second is cut off.
Text extraction (:mod:`research_mcp.sources.text`) then runs in a worker process with a memory
limit (:mod:`research_mcp.sources.parsing`), within what is left of the same time limit (at least
one second), so a whole fetch ends within ``timeout`` + 1 s whatever the body holds.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import socket
import ssl
import time
import zlib
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import TracebackType
from urllib.parse import urljoin, urlsplit

import anyio
import anyio.to_thread
import httpx

from research_mcp.core.errors import SourceError
from research_mcp.core.redaction import Redactor
from research_mcp.sources.parsing import DocumentParser

__all__ = ["FetchedDocument", "SafeFetcher", "check_address"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MIN_PARSE_SECONDS = 1.0
_DEFAULT_PORTS = {"http": 80, "https": 443}

# Well-known instance-metadata endpoints, named so the refusal says what was at stake.
# (Most are link-local or shared-space anyway; the list makes the reason explicit.)
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, Azure, GCP, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.170.23",  # AWS EKS pod identity
        "169.254.0.23",  # Tencent Cloud
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "fd00:ec2::254",  # AWS over IPv6
        "fd00:ec2::23",  # AWS EKS pod identity over IPv6
    )
)
_SHARED_SPACE = ipaddress.ip_network("100.64.0.0/10")
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def check_address(ip: IPAddress) -> str | None:
    """Why `ip` may not be fetched from, or None if it is a public internet address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(int(ip))  # judge the address, not its %scope
    if ip in _METADATA:
        return "a cloud metadata endpoint"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            reason = check_address(embedded)
            return f"an IPv6 form of {embedded}, {reason}" if reason else None
        if ip in _NAT64_LOCAL_USE:
            return "a local-use NAT64 address"
        if ip.is_site_local:
            return "a site-local address"
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip in _SHARED_SPACE:
        return "in the shared address space 100.64.0.0/10 (carrier-grade NAT)"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private-network address"
    if ip.is_reserved:
        return "a reserved address"
    if not ip.is_global:
        return "not a globally reachable address"
    return None


def _allow_hint(ip: IPAddress, key: str) -> str:
    """Point to the allow-list for the user's own machine or network, never for a metadata endpoint."""
    if isinstance(ip, ipaddress.IPv6Address):
        ip = _embedded_ipv4(ip) or ip
    if ip in _METADATA or not (ip.is_loopback or ip.is_private):
        return ""
    return f" If it is a server you run yourself, add {key!r} to RESEARCH_MCP_FETCH_ALLOW."


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64_WELL_KNOWN or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


@dataclass(frozen=True)
class FetchedDocument:
    """A fetched source, reduced to its text."""

    url: str  # final URL after redirects
    title: str
    text: str  # extracted plain text
    content_type: str  # "text/html" | "application/pdf" | "text/plain", sniffed from the bytes
    content_hash: str  # sha256 hex of `text` encoded as utf-8


@dataclass(frozen=True)
class _Target:
    """One hop: where the URL points, and the checked addresses to connect to."""

    url: str
    scheme: str
    host: str  # ASCII (IDNA) host name or IP literal, without brackets
    port: int
    request_target: str  # path and query
    addresses: tuple[IPAddress, ...]

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    def url_for(self, ip: IPAddress) -> str:
        literal = f"[{ip}]" if ip.version == 6 else str(ip)
        return f"{self.scheme}://{literal}:{self.port}{self.request_target}"

    def extensions(self) -> dict[str, str]:
        if self.scheme != "https" or _is_ip_literal(self.host):
            return {}
        return {"sni_hostname": self.host}


class SafeFetcher:
    """Fetches public http(s) pages and PDFs as text; see the module docstring for the rules."""

    def __init__(
        self,
        *,
        allow: frozenset[str] = frozenset(),
        max_bytes: int = 5_000_000,
        timeout: float = 20.0,
        max_redirects: int = 5,
        user_agent: str = "research-mcp/0.1",
        ssl_context: ssl.SSLContext | None = None,
        parser: DocumentParser | None = None,
        redact: Redactor | None = None,
    ) -> None:
        """`ssl_context` replaces the default certificate store (certifi), e.g. for a private CA.

        `parser` is the shared document parser; without one the fetcher starts its own, stopped by
        :meth:`aclose`. `redact` scrubs configured secrets from every page's text, title and final URL."""
        self._own_parser = parser is None
        self._parser = parser if parser is not None else DocumentParser(timeout=timeout)
        self._redact = redact or Redactor()
        self._allow = frozenset(pair.strip().lower() for pair in allow)
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._max_redirects = max_redirects
        self._ssl_context = ssl_context
        self._user_agent = user_agent
        # Made on the first fetch: its TLS context (the certificate store read) and connection pool
        # took 40 ms of CPU from each run that read no web page.
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                verify=self._ssl_context if self._ssl_context is not None else True,
                trust_env=False,  # an environment proxy would connect somewhere unchecked
                timeout=httpx.Timeout(self._timeout),
                limits=httpx.Limits(max_keepalive_connections=0),
                cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),  # stores none
                headers={
                    "User-Agent": self._user_agent,
                    "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,*/*;q=0.5",
                    "Accept-Encoding": "gzip, deflate",
                },
            )
        return self._client

    async def __aenter__(self) -> SafeFetcher:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        if self._own_parser:
            await anyio.to_thread.run_sync(self._parser.close)

    async def fetch(self, url: str) -> FetchedDocument:
        """Fetch `url` and extract its text; raises SourceError with what went wrong."""
        started = time.monotonic()
        try:
            with anyio.fail_after(self._timeout):
                final_url, body, content_type_header = await self._download(url)
        except TimeoutError:
            raise SourceError(
                f"Fetching {url!r} took longer than {self._timeout:g} s (redirects included) and was "
                f"stopped. The server may be slow or stalling; try again later or use another source."
            ) from None
        left = max(self._timeout - (time.monotonic() - started), _MIN_PARSE_SECONDS)
        content_type, title, text = await anyio.to_thread.run_sync(
            functools.partial(self._parser.extract, body, content_type_header, final_url, timeout=left)
        )
        text = self._redact(text)
        return FetchedDocument(
            url=self._redact(final_url),
            title=self._redact(title),
            text=text,
            content_type=content_type,
            content_hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        )

    async def _download(self, url: str) -> tuple[str, bytes, str | None]:
        current, previous = url, None
        for _ in range(self._max_redirects + 1):
            target = await self._resolve(current, redirected_from=previous)
            response = await self._send(target)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    current, previous = urljoin(current, location.strip()), current
                    continue
                if not 200 <= response.status_code < 300:
                    raise SourceError(
                        f"{current!r} answered HTTP {response.status_code} {response.reason_phrase}; "
                        f"nothing was read. Check the URL or try another source."
                    )
                body = await self._read_body(response, current)
                return current, body, response.headers.get("content-type")
            except httpx.HTTPError as exc:
                raise SourceError(f"Reading {current!r} failed: {str(exc) or type(exc).__name__}.") from exc
            finally:
                await response.aclose()
        raise SourceError(
            f"{url!r} redirected more than {self._max_redirects} times (last to {current!r}); "
            f"the site may be looping. Try the final page's URL directly."
        )

    async def _resolve(self, url: str, *, redirected_from: str | None) -> _Target:
        def refuse(why: str) -> SourceError:
            what = f"the redirect from {redirected_from!r} to {url!r}" if redirected_from else repr(url)
            return SourceError(f"Refused to fetch {what}: {why}")

        try:
            parts = urlsplit(url)
            scheme, port = parts.scheme.lower(), parts.port
        except ValueError as exc:
            raise refuse(f"it is not a valid URL ({exc}).") from exc
        if scheme not in _DEFAULT_PORTS:
            raise refuse(f"only http and https URLs can be fetched, not {scheme or 'a relative URL'!r}.")
        if not parts.hostname:
            raise refuse("the URL names no host.")
        host = _ascii_host(parts.hostname)
        if host is None:
            raise refuse(f"{parts.hostname!r} is not a valid host name.")
        port = port if port is not None else _DEFAULT_PORTS[scheme]
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise SourceError(f"Could not resolve the host of {url!r} ({exc}). Check the URL.") from exc
        addresses = tuple(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
        if not addresses:
            raise SourceError(f"The host of {url!r} has no address. Check the URL.")
        key = f"[{parts.hostname}]:{port}" if ":" in parts.hostname else f"{parts.hostname}:{port}"
        if key not in self._allow:
            for ip in addresses:
                reason = check_address(ip)
                if reason is not None:
                    raise refuse(
                        f"{parts.hostname!r} resolves to {ip}, {reason}. Only public internet addresses "
                        f"are fetched." + _allow_hint(ip, key)
                    )
        request_target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return _Target(url, scheme, host, port, request_target, addresses)

    async def _send(self, target: _Target) -> httpx.Response:
        """Send the request to the first checked address that accepts a connection."""
        failures: list[str] = []
        for ip in target.addresses:
            request = self._http().build_request(
                "GET",
                target.url_for(ip),
                headers={"Host": target.host_header},
                extensions=target.extensions(),
            )
            try:
                return await self._http().send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                failures.append(f"{ip}: {str(exc) or type(exc).__name__}")
            except httpx.HTTPError as exc:
                raise SourceError(
                    f"Fetching {target.url!r} failed: {str(exc) or type(exc).__name__}."
                ) from exc
            except httpx.InvalidURL as exc:
                raise SourceError(f"Refused to fetch {target.url!r}: it is not a valid URL ({exc}).") from exc
        raise SourceError(
            f"Could not connect to {target.host_header} for {target.url!r} ({'; '.join(failures)}). "
            f"The site may be down; try again later."
        )

    async def _read_body(self, response: httpx.Response, url: str) -> bytes:
        too_large = SourceError(
            f"{url!r} is larger than {self._max_bytes:,} bytes (after decompression), so it was not "
            f"read. Look for a smaller page (an abstract, a single chapter) or raise the size limit."
        )
        encoding = response.headers.get("content-encoding", "identity")
        declared = response.headers.get("content-length", "")
        if encoding == "identity" and declared.isdigit() and int(declared) > self._max_bytes:
            raise too_large
        decoder = _BoundedDecoder(encoding, url)
        body = bytearray()
        async for chunk in response.aiter_raw():
            body += decoder.decode(chunk, limit=self._max_bytes - len(body) + 1)
            if len(body) > self._max_bytes:
                raise too_large
        return bytes(body)


class _BoundedDecoder:
    """Undo a Content-Encoding without ever producing more than `limit` bytes per call.

    httpx's own decoders inflate each network chunk completely; a 64 KiB chunk of a gzip bomb
    can hold some 60 MB, so decompression is done here with zlib's ``max_length``.
    """

    def __init__(self, encoding: str, url: str) -> None:
        self._url = url
        self._raw_deflate_fallback = False
        name = encoding.strip().lower()
        if name in ("", "identity"):
            self._zlib = None
        elif name in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif name == "deflate":
            self._zlib = zlib.decompressobj()
            self._raw_deflate_fallback = True  # some servers send deflate without the zlib header
        else:
            raise SourceError(f"{url!r} was sent with an unsupported Content-Encoding {encoding!r}.")

    def decode(self, chunk: bytes, *, limit: int) -> bytes:
        if self._zlib is None:
            return chunk
        # Output below `limit` means all input was consumed; at `limit` the caller stops reading.
        try:
            output = self._zlib.decompress(chunk, limit)
        except zlib.error as exc:
            if not self._raw_deflate_fallback:
                raise SourceError(f"The compressed body of {self._url!r} is corrupt ({exc}).") from exc
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            self._raw_deflate_fallback = False
            return self.decode(chunk, limit=limit)
        self._raw_deflate_fallback = False
        return output


def _ascii_host(hostname: str) -> str | None:
    """The host as it goes on the wire: IP literals as they are, names IDNA-encoded."""
    if hostname.isascii():
        return hostname
    try:
        return httpx.URL(f"http://{hostname}/").raw_host.decode("ascii")
    except httpx.InvalidURL:
        return None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True

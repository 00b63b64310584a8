"""MCP over streamable HTTP: where to bind, who may call, and which Host and Origin headers pass.

Three rules keep a remote server safe:

- Loopback by default. Serving on any other address (a LAN address, `0.0.0.0`, `::`, a host name
  other than `localhost`) needs RESEARCH_MCP_HTTP_TOKEN; `refusal` says so before anything binds.
  Whether an address is loopback is decided on the parsed address (`ipaddress`, and `inet_aton` for
  the legacy IPv4 spellings a socket accepts, such as `0` or `127.1`), and the address bound is that
  parsed one, so what is checked is what is served.
- With a token set, every request carries `Authorization: Bearer <token>` or gets 401
  (`BearerTokenMiddleware`, compared in constant time). RESEARCH_MCP_HTTP_TOKENS gives each user a
  token of their own ("name=token,..."); the request then goes on as that user (the ASGI `user`,
  which the SDK binds sessions to, and research_mcp/core/callers.py binds plans, runs and tasks to).
  RESEARCH_MCP_HTTP_TOKEN alone is one user, `token`.
- DNS-rebinding protection: the SDK's transport security refuses a Host header (421) or an Origin
  (403) naming anything but this machine's loopback names, the bound address, and the names in
  RESEARCH_MCP_HTTP_ALLOWED_HOSTS (for a reverse proxy that forwards its public name).
"""

from __future__ import annotations

import copy
import hmac
import ipaddress
import logging
import re
import socket
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from research_mcp.core.config import Settings

__all__ = [
    "BearerTokenMiddleware",
    "BindAddress",
    "build_app",
    "parse_bind",
    "refusal",
    "serve_http",
    "transport_security",
]

logger = logging.getLogger(__name__)

MIN_TOKEN_LENGTH = 16
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
TOKEN_HINT = (
    "set a long random token, e.g. "
    "export RESEARCH_MCP_HTTP_TOKEN=\"$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')\", "
    "and give clients the header 'Authorization: Bearer <token>'"
)
_HOST_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$", re.I)


@dataclass(frozen=True)
class BindAddress:
    """Where `serve --http` listens: `host` is what is bound (a canonical address, or a host name)."""

    host: str
    port: int
    loopback: bool

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def url(self) -> str:
        return f"http://{self.url_host}:{self.port}/mcp"

    @property
    def unspecified(self) -> bool:
        """Bound to every interface (`0.0.0.0`, `::`): clients use names this process cannot know."""
        return self.host in ("0.0.0.0", "::")


def _classify(host: str) -> tuple[str, bool]:
    """The address to bind for a host as written, and whether it is loopback."""
    if any(char.isspace() for char in host):
        raise ValueError(f"{host!r} is neither an IP address nor a host name")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1 (3.11 calls it not loopback)
        return str(address), address.is_loopback
    if host.lower().rstrip(".") == "localhost":
        return "127.0.0.1", True  # bind what was judged, whatever /etc/hosts says
    if "%" not in host:
        try:  # what a socket accepts as IPv4: 0, 127.1, 0x7f.1, 2130706433, 0177.0.0.1
            packed = socket.inet_aton(host)
        except OSError:
            pass
        else:
            legacy = ipaddress.IPv4Address(packed)
            return str(legacy), legacy.is_loopback
    if not _HOST_NAME.match(host):
        raise ValueError(f"{host!r} is neither an IP address nor a host name")
    return host.lower(), False  # a name may resolve anywhere: treated as reachable from elsewhere


def parse_bind(value: str) -> BindAddress:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT` → where to listen (`PORT` alone means 127.0.0.1)."""
    text = value.strip()
    if text.isdigit():
        host, port_text = "127.0.0.1", text
    elif text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise ValueError(f"{value!r}: write an IPv6 address as [ADDRESS]:PORT, e.g. [::1]:8000")
        host, port_text = inside, rest[1:]
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise ValueError(f"{value!r}: give HOST:PORT or a port alone, e.g. 127.0.0.1:8000 or 8000")
        if ":" in host:
            raise ValueError(f"{value!r}: write an IPv6 address in brackets, e.g. [::1]:8000")
    if not host:
        raise ValueError(f"{value!r}: give a host before the port, e.g. 127.0.0.1:8000, or the port alone")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"{value!r}: the port must be a number from 1 to 65535")
    canonical, loopback = _classify(host)
    return BindAddress(canonical, int(port_text), loopback)


SINGLE_USER = "token"  # the user RESEARCH_MCP_HTTP_TOKEN names


def _tokens(settings: Settings) -> dict[str, str]:
    """Each user's token: RESEARCH_MCP_HTTP_TOKENS, and RESEARCH_MCP_HTTP_TOKEN as the user `token`."""
    tokens = {name: secret.get_secret_value() for name, secret in settings.http_tokens.items()}
    if settings.http_token is not None:
        tokens.setdefault(SINGLE_USER, settings.http_token.get_secret_value())
    return tokens


def refusal(settings: Settings, bind: BindAddress) -> str | None:
    """Why `serve --http` must not start with these settings on this address, or None."""
    tokens = _tokens(settings)
    for name, token in tokens.items():
        if len(token) < MIN_TOKEN_LENGTH:
            variable = "RESEARCH_MCP_HTTP_TOKEN" if name == SINGLE_USER else f"the token of {name!r}"
            return f"{variable} has {len(token)} characters; use at least {MIN_TOKEN_LENGTH}: {TOKEN_HINT}."
    if tokens:
        return None
    if not bind.loopback:
        return (
            f"refusing to serve on {bind.url_host}:{bind.port} without a token: that address is reachable "
            f"from other machines. Either {TOKEN_HINT}; or serve on this machine only with "
            f"--http 127.0.0.1:{bind.port}."
        )
    remote = [host for host in settings.http_allowed_hosts if not _loopback_entry(host)]
    if remote:
        return (
            f"RESEARCH_MCP_HTTP_ALLOWED_HOSTS names {', '.join(remote)}, so clients reach this server from "
            f"elsewhere (through a proxy): {TOKEN_HINT}."
        )
    return None


def _loopback_entry(entry: str) -> bool:
    name = entry[1:].partition("]")[0] if entry.startswith("[") else entry.rpartition(":")[0] or entry
    try:
        return _classify(name)[1]
    except ValueError:
        return False


def transport_security(settings: Settings, bind: BindAddress) -> TransportSecuritySettings:
    """DNS-rebinding protection: the Host and Origin headers that name this server."""
    names = list(LOOPBACK_NAMES)
    if bind.unspecified:
        names.append(socket.gethostname().lower())  # no DNS lookup: only the name this machine gives
    elif bind.url_host not in names:
        names.append(bind.url_host)
    hosts = [form for name in names for form in (name, f"{name}:*")]
    origins = [f"{scheme}://{form}" for scheme in ("http", "https") for form in hosts]
    for entry in settings.http_allowed_hosts:  # "name" (any port) or "name:port"
        has_port = entry.rpartition(":")[2].isdigit() and not entry.endswith("]")
        forms = [entry] if has_port else [entry, f"{entry}:*"]
        hosts += forms
        origins += [f"{scheme}://{form}" for scheme in ("http", "https") for form in forms]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(hosts)),
        allowed_origins=list(dict.fromkeys(origins)),
    )


class BearerTokenMiddleware:
    """Every HTTP request must carry `Authorization: Bearer <token>` of a user; anything else gets
    401. The request goes on as that user (`scope["user"]`)."""

    def __init__(self, app: ASGIApp, token: str | dict[str, str]) -> None:
        self.app = app
        tokens = {SINGLE_USER: token} if isinstance(token, str) else token
        self._tokens = [(name, value.encode("utf-8")) for name, value in tokens.items()]

    def _user(self, presented: bytes) -> str | None:
        """The user whose token this is; every token is compared, so the time says nothing of which."""
        found = None
        for name, token in self._tokens:
            if hmac.compare_digest(presented, token):
                found = name
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        presented = self._presented(scope)
        name = self._user(presented) if presented is not None else None
        if name is not None:
            user = AuthenticatedUser(AccessToken(token="", client_id=name, scopes=[]))
            await self.app({**scope, "user": user}, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        challenge = 'Bearer realm="research-mcp"'
        if presented is not None:
            challenge += ', error="invalid_token"'
        response = PlainTextResponse(
            "Unauthorized: send the header 'Authorization: Bearer <RESEARCH_MCP_HTTP_TOKEN>'.",
            status_code=401,
            headers={"WWW-Authenticate": challenge},
        )
        await response(scope, receive, send)

    @staticmethod
    def _presented(scope: Scope) -> bytes | None:
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                scheme, _, credentials = value.strip().partition(b" ")
                if scheme.lower() == b"bearer" and credentials.strip():
                    return bytes(credentials.strip())
                return None
        return None


def build_app(settings: Settings, bind: BindAddress, server: Any = None) -> ASGIApp:
    """The ASGI app: the MCP server's streamable HTTP endpoint at /mcp, behind the token if one is set."""
    if server is None:
        from research_mcp.server.app import create_server

        server = create_server(settings)
    app: ASGIApp = server.streamable_http_app(transport_security=transport_security(settings, bind))
    tokens = _tokens(settings)
    return BearerTokenMiddleware(app, tokens) if tokens else app


def _log_config() -> dict[str, Any]:
    """uvicorn's logging with the access log moved to stderr like everything else."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def serve_http(settings: Settings, bind: BindAddress) -> None:
    """Serve until interrupted (SIGINT or SIGTERM stop it cleanly; unfinished runs resume later)."""
    import uvicorn

    app = build_app(settings, bind)
    security = transport_security(settings, bind)
    logger.info(
        "MCP over streamable HTTP at %s; %s; Host headers accepted: %s",
        bind.url,
        f"bearer token required ({len(_tokens(settings))} users)"
        if _tokens(settings)
        else "no token (this machine only)",
        ", ".join(host for host in security.allowed_hosts if not host.endswith(":*")),
    )
    uvicorn.run(
        app,
        host=bind.host,
        port=bind.port,
        log_config=_log_config(),
        lifespan="on",
        ws="none",
        server_header=False,
        timeout_graceful_shutdown=5,
    )

"""Who sent a request: the peer that connected, and the address a trusted proxy forwards.

uvicorn's own handling of X-Forwarded-For replaces the peer's address with the forwarded one,
so the peer is lost, and a proxy on this machine that passes a client's header through lets
each request claim a new address. recon reads the header itself instead (uvicorn's is turned
off in `recon web`): from a peer in RECON_TRUSTED_PROXIES the forwarded address becomes the
request's client (what logs and pages see), and the peer is kept beside it, so the admin
token's limiter counts a guess against both (app.auth_limits).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any, Final

from litestar.connection import ASGIConnection

#: Where the wrapper keeps the connecting peer's address in the ASGI scope, when the client
#: address was taken from X-Forwarded-For.
PEER_SCOPE_KEY: Final = "recon.peer"

#: Any ASGI application (Litestar's own type is a union no plain callable matches).
ASGIApp = Any
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def forwarded_clients(app: ASGIApp, trusted: Sequence[str]) -> ASGIApp:
    """`app`, with the client of a request from a trusted peer taken from X-Forwarded-For: the
    nearest address in it that is not itself a trusted proxy."""
    networks = tuple(ipaddress.ip_network(t, strict=False) for t in trusted)

    async def resolved(scope: dict[str, Any], receive: Any, send: Any) -> None:
        client = scope.get("client")
        if networks and scope["type"] in ("http", "websocket") and client:
            peer = client[0]
            forwarded = _forwarded_for(scope)
            if forwarded and _trusted(peer, networks):
                found = _nearest_untrusted(forwarded, networks)
                if found is not None and found != peer:
                    scope = {**scope, "client": (found, 0), PEER_SCOPE_KEY: peer}
        await app(scope, receive, send)

    return resolved


def client_addresses(connection: ASGIConnection[Any, Any, Any, Any]) -> tuple[str, ...]:
    """Every address a request is counted against: its client and, when that came from a
    trusted proxy's X-Forwarded-For, the proxy (the peer) as well."""
    client = connection.client.host if connection.client else "unknown"
    peer = connection.scope.get(PEER_SCOPE_KEY)
    return (client,) if peer is None or peer == client else (client, str(peer))


def _forwarded_for(scope: dict[str, Any]) -> list[str]:
    hops: list[str] = []
    for name, value in scope.get("headers", ()):
        if name == b"x-forwarded-for":
            hops.extend(h.strip() for h in value.decode("latin-1").split(","))
    return [h for h in hops if h]


def _trusted(address: str, networks: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def _nearest_untrusted(hops: list[str], networks: tuple[IPNetwork, ...]) -> str | None:
    """The right-most hop that is no trusted proxy and is an IP address (the first one a proxy
    of ours did not write); None when none is."""
    for hop in reversed(hops):
        if _trusted(hop, networks):
            continue
        try:
            return str(ipaddress.ip_address(hop))
        except ValueError:
            return None
    return None

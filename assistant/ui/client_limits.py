"""The chat's rate limit per client address, next to the per-session one in session.py.

A Gradio session id is chosen by the client, so a limit per session alone is escaped by
opening fresh sessions. This one counts messages per address: the connecting peer's, or,
when that peer is one of the trusted proxies (`SIZING_TRUSTED_PROXIES`), the address that
proxy put in X-Forwarded-For; a forwarded header from anyone else is ignored, since any
client can send one. IPv6 clients count per /64 (one host is routinely given a whole /64).
The table of addresses is bounded (the least recently seen are forgotten first).
"""

from __future__ import annotations

import ipaddress
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assistant.settings import IpNetwork
from assistant.ui.session import RATE_WINDOW_S

if TYPE_CHECKING:
    from assistant.settings import Settings

# Addresses remembered at once; each costs about 1 KB with a full minute of message times.
MAX_TRACKED_CLIENTS = 20_000
UNKNOWN_CLIENT = "unknown"


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, proxies: tuple[IpNetwork, ...]) -> bool:
    return any(address in network for network in proxies)


def _key(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def client_key(peer: str | None, forwarded_for: str | None, proxies: tuple[IpNetwork, ...]) -> str:
    """The address the limit counts: the peer, or the nearest untrusted hop a trusted proxy forwarded."""
    address = _address(peer or "")
    if address is None:
        return UNKNOWN_CLIENT
    if forwarded_for and _trusted(address, proxies):
        # X-Forwarded-For lists client, proxy1, proxy2...; each proxy appends the peer it saw,
        # so reading from the right, the first hop that is not a trusted proxy is the client.
        for hop in reversed(forwarded_for.split(",")):
            forwarded = _address(hop)
            if forwarded is None:
                break  # a malformed hop: trust nothing to its left
            address = forwarded
            if not _trusted(forwarded, proxies):
                break
    return _key(address)


def request_client_key(request: Any, proxies: tuple[IpNetwork, ...]) -> str:
    """client_key for a gr.Request (or any object with .client.host and .headers)."""
    client = getattr(request, "client", None)
    headers = getattr(request, "headers", None) or {}
    return client_key(getattr(client, "host", None), headers.get("x-forwarded-for"), proxies)


class ClientRateLimiter:
    """At most `limit_per_minute` messages per client address over a sliding minute; thread-safe."""

    def __init__(self, limit_per_minute: int, max_clients: int = MAX_TRACKED_CLIENTS) -> None:
        self.limit_per_minute = limit_per_minute
        self.max_clients = max_clients
        self._sent: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def admit(self, key: str, now: float) -> float:
        """0 and the message counted when allowed; otherwise the seconds until it will be (not counted)."""
        with self._lock:
            sent = self._sent.get(key)
            if sent is None:
                sent = self._sent[key] = deque()
                while len(self._sent) > self.max_clients:
                    self._sent.popitem(last=False)
            self._sent.move_to_end(key)
            while sent and now - sent[0] >= RATE_WINDOW_S:
                sent.popleft()
            if len(sent) >= self.limit_per_minute:
                return max(0.0, RATE_WINDOW_S - (now - sent[-self.limit_per_minute]))
            sent.append(now)
            return 0.0

    @property
    def tracked_clients(self) -> int:
        return len(self._sent)


@dataclass(frozen=True)
class ClientGate:
    """One request's view of the limiter: the handlers call `admit(now)` for a message they would answer."""

    limiter: ClientRateLimiter
    key: str

    @property
    def limit_per_minute(self) -> int:
        return self.limiter.limit_per_minute

    def admit(self, now: float) -> float:
        return self.limiter.admit(self.key, now)


GateFactory = Callable[[Any], ClientGate]


def client_gates(settings: Settings) -> GateFactory:
    """One limiter for a served app (the page and the widget share it): request -> its client's gate."""
    limiter = ClientRateLimiter(settings.client_rate_limit)
    proxies = settings.trusted_proxy_networks

    def gate(request: Any) -> ClientGate:
        return ClientGate(limiter, request_client_key(request, proxies))

    return gate

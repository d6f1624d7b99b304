"""Fetches the server makes of URLs that users name (issue 47: server-side request forgery).

A URL's host is resolved once and every address it has must be public, unless named in
CROWDVL_FETCH_ALLOW_PRIVATE; the connection then goes to that checked address (the name is
not looked up again, so a name that answers a public address to the check and a private one
to the connection, DNS rebinding, reaches nothing new), with the host name kept for the Host
header and the TLS certificate check. Redirects are never followed by the HTTP library: at
most REDIRECTS of them are followed here, each target checked as the first URL was. When
CROWDVL_IMAGE_HOSTS is set only those hosts are fetched from."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

import certifi
import urllib3
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

REDIRECTS = 3
_REDIRECT_CODES = {301, 302, 303, 307, 308}
# Ranges Python's flags (3.11) do not all call private but that are not the public Internet:
# carrier-grade NAT, IETF protocol assignments, benchmarking, local-use NAT64, and the
# deprecated IPv4-compatible IPv6 block.
_NOT_PUBLIC = [
    ipaddress.ip_network(n)
    for n in ("100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "64:ff9b:1::/48", "::/96")
]
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class FetchFailed(Exception):
    """The URL could not be fetched; the message says why (a job records it)."""


class FetchRefused(FetchFailed):
    """The URL names a host or an address the server must not fetch from."""


@dataclass(frozen=True)
class Target:
    """A checked URL: where the connection goes (`address`) and what it asks for."""

    scheme: str
    host: str
    port: int
    address: str
    path: str


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries to (mapped, NAT64, 6to4, Teredo), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def address_refusal(ip: IPAddress) -> str | None:
    """Why `ip` is not a public address, or None if it is."""
    inner = _embedded_ipv4(ip)
    if inner is not None:
        why = address_refusal(inner)
        if why:
            return f"{why} inside {ip}"
    for kind, flag in (
        ("a loopback", ip.is_loopback),
        ("an unspecified", ip.is_unspecified),
        ("a link-local", ip.is_link_local),
        ("a multicast", ip.is_multicast),
        ("a private", ip.is_private),
        ("a reserved", ip.is_reserved),
    ):
        if flag:
            return f"{kind} address ({ip})"
    if not ip.is_global or any(ip.version == n.version and ip in n for n in _NOT_PUBLIC):
        return f"a non-public address ({ip})"
    return None


@lru_cache(maxsize=8)
def _allowances(entries: tuple[str, ...]) -> list[tuple[Network, int | None]]:
    """CROWDVL_FETCH_ALLOW_PRIVATE parsed: (network, port or None for any port)."""
    out: list[tuple[Network, int | None]] = []
    for entry in entries:
        port: int | None = None
        text = entry
        if text.startswith("["):
            text, _, rest = text[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") else None
        elif text.count(":") == 1:
            text, _, number = text.partition(":")
            port = int(number)
        out.append((ipaddress.ip_network(text, strict=False), port))
    return out


def _allowed(ip: IPAddress, port: int) -> bool:
    forms = [ip, *([inner] if (inner := _embedded_ipv4(ip)) is not None else [])]
    return any(
        form.version == network.version and form in network and only in (None, port)
        for network, only in _allowances(tuple(settings.CROWDVL_FETCH_ALLOW_PRIVATE))
        for form in forms
    )


def host_refusal(host: str) -> str | None:
    """Why `host` is outside CROWDVL_IMAGE_HOSTS (None when it is listed or the list empty).
    An entry "*.example.org" stands for every subdomain of example.org."""
    listed = settings.CROWDVL_IMAGE_HOSTS
    name = host.lower().rstrip(".")
    if not listed or any(
        name.endswith(entry[1:]) if entry.startswith("*.") else name == entry for entry in listed
    ):
        return None
    return f"host {host!r} is not one of the hosts images may come from (CROWDVL_IMAGE_HOSTS)"


def _split(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an http(s) URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise FetchRefused("not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchRefused("not an http(s) URL")
    if not parts.hostname:
        raise FetchRefused("the URL names no host")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80), path


def _resolved(host: str, port: int) -> list[IPAddress]:
    """Every address `host` has (an IP literal in any spelling the resolver accepts, such as
    2130706433 or 0x7f.1, is its own address)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise FetchFailed(f"host {host!r} does not resolve") from None
    found: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    if not found:
        raise FetchFailed(f"host {host!r} does not resolve")
    return found


def target_checked(url: str) -> Target:
    """`url` checked: an http(s) URL whose host is allowed and whose every address is public
    (or allowed by CROWDVL_FETCH_ALLOW_PRIVATE). FetchRefused says why not; FetchFailed if
    the host does not resolve."""
    scheme, host, port, path = _split(url)
    why = host_refusal(host)
    if why:
        raise FetchRefused(why)
    addresses = _resolved(host, port)
    for ip in addresses:
        why = None if _allowed(ip, port) else address_refusal(ip)
        if why:
            raise FetchRefused(f"host {host!r} is {why}; the server fetches only from public hosts")
    return Target(scheme=scheme, host=host, port=port, address=str(addresses[0]), path=path)


def url_refusal(url: str) -> str | None:
    """Why an import must not name `url`, or None. A host that does not resolve now is not
    refused (the server may be offline): every fetch checks it again."""
    try:
        target_checked(url)
    except FetchRefused as exc:
        return str(exc)
    except FetchFailed:
        return None
    return None


def _pool(target: Target, timeout: tuple[float, float]) -> urllib3.HTTPConnectionPool:
    limits = urllib3.Timeout(connect=timeout[0], read=timeout[1])
    if target.scheme == "https":
        # Connected to the checked address; the certificate is checked against the host name.
        return urllib3.HTTPSConnectionPool(
            target.address,
            target.port,
            timeout=limits,
            retries=False,
            maxsize=1,
            cert_reqs="CERT_REQUIRED",
            ca_certs=certifi.where(),
            server_hostname=target.host,
            assert_hostname=target.host,
        )
    return urllib3.HTTPConnectionPool(target.address, target.port, timeout=limits, retries=False)


def _host_header(target: Target) -> str:
    name = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return name if target.port == default else f"{name}:{target.port}"


def fetch(url: str, *, max_bytes: int, timeout: tuple[float, float] = (5, 20)) -> bytes:
    """GET `url` with timeouts and a size cap, from public addresses only (see the module's
    text); FetchRefused or FetchFailed says why not."""
    for _ in range(REDIRECTS + 1):
        target = target_checked(url)
        with _pool(target, timeout) as pool:
            try:
                response = pool.urlopen(
                    "GET",
                    target.path,
                    headers={"Host": _host_header(target), "User-Agent": "crowdvl-images"},
                    redirect=False,
                    retries=False,
                    preload_content=False,
                    assert_same_host=False,
                )
                if response.status in _REDIRECT_CODES:
                    location = response.headers.get("Location")
                    response.release_conn()
                    if not location:
                        raise FetchFailed(f"HTTP {response.status} without a Location")
                    url = urljoin(url, location)
                    continue
                if response.status != 200:
                    raise FetchFailed(f"HTTP {response.status}")
                return _body(response, max_bytes)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                raise FetchFailed(type(exc).__name__) from None
    raise FetchFailed(f"more than {REDIRECTS} redirects")


def _body(response: urllib3.BaseHTTPResponse, max_bytes: int) -> bytes:
    data = bytearray()
    for chunk in response.stream(64 * 1024):
        data.extend(chunk)
        if len(data) > max_bytes:
            raise FetchFailed("too large")
    return bytes(data)


__all__ = ["FetchFailed", "FetchRefused", "address_refusal", "fetch", "url_refusal"]

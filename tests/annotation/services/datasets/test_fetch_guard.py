"""Issue 47: the server fetches images from public addresses only, redirects included.

The attacks run against a real HTTP server on loopback. That server is the one address the
tests allow (CROWDVL_FETCH_ALLOW_PRIVATE names its port only, as a lab would name its own image
server); what it redirects to, another loopback server, is not allowed and must never receive
a request. Host names other than "localhost" are made up by replacing socket.getaddrinfo, the
resolver's outermost call, which both the old fetch (requests) and the new one call."""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image as PILImage

from annotation.services.datasets import fetch_guard
from annotation.services.datasets.fetch_guard import (
    FetchFailed,
    FetchRefused,
    address_refusal,
    fetch,
)
from annotation.services.datasets.images import ImageUnavailable, download


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (8, 8), (9, 9, 9)).save(out, format="PNG")
    return out.getvalue()


class Server:
    """A loopback HTTP server: `routes` maps a path to (status, Location or None); any other
    path answers a PNG. `requests` lists (path, Host header) received."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, str | None]] = {}
        self.requests: list[tuple[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                owner.requests.append((self.path, self.headers.get("Host", "")))
                status, location = owner.routes.get(self.path, (200, None))
                body = _png() if status == 200 else b""
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers(settings) -> Iterator[tuple[Server, Server]]:
    """(allowed, inner): only `allowed`'s port is allowed although on loopback; `inner`
    stands for what an attacker wants reached (the app itself, a metadata service)."""
    allowed, inner = Server(), Server()
    settings.CROWDVL_FETCH_ALLOW_PRIVATE = [f"127.0.0.1:{allowed.port}"]
    yield allowed, inner
    allowed.close()
    inner.close()


def _resolving(monkeypatch, answers: dict[str, list[list[str]]]) -> list[str]:
    """socket.getaddrinfo answering made-up names: each lookup of a name takes the next list
    of addresses (the last one repeats); other names resolve as usual. Returns the names
    looked up."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def fake(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in answers:
            return real(host, port, *args, **kwargs)
        asked.append(name)
        queue = answers[name]
        addresses = queue.pop(0) if len(queue) > 1 else queue[0]
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, int(port or 80))) for ip in addresses
        ]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return asked


def test_a_redirect_to_loopback_is_refused_and_its_target_never_asked(servers):
    allowed, inner = servers
    allowed.routes["/cat.jpg"] = (302, f"{inner.url}/secret")
    with pytest.raises(ImageUnavailable, match="loopback"):
        download(f"{allowed.url}/cat.jpg")
    assert inner.requests == []
    for target in ("http://169.254.169.254/latest/meta-data/", "http://[::1]:8000/admin/"):
        allowed.routes["/meta.jpg"] = (301, target)
        with pytest.raises(FetchRefused):
            fetch(f"{allowed.url}/meta.jpg", max_bytes=1000)


def test_redirects_within_allowed_hosts_are_followed_a_few_times_only(servers):
    allowed, _ = servers
    allowed.routes["/a"] = (302, "/b")
    allowed.routes["/b"] = (307, f"{allowed.url}/img.png")
    assert fetch(f"{allowed.url}/a", max_bytes=10_000) == _png()
    allowed.routes["/loop"] = (302, "/loop")
    with pytest.raises(FetchFailed, match="more than 3 redirects"):
        fetch(f"{allowed.url}/loop", max_bytes=10_000)
    assert [p for p, _ in allowed.requests].count("/loop") == 4


def test_loopback_is_never_fetched_without_an_allowance(servers, settings):
    _, inner = servers
    for url in (
        f"{inner.url}/x",
        f"http://localhost:{inner.port}/x",
        f"http://2130706433:{inner.port}/x",
    ):
        with pytest.raises(ImageUnavailable, match="loopback"):
            download(url)
    assert inner.requests == []
    settings.CROWDVL_FETCH_ALLOW_PRIVATE = []
    with pytest.raises(ImageUnavailable, match="loopback"):
        download(f"{servers[0].url}/x")


def test_every_address_a_name_resolves_to_is_checked(servers, monkeypatch):
    """A name with one allowed and one loopback address is refused, whichever comes first."""
    allowed, _ = servers
    _resolving(monkeypatch, {"images.example.org": [["127.0.0.1", "127.0.0.2"]]})
    with pytest.raises(ImageUnavailable, match=r"127\.0\.0\.2"):
        download(f"http://images.example.org:{allowed.port}/x.jpg")
    assert allowed.requests == []


def test_the_connection_goes_to_the_address_checked(servers, monkeypatch):
    """DNS rebinding: the name answers the allowed address to the first lookup and a refused
    one afterwards; the fetch looks it up once and connects there, with the name as Host."""
    allowed, _ = servers
    asked = _resolving(monkeypatch, {"rebind.example.org": [["127.0.0.1"], ["127.0.0.2"]]})
    assert fetch(f"http://rebind.example.org:{allowed.port}/p.png", max_bytes=10_000) == _png()
    assert asked == ["rebind.example.org"]
    assert allowed.requests == [("/p.png", f"rebind.example.org:{allowed.port}")]


def test_the_host_list_is_enforced_for_the_first_url_and_each_redirect(
    servers, settings, monkeypatch
):
    allowed, _ = servers
    _resolving(
        monkeypatch, {"images.example.org": [["127.0.0.1"]], "other.example.net": [["127.0.0.1"]]}
    )
    settings.CROWDVL_IMAGE_HOSTS = ["*.example.org"]
    assert fetch(f"http://images.example.org:{allowed.port}/ok.png", max_bytes=10_000)
    with pytest.raises(FetchRefused, match="CROWDVL_IMAGE_HOSTS"):
        fetch(f"http://other.example.net:{allowed.port}/x", max_bytes=10_000)
    allowed.routes["/away"] = (302, f"http://other.example.net:{allowed.port}/x")
    with pytest.raises(FetchRefused, match="CROWDVL_IMAGE_HOSTS"):
        fetch(f"http://images.example.org:{allowed.port}/away", max_bytes=10_000)
    assert [p for p, _ in allowed.requests] == ["/ok.png", "/away"]


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "240.0.0.1", "255.255.255.255", "::1", "::", "fe80::1",
        "fc00::1", "fd12::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "::7f00:1",
    ],
)  # fmt: skip
def test_non_public_addresses_are_named(address):
    import ipaddress

    assert address_refusal(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "151.101.1.1", "2606:4700::1111"])
def test_public_addresses_pass(address):
    import ipaddress

    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "host", ["2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.1", "[::ffff:7f00:1]", "localhost"]
)
def test_other_spellings_of_loopback_are_refused(host):
    assert "loopback" in (fetch_guard.url_refusal(f"http://{host}/x.jpg") or "")


def test_a_name_that_does_not_resolve_is_not_refused_at_import_but_fails_to_fetch():
    assert fetch_guard.url_refusal("http://no-such-host.invalid/x.jpg") is None
    with pytest.raises(FetchFailed, match="does not resolve"):
        fetch("http://no-such-host.invalid/x.jpg", max_bytes=10)

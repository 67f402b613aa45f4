"""The guarded fetcher against the hostile local server: refusals, caps, deadline and redirects."""

from __future__ import annotations

import socket
import tracemalloc
from collections.abc import Iterator

import pytest

from sources.fetch.fetcher import FetchError, GuardedFetcher
from tests.servers.hostile_http import HostileServer

LOOPBACK = frozenset({"127.0.0.1", "localhost"})


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as running:
        yield running


def fetch(url: str, **options: object) -> FetchError:
    """The FetchError a fetch of `url` raises (it must raise one)."""
    with pytest.raises(FetchError) as caught:
        GuardedFetcher(**options).get(url)  # type: ignore[arg-type]
    return caught.value


def test_loopback_is_refused_without_an_allow_list(server: HostileServer) -> None:
    error = fetch(server.url("/rss"))

    assert str(error) == "refused address 127.0.0.1 (loopback) for host 127.0.0.1"
    assert server.requests_to("/rss") == []


def test_an_allowed_host_is_fetched(server: HostileServer) -> None:
    result = GuardedFetcher(allow_hosts=LOOPBACK).get(server.url("/rss"))

    assert (result.url, result.status) == (server.url("/rss"), 200)
    assert b"<rss" in result.body
    assert result.headers["content-type"] == "application/xml"
    assert server.requests_to("/rss")[0].headers["User-Agent"].startswith("blackwidow/")


def test_a_redirect_into_a_refused_host_is_refused(server: HostileServer) -> None:
    target = f"http://localhost:{server.port}/rss"
    error = fetch(server.url(f"/redirect?to={target}"), allow_hosts=frozenset({"127.0.0.1"}))

    assert "(loopback) for host localhost" in str(error)
    assert server.requests_to("/rss") == []


def test_redirects_to_another_port_and_relative_ones_are_followed(server: HostileServer) -> None:
    with HostileServer() as other:
        start = server.url(f"/redirect?to={other.url('/relative-redirect')}")
        result = GuardedFetcher(allow_hosts=LOOPBACK).get(start)

    assert (result.url, result.status) == (other.url("/rss"), 200)


def test_a_redirect_loop_stops(server: HostileServer) -> None:
    error = fetch(server.url("/redirect-loop"), allow_hosts=LOOPBACK)

    assert str(error) == "too many redirects (more than 5)"
    assert len(server.requests_to("/redirect-loop")) == 6


def test_a_huge_body_stops_at_the_cap(server: HostileServer) -> None:
    error = fetch(server.url("/huge"), allow_hosts=LOOPBACK)

    assert str(error) == "response larger than 5242880 bytes"


def test_a_gzip_bomb_stops_at_the_cap_without_inflating(server: HostileServer) -> None:
    cap = 1024 * 1024
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK, max_bytes=cap)
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match=f"response larger than {cap} bytes"):
            fetcher.get(server.url("/gzip-bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 4 * cap  # the bomb inflates to 64 MiB


def test_a_trickling_body_hits_the_deadline(server: HostileServer) -> None:
    error = fetch(server.url("/trickle"), allow_hosts=LOOPBACK, deadline=1.0)

    assert str(error) == "no complete response within 1s"


def test_a_server_error_is_a_fetch_error(server: HostileServer) -> None:
    assert str(fetch(server.url("/error-500"), allow_hosts=LOOPBACK)) == "HTTP 500"


@pytest.mark.parametrize(
    ("request_header", "validator"),
    [
        ("If-None-Match", "ETag"),
        ("If-Modified-Since", "Last-Modified"),
    ],
)
def test_a_matching_validator_gives_304_with_no_body(
    server: HostileServer, request_header: str, validator: str
) -> None:
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK)
    first = fetcher.get(server.url("/atom"))

    again = fetcher.get(server.url("/atom"), {request_header: first.headers[validator]})

    assert (first.status, again.status, again.body) == (200, 304, b"")


def test_environment_proxies_are_ignored(
    server: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    assert GuardedFetcher(allow_hosts=LOOPBACK).get(server.url("/rss")).status == 200


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/feed", "gopher://x/"])
def test_only_http_and_https_are_fetched(url: str) -> None:
    assert str(fetch(url)).startswith("unsupported scheme '")


def test_a_closed_port_is_a_short_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    error = fetch(f"http://127.0.0.1:{port}/", allow_hosts=LOOPBACK)

    assert str(error).startswith("connection failed (")
    assert "HTTPConnectionPool" not in str(error)


REFUSED_ADDRESSES = [
    ("10.0.0.1", "private"),
    ("192.168.1.20", "private"),
    ("172.16.0.1", "private"),
    ("100.64.0.1", "shared"),
    ("169.254.169.254", "link-local"),
    ("224.0.0.1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("0.0.0.0", "unspecified"),
    ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fc00::1", "private"),
    ("ff02::1", "multicast"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:169.254.169.254", "link-local"),
    ("64:ff9b::a00:1", "private"),
    ("2002:a00:1::", "private"),
]


@pytest.mark.parametrize(("address", "kind"), REFUSED_ADDRESSES)
def test_internal_addresses_are_refused_after_resolution(
    address: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def resolve(host: str, port: object, *args: object, **kwargs: object) -> list:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, 80))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)

    error = fetch("https://feeds.example.com/rss")

    assert str(error) == f"refused address {address} ({kind}) for host feeds.example.com"


def test_a_name_that_rebinds_to_loopback_is_refused_at_connect(
    server: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_getaddrinfo = socket.getaddrinfo
    answers = iter(["93.184.216.34"])  # public for the first look-up, loopback afterwards

    def resolve(host: str, port: object, *args: object, **kwargs: object) -> list:
        if host != "rebind.example":
            return real_getaddrinfo(host, port, *args, **kwargs)
        address = next(answers, "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, server.port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)

    error = fetch(f"http://rebind.example:{server.port}/rss", allow_hosts=frozenset({"127.0.0.1"}))

    assert str(error) == "refused address 127.0.0.1 (loopback) for host rebind.example"
    assert server.requests_to("/rss") == []

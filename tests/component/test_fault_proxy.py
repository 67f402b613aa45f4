"""The fault proxy between a real `requests` client and a small real upstream on loopback:
each fault is checked on both sides, what the client saw and what the upstream received."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from tests.servers.fault_proxy import FaultProxy
from tests.support import wait_until

CLIENT_TIMEOUT = 5.0  # generous: only the partition tests expect a timeout, and set their own


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _UpstreamHandler(BaseHTTPRequestHandler):
    """Answers `answer <n>` (n counts requests so far); /empty answers with no body, /slow
    waits for the test to release it."""

    server: _UpstreamServer
    timeout = 10

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        count = self.server.record(Seen(self.command, self.path, dict(self.headers), body))
        if self.path == "/slow":
            self.server.release.wait(timeout=10)
        payload = b"" if self.path == "/empty" else f"answer {count}".encode()
        self.send_response(201 if self.command == "POST" else 200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-Upstream", "yes")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: test output is for the tests."""


class _UpstreamServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64  # the concurrency test must not wait on SYN retries

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _UpstreamHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.release = threading.Event()
        self._seen: list[Seen] = []
        self._lock = threading.Lock()

    def record(self, seen: Seen) -> int:
        with self._lock:
            self._seen.append(seen)
            return len(self._seen)

    @property
    def seen(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)


@pytest.fixture
def upstream() -> Iterator[_UpstreamServer]:
    server = _UpstreamServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def proxy(upstream: _UpstreamServer) -> Iterator[FaultProxy]:
    with FaultProxy(upstream.url) as proxy:
        yield proxy


@pytest.fixture
def session() -> Iterator[requests.Session]:
    """A keep-alive session, as the hub's and node's clients use."""
    with requests.Session() as session:
        yield session


def _get(session: requests.Session, url: str, **kwargs: object) -> requests.Response:
    return session.get(url, timeout=CLIENT_TIMEOUT, **kwargs)  # type: ignore[arg-type]


def _raw_request(proxy: FaultProxy, path: str = "/raw") -> socket.socket:
    """A bare socket with one request sent, to see exactly what the proxy writes back."""
    host, port = proxy.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=CLIENT_TIMEOUT)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_relays_requests_and_answers_unchanged(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    posted = session.post(
        proxy.url + "/push?node=3",
        data=b'{"items": []}',
        headers={"X-Cluster-Secret": "s3cret", "Content-Type": "application/json"},
        timeout=CLIENT_TIMEOUT,
    )
    polled = [_get(session, proxy.url + f"/poll/{n}") for n in range(3)]

    assert posted.status_code == 201
    assert posted.content == b"answer 1"
    assert posted.headers["X-Upstream"] == "yes"
    assert [r.text for r in polled] == ["answer 2", "answer 3", "answer 4"]
    first = upstream.seen[0]
    assert (first.method, first.path, first.body) == ("POST", "/push?node=3", b'{"items": []}')
    assert first.headers["X-Cluster-Secret"] == "s3cret"
    assert first.headers["Host"] == upstream.url.removeprefix("http://")
    assert [seen.path for seen in upstream.seen[1:]] == ["/poll/0", "/poll/1", "/poll/2"]
    assert proxy.forwarded == 4
    assert proxy.injected == {}


def test_head_and_empty_answers_pass_through(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    head = session.head(proxy.url + "/poll", timeout=CLIENT_TIMEOUT)
    empty = _get(session, proxy.url + "/empty")
    after = _get(session, proxy.url + "/poll")

    assert head.status_code == 200
    assert head.headers["Content-Length"] == str(len("answer 1"))
    assert empty.content == b""
    assert after.text == "answer 3"
    assert [seen.method for seen in upstream.seen] == ["HEAD", "GET", "GET"]


def test_drop_request_loses_the_request(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("drop_request")

    with pytest.raises(requests.ConnectionError):
        session.post(proxy.url + "/push", data=b"item", timeout=CLIENT_TIMEOUT)

    assert upstream.seen == []
    assert proxy.forwarded == 0
    assert proxy.injected == {"drop_request": 1}
    assert _get(session, proxy.url + "/push").text == "answer 1"


def test_drop_response_loses_the_answer_after_the_upstream_acted(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("drop_response")

    with pytest.raises(requests.ConnectionError):
        session.post(proxy.url + "/push", data=b"item", timeout=CLIENT_TIMEOUT)

    assert [(seen.method, seen.body) for seen in upstream.seen] == [("POST", b"item")]
    assert proxy.forwarded == 1
    assert proxy.injected == {"drop_response": 1}
    assert _get(session, proxy.url + "/poll").text == "answer 2"


def test_delay_holds_the_request_then_relays_it(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("delay", seconds=0.3)

    started_at = time.monotonic()
    response = _get(session, proxy.url + "/poll")
    took = time.monotonic() - started_at

    assert response.text == "answer 1"
    assert took >= 0.3
    assert len(upstream.seen) == 1
    assert proxy.injected == {"delay": 1}


def test_delay_longer_than_the_client_waits_still_reaches_the_upstream(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("delay", seconds=0.5)

    with pytest.raises(requests.ReadTimeout):
        session.get(proxy.url + "/push", timeout=0.1)

    wait_until(lambda: upstream.seen, timeout=5, what="the delayed request upstream")
    assert [seen.path for seen in upstream.seen] == ["/push"]


def test_duplicate_forwards_twice_and_answers_with_the_second(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("duplicate", method="POST")

    response = session.post(proxy.url + "/push", data=b"item-7", timeout=CLIENT_TIMEOUT)

    assert response.text == "answer 2"
    assert [(seen.method, seen.path, seen.body) for seen in upstream.seen] == [
        ("POST", "/push", b"item-7"),
        ("POST", "/push", b"item-7"),
    ]
    assert proxy.forwarded == 2
    assert proxy.injected == {"duplicate": 1}


def test_cut_breaks_the_body_off_halfway(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("cut")

    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        _get(session, proxy.url + "/poll")

    assert len(upstream.seen) == 1
    assert proxy.injected == {"cut": 1}
    assert _get(session, proxy.url + "/poll").text == "answer 2"


def test_cut_sends_headers_with_the_full_length_and_half_the_body(
    proxy: FaultProxy, upstream: _UpstreamServer
) -> None:
    proxy.add("cut")

    with _raw_request(proxy) as sock:
        head, _, body = _read_all(sock).partition(b"\r\n\r\n")

    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"Content-Length: 8" in head.split(b"\r\n")
    assert body == b"answer 1"[:4]
    assert len(upstream.seen) == 1


def test_hang_sends_half_the_body_then_goes_silent(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    """A feed server that stalls mid-body: the client's read timeout is what ends it."""
    proxy.add("hang", seconds=30)

    with pytest.raises(requests.ConnectionError):
        session.get(proxy.url + "/poll", timeout=(5, 0.5))

    assert len(upstream.seen) == 1
    assert proxy.injected == {"hang": 1}
    assert _get(session, proxy.url + "/poll").text == "answer 2"


def test_cut_of_an_empty_answer_breaks_the_status_line(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("cut")

    with pytest.raises(requests.ConnectionError):
        _get(session, proxy.url + "/empty")

    assert [seen.path for seen in upstream.seen] == ["/empty"]


def test_partition_blackholes_until_healed(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("drop_request", times=None)
    proxy.partition()

    with pytest.raises(requests.ReadTimeout):
        session.get(proxy.url + "/poll", timeout=0.5)

    assert upstream.seen == []
    assert proxy.injected == {"partition": 1}  # the partition wins; the rule was not spent
    proxy.heal()
    proxy.clear()
    assert _get(session, proxy.url + "/poll").text == "answer 1"
    assert proxy.injected == {"partition": 1}


def test_heal_closes_held_connections_unanswered(proxy: FaultProxy) -> None:
    proxy.partition()

    with _raw_request(proxy) as sock:
        wait_until(lambda: proxy.injected["partition"] == 1, timeout=5, what="a held request")
        proxy.heal()
        assert _read_all(sock) == b""


def test_partition_holds_answers_already_on_their_way(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(_get, session, proxy.url + "/slow")
        wait_until(lambda: upstream.seen, timeout=5, what="the request upstream")
        proxy.partition()
        upstream.release.set()
        wait_until(lambda: proxy.injected["partition"] == 1, timeout=5, what="a held answer")
        proxy.heal()
        with pytest.raises(requests.ConnectionError):
            pending.result(timeout=CLIENT_TIMEOUT)

    assert [seen.path for seen in upstream.seen] == ["/slow"]


def test_times_applies_exactly_that_many_times(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("drop_request", times=2)

    for _ in range(2):
        with pytest.raises(requests.ConnectionError):
            _get(session, proxy.url + "/poll")
    answers = [_get(session, proxy.url + "/poll").text for _ in range(2)]

    assert answers == ["answer 1", "answer 2"]
    assert proxy.injected == {"drop_request": 2}


def test_times_none_applies_until_cleared(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("drop_response", times=None)

    for _ in range(3):
        with pytest.raises(requests.ConnectionError):
            _get(session, proxy.url + "/poll")
    proxy.clear()

    assert _get(session, proxy.url + "/poll").text == "answer 4"
    assert proxy.injected == {"drop_response": 3}


def test_method_and_path_filters(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("drop_request", method="post", path="/subscribers", times=None)

    assert _get(session, proxy.url + "/subscribers").ok
    assert session.post(proxy.url + "/items", timeout=CLIENT_TIMEOUT).ok
    with pytest.raises(requests.ConnectionError):
        session.post(proxy.url + "/subscribers/7/attach", timeout=CLIENT_TIMEOUT)

    assert [(seen.method, seen.path) for seen in upstream.seen] == [
        ("GET", "/subscribers"),
        ("POST", "/items"),
    ]
    assert proxy.injected == {"drop_request": 1}


def test_rules_apply_in_order_one_per_request(
    proxy: FaultProxy, upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy.add("drop_request")
    proxy.add("duplicate")

    with pytest.raises(requests.ConnectionError):
        _get(session, proxy.url + "/poll")
    assert upstream.seen == []
    assert _get(session, proxy.url + "/poll").text == "answer 2"

    assert len(upstream.seen) == 2
    assert proxy.injected == {"drop_request": 1, "duplicate": 1}


def test_concurrent_requests_are_relayed_independently(
    proxy: FaultProxy, upstream: _UpstreamServer
) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(
            pool.map(lambda n: requests.get(f"{proxy.url}/poll/{n}", timeout=5), range(32))
        )

    assert all(answer.status_code == 200 for answer in answers)
    assert len(upstream.seen) == 32
    assert proxy.forwarded == 32


@pytest.mark.parametrize(
    "url",
    ["http://example.com", "http://10.0.0.1:80", "https://127.0.0.1:443", "ftp://127.0.0.1/"],
)
def test_refuses_upstreams_off_loopback(url: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        FaultProxy(url)
    with FaultProxy() as proxy, pytest.raises(ValueError, match="loopback"):
        proxy.upstream = url


@pytest.mark.parametrize("url", ["http://localhost:8080", "http://[::1]:8080", "http://127.0.0.2"])
def test_accepts_any_loopback_upstream(url: str) -> None:
    with FaultProxy(url) as proxy:
        assert proxy.upstream == url
        proxy.upstream = None
        assert proxy.upstream is None


def test_forwards_under_the_upstream_path_prefix(
    upstream: _UpstreamServer, session: requests.Session
) -> None:
    with FaultProxy(upstream.url + "/node/") as proxy:
        assert _get(session, proxy.url + "/subscribers?since=3").ok

    assert [seen.path for seen in upstream.seen] == ["/node/subscribers?since=3"]


def test_add_refuses_unknown_faults_and_counts(proxy: FaultProxy) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        proxy.add("explode")
    with pytest.raises(ValueError, match="times"):
        proxy.add("cut", times=0)


def test_no_or_unreachable_upstream_answers_502(
    upstream: _UpstreamServer, session: requests.Session
) -> None:
    with FaultProxy() as proxy:
        assert _get(session, proxy.url + "/poll").status_code == 502
        proxy.upstream = upstream.url
        assert _get(session, proxy.url + "/poll").text == "answer 1"
        with socket.socket() as unused:
            unused.bind(("127.0.0.1", 0))
            proxy.upstream = f"http://127.0.0.1:{unused.getsockname()[1]}"
            assert _get(session, proxy.url + "/poll").status_code == 502


def test_close_is_prompt_with_held_and_idle_connections(
    upstream: _UpstreamServer, session: requests.Session
) -> None:
    proxy = FaultProxy(upstream.url)
    assert _get(session, proxy.url + "/poll").ok  # leaves an idle keep-alive connection
    proxy.partition()
    with _raw_request(proxy) as held, _raw_request(proxy) as also_held:
        wait_until(lambda: proxy.injected["partition"] == 2, timeout=5, what="held requests")

        started_at = time.monotonic()
        proxy.close()

        assert time.monotonic() - started_at < 2.0
        assert _read_all(held) == b""
        assert _read_all(also_held) == b""
    with pytest.raises(requests.ConnectionError):
        _get(session, proxy.url + "/poll")

"""Hostile HTTP clients without a token (issue 13, items 2, 5 and 10): the collector's one
HTTP port keeps answering, its memory and descriptors stay bounded, its log stays short.

Every test drives the real collector process over real loopback sockets, the way an
attacker would: raw sockets for what no HTTP library sends (idle connections, trickled
headers, half-sent bodies, a 64 MB header, a lying Host).

Scale. The issue's figure is 20,000 idle connections, which is the machine's whole
descriptor limit (`ulimit -n` = 20000 here, soft and hard): the test process could not
open them beside its own files, and the collector would hit the limit with or without the
fix. So the collector runs under `prlimit --nofile=1024` and meets 3,000 connections,
nearly three times its limit — the same exhaustion at a fifth of the cost. Without the
connection cap it runs out of descriptors and /healthz stops answering, as in the issue.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import threading
import time
from typing import Any

import httpx
import psutil
import pytest
from support.evidence import request_attributes
from support.otlp import JSON, PROTOBUF, export_request, otlp_span, to_otlp_json
from support.polling import eventually

from handoffscope.instrumentation import semconv as sc

MIB = 1024 * 1024
NOFILE = 1024
CLIENTS = 3000


def address(collector: Any) -> tuple[str, int]:
    host, port = collector.http_endpoint.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def closed_reason(collector: Any, reason: str) -> float:
    return collector.metric("handoffscope_http_connections_closed_total", reason=reason)


def read_until_closed(sock: socket.socket) -> bytes:
    """What the server sent before it closed the connection (b'' if nothing)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except OSError:
        pass
    return data


class Crowd:
    """Many raw connections to one port: some silent, some trickling a request head one
    byte at a time, some with half a request head sent at once."""

    def __init__(self, addr: tuple[str, int], n: int) -> None:
        self.open: list[socket.socket] = []
        self.trickling: dict[socket.socket, int] = {}
        self.head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
        self.refused = 0
        for i in range(n):
            try:
                sock = socket.create_connection(addr, timeout=10)
            except OSError:
                self.refused += 1
                continue
            sock.setblocking(False)
            if i % 3 == 1:
                self.trickling[sock] = 0
            elif i % 3 == 2:
                self._send(sock, self.head[:40])
            self.open.append(sock)

    def _send(self, sock: socket.socket, data: bytes) -> None:
        with contextlib.suppress(OSError):  # closed by the server: seen by still_open()
            sock.send(data)

    def trickle(self) -> None:
        for sock, sent in list(self.trickling.items()):
            self._send(sock, self.head[sent % len(self.head) : sent % len(self.head) + 1])
            self.trickling[sock] = sent + 1

    def still_open(self) -> int:
        """Trickle one more byte each, then count the connections the server has not closed."""
        self.trickle()
        poller = select.poll()  # select() cannot take descriptors past 1023
        by_fd = {sock.fileno(): sock for sock in self.open}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(0):
            sock = by_fd[fd]
            try:
                while sock.recv(65536):
                    pass
            except BlockingIOError:
                continue  # a 408 arrived, the close not yet
            except OSError:
                pass
            sock.close()
            self.open.remove(sock)
            self.trickling.pop(sock, None)
        return len(self.open)

    def close(self) -> None:
        for sock in self.open:
            sock.close()


def test_thousands_of_idle_and_trickling_connections_cannot_take_the_port_down(
    fd_limited_collector_factory: Any,
) -> None:
    # Timeouts long enough that the whole crowd is open at once (so the cap, not a
    # timeout, is what meets it), short enough to watch them close it afterwards.
    collector = fd_limited_collector_factory(
        NOFILE, args=["--idle-timeout-seconds", "20", "--header-timeout-seconds", "25"]
    )
    crowd = Crowd(address(collector), CLIENTS)
    try:
        assert crowd.refused == 0, "the kernel's backlog refused connections"
        # Every connection is open or was closed to make room; the port still answers a
        # new client — the operator's probe — at once, and more than once.
        for _ in range(5):
            crowd.trickle()
            assert collector.healthz()["status"] == "ok"
        # --max-connections (10,000) lowered to half of the 1,024 descriptors.
        assert collector.metric("handoffscope_http_connections_open") <= NOFILE // 2
        assert closed_reason(collector, "evicted") > 0
        # The trickling ones send a byte on every round and are still closed: the header
        # timeout runs from a request's first byte, not from its last.
        eventually(crowd.still_open, lambda n: n == 0, timeout=120, every=0.5)
    finally:
        crowd.close()
    assert closed_reason(collector, "idle_timeout") > 0
    assert closed_reason(collector, "header_timeout") > 0
    assert collector.healthz()["status"] == "ok"
    log = collector.log()
    assert "Too many open files" not in log
    assert "Traceback" not in log


def test_a_64_mb_request_header_is_refused_before_it_is_read(collector: Any) -> None:
    sock = socket.create_connection(address(collector), timeout=30)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
    chunk = b"a" * 65536
    sent = 0
    answer = b""
    try:
        while sent < 64 * MIB:
            sock.sendall(chunk)
            sent += len(chunk)
            if select.select([sock], [], [], 0)[0]:
                answer = read_until_closed(sock)
                break
    except OSError:
        answer = read_until_closed(sock)
    finally:
        sock.close()
    assert sent < 64 * MIB, "the whole 64 MB header was read"
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert closed_reason(collector, "header_too_large") == 1
    assert collector.healthz()["status"] == "ok"


def rss(collector: Any) -> int:
    return psutil.Process(collector.proc.pid).memory_info().rss


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_half_sent_bodies_are_bounded_by_the_inflight_budget(
    collector_factory: Any, framing: str
) -> None:
    collector = collector_factory()
    baseline = rss(collector)
    half = b"\0" * (8 * MIB)
    if framing == "chunked":
        framing_header = b"Transfer-Encoding: chunked\r\n"
        body = b"%x\r\n" % len(half) + half + b"\r\n"
    else:
        framing_header = b"Content-Length: %d\r\n" % (16 * MIB)
        body = half
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
        + PROTOBUF.encode()
        + b"\r\n"
        + framing_header
        + b"\r\n"
    )
    held: list[socket.socket] = []
    answers: list[bytes] = []
    cut = 0
    try:
        for _ in range(40):
            sock = socket.create_connection(address(collector), timeout=30)
            sock.sendall(head)
            # A Content-Length the budget cannot take is refused on the headers alone.
            if select.select([sock], [], [], 0.5)[0]:
                answers.append(read_until_closed(sock))
                sock.close()
                continue
            # A chunked body is refused once the budget runs out mid-way.
            with contextlib.suppress(OSError):
                sock.sendall(body)
            if select.select([sock], [], [], 0.5)[0]:
                answer = read_until_closed(sock)
                if answer:
                    answers.append(answer)
                else:
                    cut += 1
                sock.close()
                continue
            held.append(sock)
        # What the held connections sent is in the collector now (it read it); it would be
        # 40 x 8 MiB = 320 MiB without a budget, the budget holds 64 MiB of it.
        assert 0 < len(held) <= 8, len(held)
        assert len(held) + len(answers) + cut == 40
        assert answers and all(a.startswith(b"HTTP/1.1 429 ") for a in answers), answers[:1]
        assert all(b"retry-after: " in a.lower() for a in answers)
        if framing == "content-length":
            assert len(answers) == 40 - len(held)
        assert collector.healthz()["status"] == "ok"
        assert 0 < collector.metric("handoffscope_http_inflight_bytes") <= 64 * MIB
        grown = rss(collector) - baseline
        assert grown < 150 * MIB, f"RSS grew {grown / MIB:.0f} MiB"
    finally:
        for sock in held:
            sock.close()
    # The held ones were cut mid-body by their client: counted, not logged.
    eventually(
        lambda: closed_reason(collector, "client_disconnect"),
        lambda n: n >= len(held),
        timeout=30,
    )
    eventually(
        lambda: collector.metric("handoffscope_http_inflight_bytes"), lambda n: n == 0, timeout=30
    )
    assert "Traceback" not in collector.log()


def test_clients_disconnecting_mid_body_are_counted_not_logged(collector: Any) -> None:
    for _ in range(50):
        with socket.create_connection(address(collector), timeout=30) as sock:
            sock.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                + PROTOBUF.encode()
                + b"\r\nContent-Length: 100000\r\n\r\n"
                + b"\0" * 1000
            )
    eventually(lambda: closed_reason(collector, "client_disconnect"), lambda n: n == 50, timeout=30)
    assert "Traceback" not in collector.log()
    assert "Exception in ASGI application" not in collector.log()


def test_a_flood_of_bad_requests_is_a_few_log_lines(collector: Any) -> None:
    for _ in range(200):
        with socket.create_connection(address(collector), timeout=30) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            assert read_until_closed(sock).startswith(b"HTTP/1.1 400 ")
    suppressed = eventually(
        lambda: collector.metric("handoffscope_log_lines_suppressed_total"),
        lambda n: n >= 190,
        timeout=30,
    )
    assert suppressed <= 200
    lines = [line for line in collector.log().splitlines() if "Invalid HTTP request" in line]
    assert 1 <= len(lines) <= 10, len(lines)


def slow_to_decode_json(min_bytes: int) -> bytes:
    """An OTLP/JSON export of about `min_bytes` that the decoder reads to its very end and
    then refuses (400): the last span's start time is not a number."""
    spans = [
        otlp_span(sc.SPAN_REQUEST, request_attributes("run-big-json", f"h{i}")) for i in range(200)
    ]
    doc = json.loads(to_otlp_json(export_request(spans)))
    block = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    one = len(json.dumps(block)) // len(block)
    block *= min_bytes // (one * len(block)) + 1
    block[-1] = {**block[-1], "startTimeUnixNano": "not a number"}
    return json.dumps(doc).encode()


def test_a_16_mb_json_export_does_not_stop_other_requests(collector: Any) -> None:
    body = slow_to_decode_json(15 * MIB)
    assert len(body) < 16 * MIB  # under --max-body-bytes: it is decoded, not refused
    order: list[str] = []

    def export() -> None:
        # Decoding takes ~2 s here, but over 30 s when the machine's two cores are shared
        # with a dozen other processes: the wait is a bound, not a measurement.
        response = collector.post_traces(body, JSON, timeout=180)
        assert response.status_code == 400, response.text[:300]
        order.append("export")

    sender = threading.Thread(target=export)
    sender.start()
    # Once the body has reached the collector (half a second is ample on loopback), the
    # decoder works on it for about two seconds. /healthz asked now must be answered
    # first: before, the decoder held the event loop, so /healthz waited for the 400.
    eventually(
        lambda: collector.metric("handoffscope_http_inflight_bytes"),
        lambda n: n >= len(body),
        timeout=60,
        every=0.05,
    )
    time.sleep(0.3)
    assert collector.healthz()["status"] == "ok"
    order.append("healthz")
    sender.join(200)
    assert order == ["healthz", "export"]


def test_only_configured_host_names_are_answered(collector_factory: Any) -> None:
    default = collector_factory()
    _, port = address(default)
    for host, status in [
        ("localhost", 200),
        (f"localhost:{port}", 200),
        (f"127.0.0.1:{port}", 200),
        (f"[::1]:{port}", 200),
        (f"LOCALHOST.:{port}", 200),
        (f"evil.example:{port}", 400),
        (f"127.0.0.1.evil.example:{port}", 400),
        ("", 400),
    ]:
        for path in ("/healthz", "/api/v1/runs", "/metrics"):
            response = httpx.get(default.http_endpoint + path, headers={"Host": host}, timeout=30)
            assert response.status_code == status, (host, path, response.text[:200])
    refused = httpx.post(
        default.http_endpoint + "/v1/traces",
        content=export_request([]).SerializeToString(),
        headers={"Host": "rebound.example", "Content-Type": PROTOBUF},
        timeout=30,
    )
    assert refused.status_code == 400
    assert "allowed-hosts" in refused.json()["error"]

    named = collector_factory(args=["--allowed-hosts", "collector,*.internal.example"])
    for host, status in [
        ("collector:4318", 200),
        ("a.internal.example", 200),
        ("internal.example.evil", 400),
        ("localhost", 400),
        ("127.0.0.1", 200),  # the address it is bound to (--host) is always allowed
    ]:
        response = httpx.get(named.http_endpoint + "/healthz", headers={"Host": host}, timeout=30)
        assert response.status_code == status, host


def test_an_answer_before_the_body_leaves_the_connection_usable(collector: Any) -> None:
    """A 415 is answered from the headers; the body still arriving after it is that
    request's, not the next one's head (it is larger than --max-header-bytes)."""
    with socket.create_connection(address(collector), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 100000\r\n\r\n"
        )
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 415 "), first[:100]
        sock.sendall(b"x" * 100_000)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answers = first
        while b'"status"' not in answers:
            chunk = sock.recv(65536)
            assert chunk, answers
            answers += chunk
        assert re.findall(rb"HTTP/1\.1 (\d{3}) ", answers) == [b"415", b"200"], answers[-300:]


def open_count(socks: list[socket.socket]) -> int:
    """How many of `socks` the server has not closed (reads whatever it sent first)."""
    n = 0
    for sock in socks:
        sock.setblocking(False)
        try:
            while sock.recv(65536):
                pass
            continue  # b"": closed by the server
        except BlockingIOError:
            n += 1  # nothing more to read, still open
        except OSError:
            pass
    return n


def test_grpc_port_caps_connections_and_closes_silent_ones(
    collector_factory: Any, otlp_sender_factory: Any
) -> None:
    # gRPC core's own default would keep a silent socket for 120 s and admit any number.
    collector = collector_factory(
        args=["--max-grpc-connections", "20", "--header-timeout-seconds", "10"]
    )
    host, port = collector.grpc_endpoint.rsplit(":", 1)
    socks = [socket.create_connection((host, int(port)), timeout=10) for _ in range(60)]
    try:
        # Beyond the cap a connection is closed at once, long before the handshake deadline.
        eventually(lambda: open_count(socks), lambda n: n <= 20, timeout=8)
        # The ones admitted sent nothing: closed at the handshake deadline.
        eventually(lambda: open_count(socks), lambda n: n == 0, timeout=60, every=0.5)
    finally:
        for sock in socks:
            sock.close()
    sender = otlp_sender_factory(collector, "grpc", service="after-the-crowd")
    sender.emit(sc.SPAN_REQUEST, request_attributes("run-after-grpc-crowd", "h1"))
    assert sender.send().name == "SUCCESS"
    assert collector.healthz()["status"] == "ok"
    assert "Traceback" not in collector.log()

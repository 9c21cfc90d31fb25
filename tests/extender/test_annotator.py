"""The annotator: each bound pod's ``eams.io/*`` merge patch, sent off the request path.

Through real HTTP: a small HTTP server on loopback (the stdlib's; over TLS with a certificate
made by ``openssl`` for one test) stands in for the API server's ``PATCH
/api/v1/namespaces/NS/pods/NAME`` (no kube-apiserver runs here) and keeps each request's
method, path, headers and body, sent by :func:`api_sender` over a ``kubernetes.client.ApiClient``
configured with a bearer token (and the CA), as an in-cluster one is.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry, Counter

from eams.scheduler.extender.annotator import PodAnnotator, api_sender
from eams.scheduler.record.schema import Certificate, Placement, PodRef


class _Api:
    def __init__(
        self,
        status: int = 200,
        delay_s: float = 0.0,
        protocol: str = "HTTP/1.1",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.peers: list[tuple[str, int]] = []  # each request's client address (its connection)
        self.status, self.delay_s = status, delay_s
        self.gate = threading.Event()
        self.gate.set()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = protocol  # 1.1: keep-alive, as the API server answers

            def do_PATCH(self) -> None:  # the stdlib handler's name
                api.gate.wait(10)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                api.requests.append((self.command, self.path, dict(self.headers), json.loads(body)))
                api.peers.append(self.client_address)
                time.sleep(api.delay_s)
                answer = b'{"kind":"Pod"}'
                self.send_response(api.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api() -> Iterator[_Api]:
    server = _Api()
    yield server
    server.close()


def _client(url: str, ca: Path | None = None) -> client.ApiClient:
    config = client.Configuration(host=url)
    if ca is not None:
        config.ssl_ca_cert = str(ca)
    config.api_key = {"authorization": "token-1"}
    config.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(config)


def _decision(name: str, node: str = "mini-2", at_s: float = 1.7e9) -> Placement:
    return Placement(
        at_s=at_s,
        mode="active",
        clearing_id="abc123-1",
        batch_pods=1,
        pod=PodRef(namespace="demo", name=name, uid=f"uid-{name}"),
        cleared_node=node,
        price=0.0,
        bid=0.25,
        method="short_lists",
        fell_back=False,
        certificate=Certificate(kind="j_epsilon", bound=1e-5, value=0.25, epsilon=1e-5),
        candidates=[],
        candidates_total=3,
        gated_counts={},
        gated=[],
    )


def _counter() -> tuple[Counter, CollectorRegistry]:
    registry = CollectorRegistry()
    counter = Counter("annotations", "x", ["outcome"], registry=registry)
    return counter, registry


def _count(registry: CollectorRegistry, outcome: str) -> float:
    return registry.get_sample_value("annotations_total", {"outcome": outcome}) or 0.0


def _until(check: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_merge_patch_with_the_bearer_token_over_one_connection(api: _Api) -> None:
    counter, registry = _counter()
    annotator = PodAnnotator(api_sender(_client(api.url)), counter)
    try:
        assert annotator.submit(_decision("job-1"))
        assert annotator.submit(_decision("job/2"))  # a name is quoted into the path
        _until(lambda: _count(registry, "ok") == 2)
    finally:
        annotator.close()
    (method, path, headers, body), second = api.requests
    assert method == "PATCH" and path == "/api/v1/namespaces/demo/pods/job-1"
    assert second[1] == "/api/v1/namespaces/demo/pods/job%2F2"
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert headers["authorization"] == "Bearer token-1"
    annotations = body["metadata"]["annotations"]
    assert annotations["eams.io/cleared-node"] == "mini-2"
    assert annotations["eams.io/certificate"] == "j_epsilon=1e-05"
    assert annotations["eams.io/decided-at"].endswith("Z")


@pytest.mark.parametrize("protocol", ["HTTP/1.1", "HTTP/1.0"])
def test_a_run_of_patches_pipelined_and_what_a_closing_server_left_sent_again(
    protocol: str,
) -> None:
    """The patches gathered in one run go in one write on one connection (HTTP/1.1
    pipelining: the stdlib server answers them in turn); a server answering HTTP/1.0 closes
    the connection after each answer, leaving the rest unanswered: each is sent again on a
    new connection, none lost, none failed."""
    api = _Api(protocol=protocol)
    counter, registry = _counter()
    annotator = PodAnnotator(api_sender(_client(api.url)), counter)
    try:
        for i in range(6):  # within the gather window: one run
            assert annotator.submit(_decision(f"p{i}"))
        _until(lambda: _count(registry, "ok") == 6)
    finally:
        annotator.close()
        api.close()
    assert [path.rsplit("/", 1)[1] for _, path, _, _ in api.requests] == [f"p{i}" for i in range(6)]
    assert len(set(api.peers)) == (1 if protocol == "HTTP/1.1" else 6)
    assert _count(registry, "error") == 0


def _server_tls(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1 (``openssl``) and a server context with it."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    return cert, tls


@pytest.mark.parametrize("protocol", ["HTTP/1.1", "HTTP/1.0"])
def test_over_tls_and_a_server_that_closes_each_connection(tmp_path: Path, protocol: str) -> None:
    """TLS checked against the CA the client is configured with; a server answering HTTP/1.0
    closes the connection after each answer, and the next patch opens a new one."""
    cert, tls = _server_tls(tmp_path)
    api = _Api(protocol=protocol, tls=tls)
    counter, registry = _counter()
    annotator = PodAnnotator(api_sender(_client(api.url, ca=cert)), counter)
    try:
        for i in range(3):
            annotator.submit(_decision(f"p{i}"))
            _until(lambda i=i: _count(registry, "ok") == i + 1)
    finally:
        annotator.close()
        api.close()
    assert [path.rsplit("/", 1)[1] for _, path, _, _ in api.requests] == ["p0", "p1", "p2"]
    assert all(h["authorization"] == "Bearer token-1" for _, _, h, _ in api.requests)


def test_a_server_it_does_not_trust_is_an_error(tmp_path: Path) -> None:
    _, tls = _server_tls(tmp_path)
    api = _Api(tls=tls)
    counter, registry = _counter()
    annotator = PodAnnotator(api_sender(_client(api.url)), counter)  # the system CAs only
    try:
        annotator.submit(_decision("p0"))
        _until(lambda: _count(registry, "error") == 1)
    finally:
        annotator.close()
        api.close()
    assert not api.requests


def test_coalesced_bounded_and_an_error_answer_counted(api: _Api) -> None:
    api.gate.clear()  # the first patch waits in the server: the others queue behind it
    counter, registry = _counter()
    annotator = PodAnnotator(api_sender(_client(api.url)), counter, max_queue=2)
    try:
        assert annotator.submit(_decision("p0"))
        _until(lambda: not annotator._waiting)  # p0 taken by the thread, held by the server
        assert annotator.submit(_decision("p1", node="mini-1"))
        assert annotator.submit(_decision("p2"))
        assert annotator.submit(_decision("p1", node="mini-3"))  # replaces p1's waiting patch
        assert not annotator.submit(_decision("p3"))  # two pods wait: dropped, counted
        assert not api.requests  # all answered while the server still holds p0: no wait
        assert _count(registry, "dropped") == 1
        api.status = 409
        api.gate.set()
        _until(lambda: _count(registry, "error") == 3)
    finally:
        annotator.close()
    sent = [
        (path.rsplit("/", 1)[1], b["metadata"]["annotations"]) for _, path, _, b in api.requests
    ]
    assert [name for name, _ in sent] == ["p0", "p1", "p2"]
    assert sent[1][1]["eams.io/cleared-node"] == "mini-3"  # the latest decision of p1
    assert _count(registry, "ok") == 0  # p0 answered after the status turned 409


def test_rate_limited_and_a_refused_connection_counted() -> None:
    """At the limit the patches go in runs of GATHER_S' worth (10 at 20/s), not one by one,
    and the thread's CPU is counted."""
    sent: list[float] = []
    runs: list[int] = []
    counter, registry = _counter()
    cpu = Counter("cpu_seconds", "the annotator's CPU", registry=registry)

    def send(patches: list[tuple[str, str, bytes]]) -> list[int | Exception]:
        sent.extend(time.monotonic() for _ in patches)
        runs.append(len(patches))
        return [ConnectionRefusedError("refused") if n == "down" else 200 for _, n, _ in patches]

    decisions = [_decision(f"p{i}") for i in range(32)] + [_decision("down")]
    annotator = PodAnnotator(send, counter, max_per_s=20.0, cpu=cpu)
    try:
        for decision in decisions:  # one second's worth goes at once, the rest at 20 a second
            annotator.submit(decision)
        _until(lambda: len(sent) == 33)
    finally:
        annotator.close()
    assert sent[-1] - sent[0] >= 0.5  # 13 beyond the burst at 20/s: ≥ 0.65 s, less the timer
    # the burst (what had come when the thread woke, at most a second's 20), then runs of 10
    # (more after an oversleep), the last maybe fewer
    assert sum(runs) == 33 and len(runs) >= 2 and runs[0] <= 20
    assert all(run >= 10 for run in runs[1:-1])
    assert _count(registry, "ok") == 32 and _count(registry, "error") == 1
    assert registry.get_sample_value("cpu_seconds_total") > 0


def test_bad_limits_are_refused() -> None:
    counter, _ = _counter()
    with pytest.raises(ValueError, match="max_queue = 0"):
        PodAnnotator(lambda patches: [200] * len(patches), counter, max_queue=0)

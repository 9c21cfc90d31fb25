"""One keep-alive HTTP/1.1 connection that pipelines whole requests and reads their status.

The annotator's transport (``annotator.py``): a socket (TLS from a kubernetes client
``Configuration``: :func:`tls_context`), the requests of a run written in one ``sendall``
and the answers parsed in order by httptools' C parser (HTTP/1.1 pipelining, RFC 9112
§9.3.2), only their statuses kept.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

import httptools


def tls_context(config: Any) -> ssl.SSLContext:
    """The TLS of a kubernetes client ``Configuration``: its CA (file or data), its client
    certificate and key, ``verify_ssl`` and ``assert_hostname``."""
    context = ssl.create_default_context(cafile=config.ssl_ca_cert, cadata=config.ca_cert_data)
    if config.cert_file:
        context.load_cert_chain(config.cert_file, config.key_file)
    if not config.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif config.assert_hostname is False:
        context.check_hostname = False
    return context


class ConnectionClosed(OSError):
    """The server closed the connection before a whole answer."""


class KeepAlive:
    """One keep-alive HTTP/1.1 connection that pipelines whole requests and reads their status.

    Parameters
    ----------
    host : str
    port : int
    tls : ssl.SSLContext or None
        Wrap the socket (``https``).
    server_hostname : str or None
        The TLS server name (SNI and the name checked).
    timeout_s : float
        Connect, send and each read's timeout, s.

    Notes
    -----
    Used from one thread. Requests the server left unanswered — it closed the connection,
    idle or after an answer (``Connection: close``, an HTTP/1.0 server) — are sent again on
    a new one (RFC 9112 §9.3.2; a merge patch applied twice is applied once); they fail only
    when a new connection answers none of them.
    """

    def __init__(
        self,
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        server_hostname: str | None,
        timeout_s: float,
    ) -> None:
        self.host, self.port, self.tls = host, port, tls
        self.server_hostname, self.timeout_s = server_hostname, timeout_s
        self._sock: socket.socket | None = None
        self._answers = _Answers()

    def pipeline(self, requests: list[bytes]) -> list[int | Exception]:
        """Send ``requests`` (each a whole request) in one write and read their answers.

        Returns
        -------
        list
            Per request, in order, its answer's status, or the failure (``OSError``: no
            connection, TLS, a timeout, :class:`ConnectionClosed`; ``HttpParserError``: not
            HTTP) of a new connection that answered none of those left.
        """
        statuses: list[int | Exception] = []
        while (done := len(statuses)) < len(requests):
            fresh = self._sock is None
            left = requests[done:]
            try:
                sock = self._sock or self._connect()
                sock.sendall(left[0] if len(left) == 1 else b"".join(left))
                self._read(sock, len(left), statuses)
            except (OSError, httptools.HttpParserError) as exc:
                self.close()
                if fresh and len(statuses) == done:  # a new connection answered none
                    statuses += [exc] * len(left)
        return statuses

    def close(self) -> None:
        """Close the connection (the next request opens a new one)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), self.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_hostname=self.server_hostname)
        self._sock = sock
        return sock

    def _read(self, sock: socket.socket, count: int, statuses: list[int | Exception]) -> None:
        """Append the statuses of the next ``count`` answers (fewer when the server ends the
        connection after one: the socket is closed then)."""
        answers = self._answers
        parser = httptools.HttpResponseParser(answers)
        answers.start(parser, statuses)
        target = len(statuses) + count
        while len(statuses) < target and answers.keep_alive:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionClosed(f"{self.host}:{self.port} closed the connection")
            try:
                parser.feed_data(chunk)
            except httptools.HttpParserError:
                if answers.keep_alive:
                    raise
                # data after an answer that closes the connection: not ours to read
        if not answers.keep_alive:
            self.close()


class _Answers:
    """httptools' callbacks: each whole answer's status (the body is not kept)."""

    def __init__(self) -> None:
        self.statuses: list[int | Exception] = []
        self.keep_alive = True
        self._parser: httptools.HttpResponseParser | None = None

    def start(self, parser: httptools.HttpResponseParser, statuses: list[int | Exception]) -> None:
        self._parser, self.statuses, self.keep_alive = parser, statuses, True

    def on_message_complete(self) -> None:
        assert self._parser is not None
        self.statuses.append(int(self._parser.get_status_code()))
        self.keep_alive = bool(self._parser.should_keep_alive())

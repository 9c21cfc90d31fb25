"""A UDP proxy in front of a real SNMP agent that holds every answer back: a lagging meter.

The agent's meter talks to it exactly as to the PDU (SNMP over UDP on loopback); each datagram
from the client is forwarded at once, each answer from the upstream is sent back after
``delay_s``. A full read of the PDU simulator takes a few requests in sequence, so it lasts a
few times ``delay_s``, and the agent's latest reading ages meanwhile.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class UdpDelayProxy:
    """Forward UDP datagrams to ``upstream`` and their answers back after :attr:`delay_s`.

    Parameters
    ----------
    upstream : (str, int)
        The real agent's address.
    delay_s : float
        How long each answer is held (s).

    Attributes
    ----------
    port : int
        Where the proxy listens on 127.0.0.1.
    """

    def __init__(self, upstream: tuple[str, int], delay_s: float):
        self.delay_s = delay_s
        self._upstream = upstream
        self._front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._front.bind(("127.0.0.1", 0))
        self._back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._back.bind(("127.0.0.1", 0))
        self.port = self._front.getsockname()[1]
        self._client: tuple[str, int] | None = None
        self._stop = threading.Event()
        self._timers: list[threading.Timer] = []
        self._thread = threading.Thread(target=self._run, name="udp-delay-proxy", daemon=True)

    def __enter__(self) -> UdpDelayProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        for timer in self._timers:
            timer.cancel()
        self._front.close()
        self._back.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._front, self._back], [], [], 0.05)
            for sock in ready:
                data, sender = sock.recvfrom(65535)
                if sock is self._front:
                    self._client = sender  # one client: the agent's meter
                    self._back.sendto(data, self._upstream)
                elif self._client is not None:
                    timer = threading.Timer(self.delay_s, self._answer, (data, self._client))
                    timer.daemon = True
                    self._timers = [t for t in self._timers if t.is_alive()] + [timer]
                    timer.start()

    def _answer(self, data: bytes, client: tuple[str, int]) -> None:
        if not self._stop.is_set():
            with contextlib.suppress(OSError):  # closed while the answer was held
                self._front.sendto(data, client)

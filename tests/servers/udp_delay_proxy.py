"""A UDP proxy in front of a real SNMP agent that holds every answer back: a lagging meter.

A meter talks to it exactly as to the PDU (SNMP over UDP on loopback). Each datagram from a
client is forwarded at once, from a socket of the proxy's own for that client (as a NAT would,
so the answers of several clients never cross); each answer from the upstream is sent back to
its client after ``delay_s``. A full read of the PDU simulator takes a few requests in
sequence, so it lasts a few times ``delay_s``; with ``delay_s`` above the meter's timeout every
answer is a late one.
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
        How long each answer is held (s); may be changed while the proxy runs.

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
        self.port = self._front.getsockname()[1]
        self._backs: dict[tuple[str, int], socket.socket] = {}  # client -> its upstream socket
        self._clients: dict[socket.socket, tuple[str, int]] = {}
        self._lock = threading.Lock()  # guards _backs for readers of clients
        self._answered = threading.Condition()
        self._answers = 0
        self._stop = threading.Event()
        self._timers: list[threading.Timer] = []
        self._thread = threading.Thread(target=self._run, name="udp-delay-proxy", daemon=True)

    @property
    def clients(self) -> set[tuple[str, int]]:
        """The client addresses (host, source port) that have sent through the proxy."""
        with self._lock:
            return set(self._backs)

    @property
    def answers(self) -> int:
        """How many answers have been passed back to their clients so far."""
        with self._answered:
            return self._answers

    def wait_answers(self, count: int, timeout_s: float) -> bool:
        """Block until ``count`` answers have been passed back (True) or ``timeout_s`` ends."""
        with self._answered:
            return self._answered.wait_for(lambda: self._answers >= count, timeout_s)

    def __enter__(self) -> UdpDelayProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        for timer in self._timers:
            timer.cancel()
        self._front.close()
        for back in self._backs.values():
            back.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._front, *self._clients], [], [], 0.05)
            for sock in ready:
                data, sender = sock.recvfrom(65535)
                if sock is self._front:
                    self._back_for(sender).sendto(data, self._upstream)
                else:
                    timer = threading.Timer(self.delay_s, self._answer, (data, self._clients[sock]))
                    timer.daemon = True
                    self._timers = [t for t in self._timers if t.is_alive()] + [timer]
                    timer.start()

    def _back_for(self, client: tuple[str, int]) -> socket.socket:
        if client not in self._backs:
            back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            back.bind(("127.0.0.1", 0))
            with self._lock:
                self._backs[client], self._clients[back] = back, client
        return self._backs[client]

    def _answer(self, data: bytes, client: tuple[str, int]) -> None:
        if self._stop.is_set():
            return
        with contextlib.suppress(OSError):  # closed while the answer was held
            self._front.sendto(data, client)
        with self._answered:
            self._answers += 1
            self._answered.notify_all()

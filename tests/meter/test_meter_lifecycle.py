"""A meter's life against real agents: event loops, concurrent first reads, late answers.

Real parts: the PDU simulator (a real SNMP agent) on loopback, read over real SNMP by
``open_meter``/``BlockingMeter``; a UDP proxy in front of it (``tests/servers/udp_delay_proxy.py``)
that sees every client socket and can hold answers back past the meter's timeout; for the
serial side, the simulated Eastron meter on a socat pty pair (issue 16, item 8).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eams.meter.blocking import BlockingMeter
from eams.meter.errors import MeterTimeout, WrongEventLoop
from eams.meter.open import open_meter
from eams.meter.reading import Reading
from eams.meter.simulator import LinearCurve, PduSimulator, VirtualOutlet
from eams.meter.simulator.modbus import ModbusMeterSimulator
from tests.servers.udp_delay_proxy import UdpDelayProxy

CURVE = LinearCurve(60.0, 180.0)
TIMEOUT_S = 3.0  # generous where an answer is expected: the machine is shared
BUSY_TIMEOUT_S = 10.0  # a first read (detection) with both cores busy took over 3 s (CI, 2 Dec)
LATE_TIMEOUT_S = 0.3  # a read deadline of 0.8 s ...
LATE_DELAY_S = 2.0  # ... and every answer held well past it


@pytest.fixture
def sim() -> Iterator[PduSimulator]:
    with PduSimulator([VirtualOutlet("node1", CURVE)]) as simulator:
        yield simulator


@pytest.fixture
def proxy(sim: PduSimulator) -> Iterator[UdpDelayProxy]:
    with UdpDelayProxy(("127.0.0.1", sim.port), 0.0) as front:
        yield front


def proxy_url(proxy: UdpDelayProxy) -> str:
    return f"snmp://public@127.0.0.1:{proxy.port}"


def tracebacks(records: list[logging.LogRecord]) -> list[str]:
    """Log records carrying a traceback, and asyncio's complaints about lost tasks."""
    return [
        r.getMessage()
        for r in records
        if r.exc_info or "Traceback" in r.getMessage() or "destroyed but it is pending" in r.msg
    ]


def read_in_two_threads_at_once(read: Callable[[], Reading]) -> list[float | None]:
    """Outlet 1's power as ``read`` returns it in two threads started together."""
    start = threading.Barrier(2)
    powers: list[float | None] = []

    def at_once() -> None:
        start.wait()
        powers.append(read().outlet(1).power_w)

    threads = [threading.Thread(target=at_once) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return powers


def test_a_meter_read_in_a_second_event_loop_says_what_to_do(sim: PduSimulator) -> None:
    meter = open_meter(sim.url, timeout_s=TIMEOUT_S)
    first = asyncio.run(meter.read())
    sent = meter.client.requests
    with pytest.raises(WrongEventLoop, match=r"one meter per event loop.*BlockingMeter"):
        asyncio.run(meter.read())
    assert meter.client.requests == sent  # refused before sending: no wait for a timeout
    with pytest.raises(WrongEventLoop, match="close it in the event loop that read it"):
        asyncio.run(meter.close())
    assert first.outlet(1).power_w == pytest.approx(CURVE.power_w(0.0), abs=0.5)
    with warnings.catch_warnings():  # its loop is gone, so its socket cannot be closed: it is
        warnings.simplefilter("ignore", ResourceWarning)  # collected here, not in a later
        del meter  # test that counts unclosed sockets
        gc.collect()


def test_a_closed_meter_reads_again_in_a_new_event_loop(sim: PduSimulator) -> None:
    meter = open_meter(sim.url, timeout_s=TIMEOUT_S)

    async def read_and_close() -> Reading:
        try:
            return await meter.read()
        finally:
            await meter.close()

    readings = [asyncio.run(read_and_close()) for _ in range(2)]
    assert [r.outlet(1).power_w for r in readings] == [pytest.approx(60.0, abs=0.5)] * 2


def test_concurrent_first_reads_share_one_engine(proxy: UdpDelayProxy) -> None:
    meter = open_meter(proxy_url(proxy), timeout_s=TIMEOUT_S)

    async def two_reads() -> list[Reading]:
        try:
            return list(await asyncio.gather(meter.read(), meter.read()))
        finally:
            await meter.close()

    readings = asyncio.run(two_reads())
    assert [r.outlet(1).power_w for r in readings] == [pytest.approx(60.0, abs=0.5)] * 2
    assert len(proxy.clients) == 1, f"SNMP sockets (one per engine): {sorted(proxy.clients)}"


def test_two_threads_first_read_of_a_blocking_meter_build_one_engine(
    proxy: UdpDelayProxy, caplog: pytest.LogCaptureFixture
) -> None:
    meter = BlockingMeter(proxy_url(proxy), timeout_s=TIMEOUT_S)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always", ResourceWarning)
        powers = read_in_two_threads_at_once(meter.read)
        meter.close()
        gc.collect()  # an orphaned engine's task and socket are reported when collected
    assert powers == [pytest.approx(60.0, abs=0.5)] * 2
    assert len(proxy.clients) == 1, f"SNMP sockets (one per engine): {sorted(proxy.clients)}"
    assert not tracebacks(caplog.records)
    assert not [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


def test_two_meters_first_reads_in_two_threads_build_no_mib_compiler(
    sim: PduSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI, 6 Dec: two engines' first requests in two threads built pysmi's MIB parser at once
    and CPython 3.11.7's ``compile`` failed (gh-106905). The meter asks by numeric OID, so no
    engine may build that parser; counted on pysmi's own class, which the test only wraps."""
    from pysmi.parser.lark_parser import SmiV2Parser  # the parser of its MIB compiler

    built: list[int] = []
    real_init = SmiV2Parser.__init__

    def counted(self: SmiV2Parser, *args: object, **kwargs: object) -> None:
        built.append(threading.get_ident())
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(SmiV2Parser, "__init__", counted)
    with (
        BlockingMeter(sim.url, timeout_s=TIMEOUT_S) as first,
        BlockingMeter(sim.url, timeout_s=TIMEOUT_S) as second,
    ):
        meters = iter([first, second])
        powers = read_in_two_threads_at_once(lambda: next(meters).read())
    assert powers == [pytest.approx(60.0, abs=0.5)] * 2
    assert built == [], "pysmi's MIB parser was built for a numeric-OID meter"


def test_a_late_answer_to_an_open_meter_is_dropped_quietly(
    proxy: UdpDelayProxy, caplog: pytest.LogCaptureFixture
) -> None:
    meter = open_meter(proxy_url(proxy), timeout_s=LATE_TIMEOUT_S, retries=0, driver="apc_rpdu2")

    async def late_then_on_time() -> Reading:
        try:
            proxy.delay_s = LATE_DELAY_S
            with pytest.raises(MeterTimeout):
                await meter.read()
            while proxy.answers < 1:  # the late answer reaches the open meter
                await asyncio.sleep(0.05)
            proxy.delay_s = 0.0
            return await meter.read()
        finally:
            await meter.close()

    with caplog.at_level(logging.DEBUG):
        reading = asyncio.run(late_then_on_time())
    assert reading.outlet(1).power_w == pytest.approx(60.0, abs=0.5)
    assert not tracebacks(caplog.records)


@pytest.mark.parametrize("turns", range(4))
def test_a_late_answer_read_just_before_close_leaves_no_traceback(
    proxy: UdpDelayProxy, caplog: pytest.LogCaptureFixture, turns: int
) -> None:
    """The loop stalls (a loaded machine) while the late answer lands in the meter's socket,
    then closes the meter ``turns`` loop iterations after it resumes: whichever iteration
    reads the answer, it must not reach pysnmp's dispatcher after the transport is gone."""
    proxy.delay_s = LATE_DELAY_S
    meter = open_meter(proxy_url(proxy), timeout_s=LATE_TIMEOUT_S, retries=0, driver="apc_rpdu2")

    async def timeout_stall_close() -> None:
        with pytest.raises(MeterTimeout):
            await meter.read()
        assert proxy.wait_answers(1, timeout_s=30.0)  # blocks the loop: the answer waits
        time.sleep(0.05)  # loopback delivery is immediate; a margin for the kernel anyway
        for _ in range(turns):
            await asyncio.sleep(0)
        await meter.close()

    with caplog.at_level(logging.DEBUG):
        asyncio.run(timeout_stall_close())  # asyncio.run's cleanup runs what is still queued
    assert not tracebacks(caplog.records)


def udp_rx_queue_bytes(port: int) -> int:
    """Bytes waiting in the receive queue of the UDP socket bound to ``port`` (/proc/net/udp)."""
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port:
            return int(fields[4].split(":")[1], 16)
    return 0


def in_join(thread: threading.Thread) -> bool:
    """Whether ``thread`` is waiting in ``Thread.join`` (after what it did before that)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "join":
            return True
        frame = frame.f_back
    return False


def test_a_request_read_as_the_simulator_stops_leaves_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The PDU's side of the same race: the simulator's loop is busy (a load source that
    blocks, as on a loaded machine) while a second request lands and ``stop()`` is asked; the
    loop then reads that request in its last turn."""
    entered, release = threading.Event(), threading.Event()

    def gate() -> float:
        if not entered.is_set():
            entered.set()
            release.wait(30.0)
        return 0.5

    sim = PduSimulator([VirtualOutlet("node1", CURVE)]).start()
    meters = [BlockingMeter(sim.url, timeout_s=BUSY_TIMEOUT_S, retries=0) for _ in range(2)]
    results: list[object] = []

    def read(meter: BlockingMeter) -> None:
        try:
            results.append(meter.read().outlet(1).power_w)
        except MeterTimeout as exc:  # the simulator stops before it answers the second request
            results.append(exc)

    try:
        meters[0].read()  # detection done: each later read is one GETBULK
        sim.set_load_source(1, gate)
        with caplog.at_level(logging.DEBUG):
            readers = [threading.Thread(target=read, args=(m,)) for m in meters]
            readers[0].start()
            assert entered.wait(30.0)  # the simulator's loop is inside the first request
            readers[1].start()
            while not udp_rx_queue_bytes(sim.port):  # the second request waits in its socket
                time.sleep(0.01)
            stopper = threading.Thread(target=sim.stop)
            stopper.start()
            while not in_join(stopper):  # stop() has asked the loop to stop
                time.sleep(0.01)
            release.set()
            for thread in (stopper, *readers):
                thread.join(60)
    finally:
        release.set()
        sim.stop()
        for meter in meters:
            meter.close()
    assert len(results) == 2
    assert not tracebacks(caplog.records)


def test_a_serial_meter_reads_in_any_event_loop_and_from_two_threads(
    ptys: tuple[Path, Path], sim: PduSimulator
) -> None:
    """Serial meters hold a synchronous port and read it in a worker thread under a lock:
    bound to no event loop, so they have neither flaw of the SNMP meter."""
    with ModbusMeterSimulator(sim, [1], ptys[0], model="sdm120", unit=1):
        url = f"serial://{ptys[1]}?protocol=sdm120&unit=1"
        meter = open_meter(url, timeout_s=TIMEOUT_S)
        loops = [asyncio.run(meter.read()).outlet(1).power_w for _ in range(2)]
        asyncio.run(meter.close())
        with BlockingMeter(url, timeout_s=TIMEOUT_S) as blocking:
            powers = read_in_two_threads_at_once(blocking.read)
    assert loops == [pytest.approx(60.0, rel=1e-6)] * 2
    assert powers == [pytest.approx(60.0, rel=1e-6)] * 2

"""A metered sample carries the time the PDU answered, not the agent's tick (issue 16, item 3).

Real parts: the PDU simulator (a real SNMP agent) behind a UDP proxy that holds every answer
0.8 s (a lagging meter: a read takes at least one such round trip, while the agent ticks every
0.2 s), the agent in-process with its real meter path (``BlockingMeter``, pysnmp) and a JSONL
sink. The test watches the agent's poller (``agent.poller.latest()``, the PDU owner's
documented accessor) to learn each reading's own time, ``Reading.read_at``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from eams.meter.reading import Reading
from eams.meter.simulator import LinearCurve, PduSimulator, VirtualOutlet
from eams.telemetry import PowerSource
from tests.agent.conftest import jsonl_samples, running_agent, wait_for, write_config
from tests.servers.udp_delay_proxy import UdpDelayProxy

CAP_W = 200.0
ANSWER_DELAY_S = 0.8
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ns(reading: Reading) -> int:
    """``read_at`` as epoch nanoseconds (exact: datetimes hold microseconds)."""
    return (reading.read_at - EPOCH) // timedelta(microseconds=1) * 1000


def test_a_lagging_meter_is_published_with_the_reading_s_own_time(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    sim = PduSimulator(
        [
            VirtualOutlet("node-a", LinearCurve(60.0, 180.0)),
            VirtualOutlet("node-b", LinearCurve(55.0, 120.0)),
        ]
    )
    sim.start()
    try:
        with UdpDelayProxy(("127.0.0.1", sim.port), ANSWER_DELAY_S) as proxy:
            config = write_config(
                tmp_path,
                power_cap_w=CAP_W,
                meter={
                    "url": f"snmp://public@127.0.0.1:{proxy.port}",
                    "timeout_s": 5.0,
                    "retries": 0,
                    "stale_after_s": 5.0,
                },
                outlets={1: "node-a", 2: "node-b"},
                sinks=[{"type": "jsonl", "path": "samples.jsonl"}],
            )
            readings: dict[int, Reading] = {}
            with running_agent(config) as agent:
                assert agent.poller is not None
                wait_for(agent.poller.latest, "the first reading through the proxy")
                deadline = time.monotonic() + 6.0
                load = 0.1
                while time.monotonic() < deadline:
                    latest = agent.poller.latest()
                    if latest is not None and ns(latest.reading) not in readings:
                        readings[ns(latest.reading)] = latest.reading
                        load = 0.9 - load + 0.1  # a new power value for every reading
                        sim.set_load(1, load)
                    time.sleep(0.01)
                last_seen_ns = max(readings)
    finally:
        sim.stop()

    assert len(readings) >= 3, f"only {len(readings)} readings in 6 s"
    metered = [
        s
        for s in jsonl_samples(path)
        if s.source is PowerSource.METERED and s.measured_at_ns <= last_seen_ns
    ]
    for node, outlet in (("node-a", 1), ("node-b", 2)):
        mine = [s for s in metered if s.node == node]
        assert mine, f"no metered sample of {node}"
        stamps = [s.measured_at_ns for s in mine]
        # Each metered sample is stamped with the time its reading was measured...
        unknown = [t for t in stamps if t not in readings]
        assert not unknown, f"{node}: {len(unknown)} of {len(stamps)} stamps are no reading's time"
        # ...carries that reading's value, and a reading is published once, not once per tick
        # (which would make a value that ages look fresh at every tick).
        for sample in mine:
            value = readings[sample.measured_at_ns].outlet(outlet)
            assert value is not None and value.power_w == sample.power_w
        assert stamps == sorted(set(stamps)), f"{node}: a reading published twice"
    own = [s for s in metered if s.node == "node-a"]
    assert all(s.utilisation is not None for s in own)  # the own node still says its load

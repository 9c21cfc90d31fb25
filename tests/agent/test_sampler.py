"""Sampling: metered vs modelled vs missing power, headroom, the clock policy.

/proc/stat and the clocks are scripted here (a stepped-back wall clock cannot be produced on
a shared machine); the full agent with the real /proc/stat, PDU simulator and servers is
exercised in test_agent_*.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from eams.agent.metrics import AgentMetrics
from eams.agent.poller import measured
from eams.agent.sampler import NodeSpec, Sampler, TimedReading
from eams.calibrate.calfile import load_calibration
from eams.meter.reading import OutletReading, Reading
from eams.procstat import CpuTimes
from eams.telemetry import PowerSource
from tests.agent.conftest import P_IDLE_W, P_MAX_W, write_calibration

S = 1_000_000_000  # ns per second


def cpu_script(busy_fractions: list[float]) -> Callable[[], CpuTimes]:
    """/proc/stat readings 100 ticks apart, busy for the given fraction of each interval."""
    state = {"busy": 0, "total": 0}
    fractions: Iterator[float] = iter([0.0, *busy_fractions])

    def read() -> CpuTimes:
        state["busy"] += round(100 * next(fractions))
        state["total"] += 100
        return CpuTimes(busy_ticks=state["busy"], total_ticks=state["total"])

    return read


def clock(values_s: list[float]) -> Callable[[], int]:
    values = iter(values_s)
    return lambda: round(next(values) * S)


def reading(at_s: float, *outlets: OutletReading) -> Reading:
    """A reading measured at ``at_s`` (epoch s, on the scripted wall clock)."""
    return Reading(
        meter="snmp://127.0.0.1",
        read_at=datetime.fromtimestamp(at_s, UTC),
        driver="apc_rpdu2",
        outlets=outlets,
    )


@pytest.fixture
def model(tmp_path: Path) -> Callable[[float], float]:
    return load_calibration(write_calibration(tmp_path / "c.json", "node-a")).model().power_w


def make(
    busy: list[float],
    *,
    model: Callable[[float], float] | None = None,
    latest: Callable[[], TimedReading | None] | None = None,
    others: list[NodeSpec] | None = None,
    wall_s: list[float] | None = None,
    mono_s: list[float] | None = None,
    metrics: AgentMetrics | None = None,
) -> Sampler:
    n = len(busy) + 1
    return Sampler(
        NodeSpec("node-a", 65.0, 1),
        others or [],
        model,
        latest,
        5.0,
        metrics or AgentMetrics(),
        read_cpu=cpu_script(busy),
        wall_ns=clock(wall_s or [1000.0 + i for i in range(n)]),
        mono_ns=clock(mono_s or [50.0 + i for i in range(n)]),
    )


def test_modelled_power_and_headroom_from_the_calibration(model: Callable[[float], float]) -> None:
    sampler = make([0.25, 0.75], model=model)
    for u in (0.25, 0.75):
        (sample,) = sampler.sample()
        assert sample.source is PowerSource.MODELLED
        assert sample.utilisation == pytest.approx(u)
        assert sample.power_w == pytest.approx(P_IDLE_W + (P_MAX_W - P_IDLE_W) * u, abs=0.2)
        assert sample.headroom == pytest.approx(1 - sample.power_w / 65.0)
    assert sample.measured_at_ns == 1002 * S


def test_power_is_missing_not_zero_without_meter_or_calibration() -> None:
    (sample,) = make([0.5]).sample()
    assert sample.utilisation == pytest.approx(0.5)
    assert (sample.power_w, sample.source, sample.headroom) == (None, None, None)
    line = sample.to_line_protocol()
    assert "power_w" not in line and "headroom" not in line and "source" not in line


def test_metered_when_fresh_modelled_when_stale_or_below_floor(
    model: Callable[[float], float],
) -> None:
    fresh_at_s = [50.0]
    outlets = [OutletReading(1, power_w=40.0, energy_wh=3.5), OutletReading(2, power_w=22.0)]

    def latest() -> TimedReading:  # mono 50 s is wall 1000 s on the scripted clocks
        return TimedReading(reading(fresh_at_s[0] + 950, *outlets), round(fresh_at_s[0] * S))

    sampler = make(
        [0.5] * 4,
        model=model,
        latest=latest,
        others=[NodeSpec("node-b", 80.0, 2)],
        mono_s=[50.0, 51.0, 58.0, 59.0, 60.0],
    )
    own, other = sampler.sample()  # reading 1 s old: fresh
    assert (own.source, own.power_w, own.energy_wh) == (PowerSource.METERED, 40.0, 3.5)
    assert own.measured_at_ns == other.measured_at_ns == 1000 * S  # the reading's, not 1001
    assert own.headroom == pytest.approx(1 - 40 / 65)
    assert (other.node, other.source, other.power_w) == ("node-b", PowerSource.METERED, 22.0)
    assert other.headroom == pytest.approx(1 - 22 / 80)
    assert other.utilisation is None  # only node-b's own agent knows it
    own, other = sampler.sample()  # reading 8 s old > stale_after_s = 5
    assert own.source is PowerSource.MODELLED
    assert own.power_w == pytest.approx(P_IDLE_W + (P_MAX_W - P_IDLE_W) * 0.5, abs=0.2)
    assert (other.power_w, other.source, other.headroom) == (None, None, None)
    fresh_at_s[0] = 59.0
    outlets[0] = OutletReading(1, power_w=0.0, below_floor=True)
    own, _ = sampler.sample()  # 0 W under the PDU's metering floor is not "idle"
    assert own.source is PowerSource.MODELLED


def test_a_reading_the_telemetry_contract_refuses_is_no_reading(
    model: Callable[[float], float], caplog: pytest.LogCaptureFixture
) -> None:
    # e.g. an Eastron meter reporting export as negative active power: never published
    outlets = (OutletReading(1, power_w=-12.0), OutletReading(2, power_w=22.0, energy_wh=-1.0))
    sampler = make(
        [0.5],
        model=model,
        latest=lambda: TimedReading(reading(1000.0, *outlets), 50 * S),
        others=[NodeSpec("node-b", 80.0, 2)],
    )
    own, other = sampler.sample()
    assert own.source is PowerSource.MODELLED  # falls back to the model, as without a reading
    assert own.power_w == pytest.approx(P_IDLE_W + (P_MAX_W - P_IDLE_W) * 0.5, abs=0.2)
    assert (other.power_w, other.source, other.headroom, other.energy_wh) == (None,) * 4
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("node-a: metered power not published: power_w -12 W" in w for w in warnings)
    assert any("node-b: metered power not published: energy_wh -1 Wh" in w for w in warnings)


def test_clock_stepped_back_never_reorders_or_duplicates() -> None:
    metrics = AgentMetrics()
    wall_s = [1000.0, 1001.0, 1002.0, 990.0, 991.0, 1002.0, 1003.0]
    sampler = make([0.5] * 6, wall_s=wall_s, mono_s=[50.0 + i for i in range(7)], metrics=metrics)
    stamps = [s.measured_at_ns for _ in range(6) for s in sampler.sample()]
    assert stamps == [1001 * S, 1002 * S, 1003 * S]
    value = metrics.registry.get_sample_value
    assert value("eams_agent_clock_steps_back_total") == 1
    assert value("eams_agent_skipped_samples_total", {"reason": "clock_back"}) == 3


def test_a_reading_is_published_once_and_the_utilisation_window_spans_the_wait(
    model: Callable[[float], float],
) -> None:
    """A meter slower than the ticks: the reading of wall 1000.5 s is the newest for three
    ticks. It is published once, with its own time; the ticks that find nothing newer publish
    nothing for the metered nodes (the value ages, visibly), and the own node's next sample
    says its utilisation over the whole wait."""
    newest = [TimedReading(reading(1000.5, OutletReading(1, power_w=40.0)), round(50.5 * S))]
    sampler = make(
        [0.2, 0.4, 0.6, 0.8],
        model=model,
        latest=lambda: newest[0],
        others=[NodeSpec("node-b", 80.0, 1)],
    )
    first = sampler.sample()  # tick at wall 1001 s
    assert [(s.node, s.measured_at_ns, s.source) for s in first] == [
        ("node-a", int(1000.5 * S), PowerSource.METERED),
        ("node-b", int(1000.5 * S), PowerSource.METERED),
    ]
    assert first[0].utilisation == pytest.approx(0.2)
    assert sampler.sample() == [] and sampler.sample() == []  # ticks 1002, 1003 s
    newest[0] = TimedReading(reading(1003.5, OutletReading(1, power_w=45.0)), round(53.5 * S))
    own, other = sampler.sample()  # tick at 1004 s
    assert own.measured_at_ns == other.measured_at_ns == int(1003.5 * S)
    assert (own.power_w, own.source) == (45.0, PowerSource.METERED)
    assert own.utilisation == pytest.approx((0.4 + 0.6 + 0.8) / 3)  # ticks 1002–1004 s


def test_freshness_is_judged_by_when_the_reading_was_measured() -> None:
    """The poller moves ``read_at`` onto the monotonic clock: a reading that took 3 s to come
    back (or sat 3 s in a slow driver) is already 3 s old when it arrives."""
    answered = reading(1000.0, OutletReading(1, power_w=40.0))
    timed = measured(answered, wall_ns=1003 * S, mono_ns=53 * S)
    assert (timed.measured_mono_ns, timed.measured_at_ns) == (50 * S, 1000 * S)
    # A wall clock stepped back below read_at cannot make the reading younger than its arrival.
    assert measured(answered, wall_ns=990 * S, mono_ns=53 * S).measured_mono_ns == 53 * S
    sampler = make(
        [0.5, 0.5], latest=lambda: timed, mono_s=[54.0, 55.5, 56.0], wall_s=[1004.0, 1005.5, 1006.0]
    )
    (fresh,) = sampler.sample()  # 2.5 s after it arrived, but measured 5.5 s ago: stale
    assert fresh.source is None and fresh.measured_at_ns == int(1005.5 * S)

"""The PDU-owner agent with the project's PDU simulator as meter: headroom follows the virtual
node's load, and power falls back to the calibration model while the meter is down."""

from __future__ import annotations

from pathlib import Path

import pytest

from eams.meter.simulator import LinearCurve, PduSimulator, VirtualOutlet
from eams.telemetry import PowerSource, TelemetrySample
from tests.agent.conftest import (
    jsonl_samples,
    metric,
    running_agent,
    wait_for,
    write_calibration,
    write_config,
)

NODE_A = LinearCurve(60.0, 180.0)  # above the APC metering floor (50 W)
NODE_B = LinearCurve(55.0, 120.0)
CAP_W = 200.0


def latest(path: Path, node: str, after_ns: int) -> TelemetrySample | None:
    samples = [s for s in jsonl_samples(path) if s.node == node and s.measured_at_ns > after_ns]
    return samples[-1] if samples else None


def test_headroom_follows_load_and_source_falls_back_to_the_model(tmp_path: Path) -> None:
    write_calibration(tmp_path / "cal.json", "node-a")
    path = tmp_path / "samples.jsonl"
    sim = PduSimulator([VirtualOutlet("node-a", NODE_A), VirtualOutlet("node-b", NODE_B)])
    sim.start()
    try:
        config = write_config(
            tmp_path,
            power_cap_w=CAP_W,
            calibration="cal.json",
            meter={"url": sim.url, "stale_after_s": 0.8, "timeout_s": 0.2, "retries": 0},
            outlets={1: "node-a", 2: "node-b"},
            sinks=[{"type": "jsonl", "path": "samples.jsonl"}],
        )
        sim.set_load(2, 0.5)
        with running_agent(config) as agent:
            headrooms = []
            for load in (0.1, 0.5, 0.9):
                sim.set_load(1, load)
                power_w = NODE_A.power_w(load)
                sample = wait_for(
                    lambda p=power_w: (
                        (s := latest(path, "node-a", 0))
                        and s.source is PowerSource.METERED
                        and abs(s.power_w - p) <= 1.0
                        and s
                    ),
                    f"metered power at load {load}",
                )
                assert sample.headroom == pytest.approx(1 - sample.power_w / CAP_W)
                assert sample.utilisation is not None  # the host's real /proc/stat
                headrooms.append(sample.headroom)
            assert headrooms[0] > headrooms[1] > headrooms[2]
            other = latest(path, "node-b", 0)
            assert other.source is PowerSource.METERED
            assert other.power_w == pytest.approx(NODE_B.power_w(0.5), abs=1.0)
            assert other.utilisation is None
            port = agent.metrics_port
            assert metric(port, "eams_agent_node_power_watts", node="node-a", source="metered")

            sim.stop()
            stopped_ns = jsonl_samples(path)[-1].measured_at_ns
            modelled = wait_for(
                lambda: (
                    (s := latest(path, "node-a", stopped_ns))
                    and s.source is PowerSource.MODELLED
                    and s
                ),
                "modelled power while the meter is down",
            )
            assert 12.0 <= modelled.power_w <= 50.0  # the calibration's line, not the PDU
            assert latest(path, "node-b", modelled.measured_at_ns - 1).power_w is None
            assert (
                metric(port, "eams_agent_node_power_watts", node="node-a", source="metered") is None
            )
            assert metric(port, "eams_agent_node_power_watts", node="node-a", source="modelled")
            assert metric(port, "eams_agent_meter_read_errors_total") > 0

            sim.start()
            wait_for(
                lambda: (
                    (s := latest(path, "node-a", modelled.measured_at_ns))
                    and s.source is PowerSource.METERED
                ),
                "metered power once the meter is back",
            )
    finally:
        sim.stop()
    stamps = [s.measured_at_ns for s in jsonl_samples(path) if s.node == "node-a"]
    assert stamps == sorted(set(stamps))

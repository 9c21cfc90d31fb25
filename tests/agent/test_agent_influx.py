"""The agent against real servers: influxd 1.6 (v1 /write, read back with InfluxQL) and
VictoriaMetrics (influxdb-client's /api/v2/write, read back with /api/v1/export).

A JSONL sink runs beside the server sink in every test: it is the record of what the agent
measured, against which the server's content is compared.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from eams.telemetry import PowerSource, TelemetrySample
from tests.agent.conftest import (
    jsonl_samples,
    metric,
    running_agent,
    wait_for,
    write_calibration,
    write_config,
)
from tests.servers.influxdb import InfluxDB
from tests.servers.victoriametrics import VictoriaMetrics

JSONL = {"type": "jsonl", "path": "samples.jsonl"}


def v1_sink(server: InfluxDB) -> dict[str, object]:
    return {"type": "influx_v1", "url": server.url, "database": "eams", "max_backoff_s": 0.3}


def v2_sink(server: VictoriaMetrics) -> dict[str, object]:
    return {
        "type": "influx_v2",
        "url": server.url,
        "bucket": "eams",
        "org": "lab",
        "token": "t",
        "max_backoff_s": 0.3,
    }


def influx_points(server: InfluxDB) -> list[TelemetrySample]:
    """Every eams_node point, read back with InfluxQL, as samples."""
    series = server.query("SELECT * FROM eams_node", "eams")
    if not series:
        return []
    columns = series[0]["columns"]
    rows = [dict(zip(columns, values, strict=True)) for values in series[0]["values"]]
    return [TelemetrySample.from_json({**row, "measured_at_ns": row["time"]}) for row in rows]


def vm_stamps_ms(server: VictoriaMetrics, node: str = "node-a") -> list[int]:
    """Timestamps (ms) of every stored point of ``node`` (its ``power_cap_w`` field, present
    in every point), duplicates kept: VictoriaMetrics stores a re-sent point twice."""
    series = server.export('{__name__="eams_node_power_cap_w"}')
    return [t for s in series if s["metric"]["node"] == node for t in s["timestamps"]]


def test_v1_path_read_back_with_influxql(tmp_path: Path, influxdb: InfluxDB) -> None:
    write_calibration(tmp_path / "cal.json", "node-a")
    config = write_config(tmp_path, calibration="cal.json", sinks=[v1_sink(influxdb), JSONL])
    with running_agent(config) as agent:
        wait_for(lambda: len(jsonl_samples(tmp_path / "samples.jsonl")) >= 5, "5 samples")
    measured = jsonl_samples(tmp_path / "samples.jsonl")
    stored = influx_points(influxdb)
    assert sorted(stored, key=lambda s: s.measured_at_ns) == measured
    assert all(s.source is PowerSource.MODELLED and s.node == "node-a" for s in stored)
    assert agent.metrics.registry.get_sample_value(
        "eams_agent_sink_points_written_total", {"sink": "influx_v1"}
    ) == len(measured)


def test_v2_path_through_influxdb_client(tmp_path: Path, victoriametrics: VictoriaMetrics) -> None:
    write_calibration(tmp_path / "cal.json", "node-a")
    config = write_config(tmp_path, calibration="cal.json", sinks=[v2_sink(victoriametrics), JSONL])
    with running_agent(config):
        wait_for(lambda: len(jsonl_samples(tmp_path / "samples.jsonl")) >= 5, "5 samples")
    measured = jsonl_samples(tmp_path / "samples.jsonl")
    expected_ms = [s.measured_at_ns // 1_000_000 for s in measured]
    assert wait_for(lambda: sorted(vm_stamps_ms(victoriametrics)) == expected_ms, "export")
    (series,) = [
        s
        for s in victoriametrics.export('{__name__="eams_node_headroom"}')
        if s["metric"] == {"__name__": "eams_node_headroom", "node": "node-a", "source": "modelled"}
    ]
    assert series["values"] == pytest.approx([s.headroom for s in measured])


@pytest.mark.parametrize("kill", ["SIGKILL influxd", "SIGTERM victoria-metrics"])
def test_server_killed_mid_run_nothing_lost_nothing_doubled(
    kill: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """influxd is SIGKILLed (its WAL is fsynced before it acknowledges); VictoriaMetrics is
    stopped with SIGTERM, because SIGKILL loses its last second of *acknowledged* samples
    (in-memory buffers), which no client can see."""
    v1 = kill.endswith("influxd")
    server = request.getfixturevalue("influxdb" if v1 else "victoriametrics")
    sink = v1_sink(server) if v1 else v2_sink(server)
    name = "influx_v1" if v1 else "influx_v2"
    config = write_config(tmp_path, sample_period_s=0.1, sinks=[sink, JSONL])
    path = tmp_path / "samples.jsonl"

    def measured_after(t_ns: int) -> int:
        return sum(s.measured_at_ns > t_ns for s in jsonl_samples(path))

    with running_agent(config) as agent:
        port = agent.metrics_port
        wait_for(lambda: metric(port, "eams_agent_sink_points_written_total", sink=name), "writes")
        # the outage is timed by the clock the samples carry, not by the last line the JSONL
        # sink happened to have written (a busy machine delays it by a batch)
        down_ns = time.time_ns()
        server.kill() if v1 else server.stop()
        wait_for(lambda: measured_after(down_ns) >= 10, "10 samples measured in the outage")
        wait_for(lambda: (metric(port, "eams_agent_spool_points", sink=name) or 0) >= 10, "spool")
        up_ns = time.time_ns()
        server.start()
        wait_for(lambda: metric(port, "eams_agent_spool_points", sink=name) == 0, "replay")
        written = metric(port, "eams_agent_sink_points_written_total", sink=name)
    measured = jsonl_samples(path)
    # measured while no server answered, so only the spool can have delivered them
    during_outage = [s for s in measured if down_ns < s.measured_at_ns < up_ns]
    assert len(during_outage) >= 10
    assert written is not None and written >= len(measured) - 2  # the last ones: after scrape
    if v1:
        stored = sorted(influx_points(server), key=lambda s: s.measured_at_ns)
        assert stored == measured
    else:
        expected = Counter(s.measured_at_ns // 1_000_000 for s in measured)
        assert wait_for(lambda: Counter(vm_stamps_ms(server)) == expected, "all samples")


def test_unreachable_sink_at_start_then_up(tmp_path: Path) -> None:
    """The server is not running when the agent starts, then runs without the database (404,
    retried), then the database is created: every sample arrives, in order, once."""
    root = tmp_path / "influxd"
    root.mkdir()
    server = InfluxDB(root)
    config = write_config(tmp_path, sinks=[v1_sink(server), JSONL])
    try:
        with running_agent(config) as agent:
            port = agent.metrics_port
            wait_for(
                lambda: (metric(port, "eams_agent_spool_points", sink="influx_v1") or 0) >= 5,
                "spool",
            )
            server.start()
            errors = metric(port, "eams_agent_sink_write_errors_total", sink="influx_v1")
            wait_for(
                lambda: (
                    metric(port, "eams_agent_sink_write_errors_total", sink="influx_v1") > errors
                ),
                "a 404 while the database is missing",
            )
            server.create_database("eams")
            wait_for(
                lambda: metric(port, "eams_agent_spool_points", sink="influx_v1") == 0, "replay"
            )
        assert influx_points(server) == jsonl_samples(tmp_path / "samples.jsonl")
    finally:
        server.stop()


def test_spool_survives_an_agent_restart(tmp_path: Path) -> None:
    """Samples spooled while the server was down are replayed by the next agent process."""
    root = tmp_path / "influxd"
    root.mkdir()
    server = InfluxDB(root)
    config = write_config(tmp_path, sinks=[v1_sink(server), JSONL])
    try:
        with running_agent(config) as agent:
            port = agent.metrics_port
            wait_for(
                lambda: (metric(port, "eams_agent_spool_points", sink="influx_v1") or 0) >= 5,
                "spool",
            )
        first_run = jsonl_samples(tmp_path / "samples.jsonl")
        server.start()
        server.create_database("eams")
        with running_agent(config) as agent:
            port = agent.metrics_port
            wait_for(
                lambda: len(jsonl_samples(tmp_path / "samples.jsonl")) > len(first_run) + 3,
                "samples",
            )
            wait_for(
                lambda: metric(port, "eams_agent_spool_points", sink="influx_v1") == 0, "replay"
            )
        both_runs = jsonl_samples(tmp_path / "samples.jsonl")
        assert influx_points(server) == both_runs
        assert len(both_runs) > len(first_run) >= 5
    finally:
        server.stop()

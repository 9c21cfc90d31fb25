"""Bad conditions the agent must survive: a full spool disk, a sink refusing the points."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from eams.agent.config import load_config
from eams.agent.errors import AgentError
from eams.agent.runner import Agent
from tests.agent.conftest import fill, jsonl_samples, metric, running_agent, wait_for, write_config
from tests.conftest import free_port


def test_full_spool_disk_is_counted_and_the_agent_keeps_sampling(
    tmp_path: Path, tiny_disk: Path
) -> None:
    dead = {"type": "influx_v1", "url": f"http://127.0.0.1:{free_port()}", "database": "eams"}
    config = write_config(
        tmp_path,
        spool={"dir": str(tiny_disk), "max_points": 1_000_000, "policy": "drop_oldest"},
        sinks=[{**dead, "max_backoff_s": 0.2}, {"type": "jsonl", "path": "samples.jsonl"}],
    )
    filler = fill(tiny_disk)
    with running_agent(config) as agent:
        port = agent.metrics_port

        def disk_full_drops() -> float:
            return (
                metric(
                    port, "eams_agent_dropped_points_total", sink="influx_v1", reason="disk_full"
                )
                or 0
            )

        wait_for(lambda: disk_full_drops() >= 3, "points dropped for a full disk")
        assert metric(port, "eams_agent_spool_points", sink="influx_v1") == 0
        taken = len(jsonl_samples(tmp_path / "samples.jsonl"))
        wait_for(lambda: len(jsonl_samples(tmp_path / "samples.jsonl")) > taken + 2, "sampling")
        filler.unlink()
        wait_for(
            lambda: (metric(port, "eams_agent_spool_points", sink="influx_v1") or 0) >= 3,
            "spooling",
        )
        dropped = disk_full_drops()
    assert dropped >= 3


def test_points_the_server_rejects_are_dropped_and_counted(tmp_path: Path, influxdb) -> None:
    """A 400 (here: a field type conflict) can never succeed: the points are dropped and
    counted, not retried, so they do not pile up in the spool."""
    conflict = f'eams_node,node=node-x power_cap_w="text" {time.time_ns()}'  # same shard
    httpx.post(f"{influxdb.url}/write", params={"db": "eams"}, content=conflict).raise_for_status()
    sink = {"type": "influx_v1", "url": influxdb.url, "database": "eams", "batch_size": 1}
    config = write_config(tmp_path, sinks=[sink])
    with running_agent(config) as agent:
        port = agent.metrics_port
        wait_for(
            lambda: metric(
                port, "eams_agent_dropped_points_total", sink="influx_v1", reason="rejected"
            ),
            "a rejected point",
        )
        assert metric(port, "eams_agent_spool_points", sink="influx_v1") == 0


def test_wall_clock_stepped_back_mid_run(tmp_path: Path, influxdb) -> None:
    """The host clock cannot be stepped on a shared machine, so the agent gets a wall clock
    that is the real one until the 5th sample, then 1 s behind it (an NTP step back)."""
    calls = {"n": 0}

    def stepped_wall_ns() -> int:
        calls["n"] += 1
        return time.time_ns() - (1_000_000_000 if calls["n"] > 5 else 0)

    sink = {"type": "influx_v1", "url": influxdb.url, "database": "eams"}
    config = write_config(tmp_path, sinks=[sink, {"type": "jsonl", "path": "samples.jsonl"}])
    with running_agent(config, wall_ns=stepped_wall_ns) as agent:
        wait_for(lambda: len(jsonl_samples(tmp_path / "samples.jsonl")) >= 8, "samples after it")
    registry = agent.metrics.registry
    assert registry.get_sample_value("eams_agent_clock_steps_back_total") == 1
    skipped = registry.get_sample_value(
        "eams_agent_skipped_samples_total", {"reason": "clock_back"}
    )
    assert skipped >= 3  # about 1 s of 0.2 s ticks held back
    stamps = [s.measured_at_ns for s in jsonl_samples(tmp_path / "samples.jsonl")]
    assert stamps == sorted(set(stamps))
    series = influxdb.query("SELECT power_cap_w FROM eams_node", "eams")
    assert [row[0] for row in series[0]["values"]] == stamps


def test_spool_of_a_renamed_sink_is_reported(tmp_path: Path, caplog) -> None:
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "old-name.sqlite").touch()
    config = write_config(tmp_path, sinks=[{"type": "jsonl", "path": "s.jsonl", "name": "new"}])
    Agent(load_config(config)).close()
    assert (
        f"spool {tmp_path / 'spool' / 'old-name.sqlite'} belongs to no configured sink"
        in caplog.text
    )
    assert (tmp_path / "spool" / "new.sqlite").exists()


def test_corrupted_spool_file_at_start(tmp_path: Path) -> None:
    """Garbage in a sink's spool file: the agent starts, moves it aside, and spools into a new
    file while the sink is down (before: every record dropped as spool_error, for good)."""
    dead = {"type": "influx_v1", "url": f"http://127.0.0.1:{free_port()}", "database": "eams"}
    config = write_config(tmp_path, sinks=[{**dead, "max_backoff_s": 0.2}])
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "influx_v1.sqlite").write_bytes(b"\xff" * 10_000)
    with running_agent(config) as agent:
        port = agent.metrics_port
        wait_for(
            lambda: (metric(port, "eams_agent_spool_points", sink="influx_v1") or 0) >= 3,
            "spooling into a fresh file",
        )
        assert (
            metric(port, "eams_agent_dropped_points_total", sink="influx_v1", reason="spool_error")
            == 0
        )
    assert len(list((tmp_path / "spool").glob("influx_v1.sqlite.corrupt-*"))) == 1


def test_a_second_agent_on_the_same_spool_is_refused(tmp_path: Path) -> None:
    """Two agents replaying one spool would send each spooled point twice: the second one is
    refused, naming the directory and the first one's pid; it starts once the first closed."""
    config = load_config(write_config(tmp_path, sinks=[{"type": "jsonl", "path": "s.jsonl"}]))
    first = Agent(config)
    with pytest.raises(AgentError, match=rf"spool directory {tmp_path / 'spool'} is in use .*pid"):
        Agent(config)
    first.close()
    Agent(config).close()

"""``check-config`` and ``run`` as an operator or systemd runs them (``python -m eams.agent``;
the same group is ``eams agent``). Signals need a real process; the rest runs the same
entry point in-process (:func:`eams.agent.__main__.main`), which is much faster."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from eams.agent.__main__ import main
from eams.agent.spool import Spool
from tests.agent.conftest import jsonl_samples, scrape, wait_for, write_calibration, write_config
from tests.conftest import free_port

EAMS = [sys.executable, "-m", "eams.agent"]  # the entry point the systemd unit uses


def run_main(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """``python -m eams.agent ARGS`` in-process: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["eams.agent", *args])
    try:
        main()
        status = 0
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


METRIC_NAMES = {
    "eams_agent_node_power_watts",
    "eams_agent_node_headroom_ratio",
    "eams_agent_node_utilisation_ratio",
    "eams_agent_sample_age_seconds",
    "eams_agent_samples_total",
    "eams_agent_queue_points",
    "eams_agent_spool_points",
    "eams_agent_spool_bytes",
    "eams_agent_sink_write_errors_total",
    "eams_agent_dropped_points_total",
}


def test_check_config_valid(tmp_path: Path, capsys, monkeypatch) -> None:
    write_calibration(tmp_path / "cal.json", "node-a")
    path = write_config(
        tmp_path,
        calibration="cal.json",
        sinks=[{"type": "jsonl", "path": "x"}],
        meter={"url": "snmp://s3cret@127.0.0.1:16100"},
        outlets={1: "node-a", 2: "node-b"},
    )
    status, out, err = run_main(["check-config", str(path)], capsys, monkeypatch)
    assert status == 0, err
    assert "node node-a: P_cap 65 W" in out
    assert f"sink jsonl: {tmp_path / 'x'}" in out
    assert (
        "meter: snmp://***@127.0.0.1:16100; outlets 1 node-a (P_cap 65 W), 2 node-b (P_cap 65 W)"
        in out
    )
    assert "s3cret" not in out


def test_check_config_refuses_in_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    write_calibration(tmp_path / "cal.json", "node-b")
    path = write_config(tmp_path, calibration="cal.json")
    status, _, err = run_main(["check-config", str(path)], capsys, monkeypatch)
    assert status == 1
    assert err.count("\n") == 1
    assert err.startswith("eams: error: ")
    assert "calibration" in err and "node-b" in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run_stops_cleanly_on_signal(tmp_path: Path, signum: signal.Signals) -> None:
    """Exit 0; samples the dead sink could not take are in its spool for the next start."""
    metrics_port = free_port()
    write_calibration(tmp_path / "cal.json", "node-a")
    dead = {"type": "influx_v1", "url": f"http://127.0.0.1:{free_port()}", "database": "eams"}
    path = write_config(
        tmp_path,
        calibration="cal.json",
        metrics={"host": "127.0.0.1", "port": metrics_port},
        sinks=[dead, {"type": "jsonl", "path": "samples.jsonl"}],
    )
    agent = subprocess.Popen([*EAMS, "run", "--config", str(path)], stderr=subprocess.PIPE)
    try:
        wait_for(lambda: len(jsonl_samples(tmp_path / "samples.jsonl")) >= 3, "3 samples")
        names = {name for name, _ in scrape(metrics_port)}
        agent.send_signal(signum)
        _, stderr = agent.communicate(timeout=20)
    finally:
        agent.kill()
    assert agent.returncode == 0, stderr.decode()
    assert names >= METRIC_NAMES
    measured = jsonl_samples(tmp_path / "samples.jsonl")
    spool = Spool(
        tmp_path / "spool" / "influx_v1.sqlite", max_points=10, max_bytes=None, policy="drop_oldest"
    )
    spooled = [line for _, line in spool.peek(1000)]
    spool.close()
    assert spooled == [s.to_line_protocol() for s in measured]


def test_run_refuses_a_metrics_port_in_use(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(signal, "signal", lambda *_: None)  # keep pytest's own handlers
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        path = write_config(tmp_path, metrics={"host": "127.0.0.1", "port": port})
        status, _, err = run_main(["run", "--config", str(path)], capsys, monkeypatch)
    assert status == 1
    assert err.splitlines()[-1] == (
        f"eams: error: metrics: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


def test_run_logs_no_line_per_write(tmp_path: Path, influxdb) -> None:
    """At INFO, a healthy agent is quiet: httpx's per-request lines (one per sink per period,
    filling the journal) are shown only with --log-level DEBUG."""
    sink = {"type": "influx_v1", "url": influxdb.url, "database": "eams"}
    path = write_config(tmp_path, sinks=[sink, {"type": "jsonl", "path": "samples.jsonl"}])
    agent = subprocess.Popen([*EAMS, "run", "--config", str(path)], stderr=subprocess.PIPE)
    try:
        wait_for(lambda: len(jsonl_samples(tmp_path / "samples.jsonl")) >= 3, "3 samples")
        wait_for(lambda: influxdb.query("SELECT count(*) FROM eams_node", "eams"), "a write")
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=20)
    finally:
        agent.kill()
    assert agent.returncode == 0, stderr.decode()
    assert "HTTP Request" not in stderr.decode()

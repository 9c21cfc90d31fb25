"""Agent test helpers: calibration files, configs, an agent running in a thread, its metrics,
and the real servers (influxd 1.6, VictoriaMetrics) through the shared launchers."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from eams.agent.config import load_config
from eams.agent.runner import Agent
from eams.calibrate.calfile import Calibration, FitSummary, save_calibration
from eams.calibrate.fit import fit_linear
from eams.telemetry import TelemetrySample
from tests.servers._process import fresh
from tests.servers.influxdb import INFLUXD, InfluxDB
from tests.servers.victoriametrics import victoriametrics  # noqa: F401 (the fixture)

P_IDLE_W, P_MAX_W = 12.0, 50.0


def write_calibration(path: Path, node: str) -> Path:
    """Fit a sweep of a node whose power is 12 W + 38 W·u (±0.2 W) and save its calibration."""
    utilisation = np.repeat(np.linspace(0.0, 1.0, 11), 3)
    noise_w = np.tile([-0.2, 0.0, 0.2], 11)
    fit = fit_linear(utilisation, P_IDLE_W + (P_MAX_W - P_IDLE_W) * utilisation + noise_w)
    calibration = Calibration(
        node=node,
        created_at=datetime.now(UTC),
        meter="snmp://127.0.0.1:161",
        outlet=1,
        fit=FitSummary.from_result(fit),
        p_active_idle_w=P_IDLE_W,
        speed=None,
    )
    return save_calibration(calibration, path)


def write_config(directory: Path, **settings: Any) -> Path:
    """A config file in ``directory``: node ``node-a``, P_cap 65 W, 0.2 s period, a spool, an
    ephemeral metrics port, updated with ``settings``."""
    config = {
        "node": "node-a",
        "power_cap_w": 65.0,
        "sample_period_s": 0.2,
        "spool": {"dir": "spool", "max_points": 100_000, "policy": "drop_oldest"},
        "metrics": {"host": "127.0.0.1", "port": 0},
        **settings,
    }
    path = directory / "agent.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def running_agent(config_path: Path, **agent_options: Any) -> Iterator[Agent]:
    """Run ``eams agent run`` in-process (a thread); on exit stop it (flush, close) and join."""
    agent = Agent(load_config(config_path), **agent_options)
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,), name="agent-under-test")
    thread.start()
    try:
        wait_for(lambda: agent.metrics_port is not None, "metrics server")
        yield agent
    finally:
        stop.set()
        thread.join(30)
        assert not thread.is_alive(), "the agent did not stop within 30 s"


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 20.0) -> Any:
    """Poll ``condition`` every 50 ms until truthy; return its value or fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def scrape(target: int | str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """``/metrics`` of a local port (an agent) or of a base URL, as {(name, labels): value}."""
    base = f"http://127.0.0.1:{target}" if isinstance(target, int) else target
    text = httpx.get(f"{base}/metrics", timeout=5).text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def metric(port: int, name: str, **labels: str) -> float | None:
    """One sample's value from ``/metrics``, or ``None`` when that series is absent."""
    return scrape(port).get((name, frozenset(labels.items())))


@pytest.fixture
def influxdb(tmp_path: Path) -> Iterator[InfluxDB]:
    """A fresh influxd 1.6 with database ``eams``; stopped after the test."""
    with fresh(InfluxDB, tmp_path / "influxd", INFLUXD, "influxdb") as server:
        server.create_database("eams")
        yield server


def jsonl_samples(path: Path) -> list[TelemetrySample]:
    """The samples a JSONL sink wrote (the ground truth of what the agent measured)."""
    if not path.exists():
        return []
    return [TelemetrySample.from_json(json.loads(line)) for line in path.read_text().splitlines()]


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 512 KiB tmpfs (needs root, which the test machines give)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs to produce a real ENOSPC needs root")
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(directory: Path) -> Path:
    """Write a file until the filesystem says ENOSPC; return it."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler

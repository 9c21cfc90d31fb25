"""SIGTERM against a real agent process whose sink is slower than production (issue 16, item 1).

The agent (``python -m eams.agent run``) meters 3 outlets of the PDU simulator every 0.1 s
(30 points/s) and writes them to a real influxd through :class:`DelayProxy`, which answers
each request after 0.3 s; with ``batch_size: 2`` the sink takes about 7 points/s. SIGTERM comes
at a random moment; the agent is started again with the proxy fast, and InfluxDB must then
hold exactly the points the agent's JSONL file holds, each acknowledged once and in order.
Before the fix the backlog was held in memory and died with the process (a 60 s run: 1,374 of
1,836 samples lost). Also: a stop while the agent starts exits 0, without a traceback.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from eams.meter.simulator import LinearCurve, PduSimulator, VirtualOutlet
from tests.agent.conftest import jsonl_samples, scrape, wait_for, write_config
from tests.agent.delay_proxy import DelayProxy
from tests.agent.test_agent_influx import influx_points
from tests.conftest import free_port
from tests.servers.influxdb import InfluxDB

AGENT = [sys.executable, "-m", "eams.agent", "run", "--config"]
NODES = ("node-a", "node-b", "node-c")
SINK = "influx1"


def _stop(agent: subprocess.Popen[bytes]) -> tuple[int, str]:
    """SIGTERM the agent; its exit status and stderr."""
    agent.send_signal(signal.SIGTERM)
    try:
        _, stderr = agent.communicate(timeout=60)
    finally:
        agent.kill()
    return agent.returncode, stderr.decode()


def test_sigterm_with_a_slow_sink_spools_the_backlog(tmp_path: Path, influxdb: InfluxDB) -> None:
    seed = int.from_bytes(os.urandom(4))
    rng = random.Random(seed)
    metrics_port = free_port()
    sim = PduSimulator([VirtualOutlet(node, LinearCurve(60.0, 180.0)) for node in NODES])
    with sim, DelayProxy(influxdb.url, delay_s=0.3) as proxy:
        sink = {
            "type": "influx_v1",
            "name": SINK,
            "url": proxy.url,
            "database": "eams",
            "batch_size": 2,
            "timeout_s": 2,
            "max_backoff_s": 0.5,
        }
        config = write_config(
            tmp_path,
            power_cap_w=200.0,
            sample_period_s=0.1,
            meter={"url": sim.url, "stale_after_s": 1.0, "timeout_s": 0.5, "retries": 0},
            outlets={1: "node-a", 2: "node-b", 3: "node-c"},
            metrics={"host": "127.0.0.1", "port": metrics_port},
            sinks=[sink, {"type": "jsonl", "path": "samples.jsonl"}],
        )
        jsonl = tmp_path / "samples.jsonl"
        agent = subprocess.Popen([*AGENT, str(config)], stderr=subprocess.PIPE)
        try:
            wait_for(lambda: jsonl_samples(jsonl), "the first samples")
            time.sleep(rng.uniform(2.0, 6.0))  # the random moment
            before = scrape(metrics_port)
        finally:
            status, stderr = _stop(agent)
        assert status == 0, stderr
        assert "Traceback" not in stderr and "did not stop" not in stderr, stderr
        label = frozenset({("sink", SINK)})
        # the backlog is visible while it builds: on disk, and the in-memory rest as a gauge
        assert before[("eams_agent_spool_points", label)] > 0, f"seed {seed}"
        assert ("eams_agent_queue_points", label) in before
        measured_first_run = jsonl_samples(jsonl)
        unacknowledged = len(measured_first_run) - len(proxy.acknowledged_lines)
        assert unacknowledged > 0, f"seed {seed}: the sink kept up, nothing was tested"

        proxy.delay_s = 0.0
        agent = subprocess.Popen([*AGENT, str(config)], stderr=subprocess.PIPE)
        try:
            first_run = {(s.node, s.measured_at_ns) for s in measured_first_run}
            wait_for(
                lambda: first_run <= {(s.node, s.measured_at_ns) for s in influx_points(influxdb)},
                "the first run's points in InfluxDB",
                timeout_s=60,
            )
        finally:
            status, stderr = _stop(agent)
        assert status == 0, stderr

    measured = sorted(jsonl_samples(jsonl), key=lambda s: (s.measured_at_ns, s.node))
    stored = sorted(influx_points(influxdb), key=lambda s: (s.measured_at_ns, s.node))
    lost = len(measured) - len(stored)
    assert lost == 0 and stored == measured, (
        f"seed {seed}: {len(measured)} measured, {len(stored)} in InfluxDB"
    )
    doubled = {line: n for line, n in Counter(proxy.acknowledged_lines).items() if n > 1}
    assert not doubled, f"seed {seed}: acknowledged more than once: {doubled}"
    assert sorted(proxy.acknowledged_lines) == sorted(s.to_line_protocol() for s in measured)
    delivered_ns = [int(line.rsplit(" ", 1)[1]) for line in proxy.acknowledged_lines]
    assert delivered_ns == sorted(delivered_ns), f"seed {seed}: delivered out of order"
    assert {s.node for s in measured} == set(NODES)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_the_agent_starts_exits_0(tmp_path: Path, signum: signal.Signals) -> None:
    """The signal comes while the agent reads its configuration, before ``run`` has started
    anything: a named pipe holds the agent there, with no timing involved. Before the fix
    SIGTERM killed it (status -15) and SIGINT raised KeyboardInterrupt mid-read."""
    text = write_config(tmp_path, sinks=[{"type": "jsonl", "path": "samples.jsonl"}]).read_text()
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    agent = subprocess.Popen([*AGENT, str(fifo)], stderr=subprocess.PIPE)
    try:
        with fifo.open("w") as pipe:  # returns once the agent opened it: it is reading it
            agent.send_signal(signum)
            with contextlib.suppress(BrokenPipeError):  # the agent died: asserted below
                pipe.write(text)
        _, stderr_bytes = agent.communicate(timeout=60)
    finally:
        agent.kill()
    stderr = stderr_bytes.decode()
    assert agent.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "stop requested while starting: not started" in stderr
    assert not (tmp_path / "spool").exists()  # nothing was started, so nothing to flush


def test_sigterm_at_a_random_moment_of_start_up_is_clean(tmp_path: Path) -> None:
    """At any moment: exit 0, or killed by SIGTERM (-15) only while the interpreter itself
    starts, before any agent code ran (no spool directory yet); never a traceback."""
    seed = int.from_bytes(os.urandom(4))
    rng = random.Random(seed)
    config = write_config(tmp_path, sinks=[{"type": "jsonl", "path": "samples.jsonl"}])
    for attempt in range(8):
        shutil.rmtree(tmp_path / "spool", ignore_errors=True)
        agent = subprocess.Popen([*AGENT, str(config)], stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, 1.0))
        status, stderr = _stop(agent)
        where = f"seed {seed}, attempt {attempt}: status {status}: {stderr}"
        assert status in (0, -signal.SIGTERM), where
        assert "Traceback" not in stderr, where
        if status != 0:
            assert not (tmp_path / "spool").exists(), where

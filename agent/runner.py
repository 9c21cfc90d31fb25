"""Wire a configuration into a running agent: sampler, meter poller, sink channels, metrics.

The main loop ticks on the monotonic clock every ``sample_period_s`` (a late tick is not
repeated: the next one comes at the next multiple of the period). :meth:`Agent.run` returns
after its stop event is set, having flushed and closed every sink.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from eams.agent.channel import SinkChannel
from eams.agent.config import AgentConfig, MeterConfig, load_node_calibration
from eams.agent.errors import AgentError
from eams.agent.metrics import AgentMetrics
from eams.agent.poller import MeterPoller, SyncMeter
from eams.agent.sampler import NodeSpec, Sampler
from eams.agent.sinks import SINKS
from eams.agent.spool import Spool

log = logging.getLogger(__name__)

#: How long :meth:`Agent.close` waits for the meter poller (s).
STOP_TIMEOUT_S = 10.0


def open_blocking_meter(config: MeterConfig) -> SyncMeter:
    """The PDU as a synchronous meter (:class:`eams.meter.blocking.BlockingMeter`)."""
    from eams.meter.blocking import BlockingMeter  # the SNMP stack loads only on the PDU owner

    return BlockingMeter(
        config.url, driver=config.driver, timeout_s=config.timeout_s, retries=config.retries
    )


def lock_spool_dir(directory: Path) -> IO[str] | None:
    """Hold an exclusive ``flock`` on ``<directory>/agent.lock`` (released when the returned
    file is closed or the process ends), with this process id written into it.

    Two agents replaying one spool would each send every spooled point (a duplicate in
    VictoriaMetrics and in any non-idempotent consumer), e.g. the systemd unit and an
    operator's ``run`` by hand with another metrics port.

    Returns
    -------
    file or None
        ``None`` when the directory cannot be created or written (a full disk, which the
        spool itself tolerates and counts): the agent then runs without the lock.

    Raises
    ------
    AgentError
        Another process holds the lock; names the directory and that process's id.
    """
    lock_path = directory / "agent.lock"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle = lock_path.open("a+")
    except OSError as exc:
        log.warning("spool lock %s: %s; running without it", lock_path, exc)
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise AgentError(
            f"spool directory {directory} is in use by another agent (pid {holder}, lock "
            f"{lock_path}): two agents would send every spooled point twice"
        ) from None
    try:
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
    except OSError:
        pass  # the pid is only for the message above; the lock itself is held
    return handle


class Agent:
    """A configured agent.

    Parameters
    ----------
    config : AgentConfig
        Validated configuration (see :func:`eams.agent.config.load_config`).
    sampler_options : dict
        Passed to :class:`~eams.agent.sampler.Sampler` (``wall_ns``, ``mono_ns``, ``read_cpu``).

    Raises
    ------
    ConfigError
        When the calibration file is unreadable or another node's.
    AgentError
        When another agent uses the same spool directory (:func:`lock_spool_dir`).
    """

    def __init__(
        self,
        config: AgentConfig,
        **sampler_options: Callable[[], object],
    ):
        self.config = config
        self.metrics = AgentMetrics()
        self._lock = lock_spool_dir(config.spool.dir)  # first: nothing else opened if refused
        calibration = load_node_calibration(config)
        model = calibration.model().power_w if calibration is not None else None
        self.poller = (
            MeterPoller(open_blocking_meter(config.meter), config.sample_period_s, self.metrics)
            if config.meter is not None
            else None
        )
        outlets = config.outlet_nodes()
        own_outlet = next((o for o, (node, _) in outlets.items() if node == config.node), None)
        self.sampler = Sampler(
            NodeSpec(config.node, config.power_cap_w, own_outlet),
            [NodeSpec(node, cap, o) for o, (node, cap) in outlets.items() if node != config.node],
            model,
            self.poller.latest if self.poller is not None else None,
            config.meter.stale_after_s if config.meter is not None else 0.0,
            self.metrics,
            **sampler_options,  # type: ignore[arg-type]
        )
        spool = config.spool
        self.channels = [
            SinkChannel(
                SINKS[sink.type](name, sink),
                Spool(
                    spool.dir / f"{name}.sqlite",
                    max_points=spool.max_points,
                    max_bytes=spool.max_bytes,
                    policy=spool.policy,
                ),
                self.metrics,
                batch_size=sink.batch_size,
                max_backoff_s=sink.max_backoff_s,
            )
            for name, sink in zip(config.sink_names(), config.sinks, strict=True)
        ]
        for orphan in sorted(
            set(spool.dir.glob("*.sqlite")) - {c.spool.path for c in self.channels}
        ):
            log.warning("spool %s belongs to no configured sink: it is not replayed", orphan)
        self.metrics_port: int | None = None

    def run(self, stop: threading.Event) -> None:
        """Serve metrics, start polling and delivery, tick until ``stop`` is set, then
        flush and close everything (:meth:`close`)."""
        try:
            self.metrics_port = self.metrics.serve(
                self.config.metrics.host, self.config.metrics.port
            )
            log.info("metrics on http://%s:%d/metrics", self.config.metrics.host, self.metrics_port)
            if self.poller is not None:
                self.poller.start()
            for channel in self.channels:
                channel.start()
            period_s = self.config.sample_period_s
            next_tick = time.monotonic() + period_s
            while not stop.wait(max(0.0, next_tick - time.monotonic())):
                self.tick()
                now = time.monotonic()
                next_tick += period_s * max(1, int((now - next_tick) // period_s) + 1)
        finally:
            self.close()

    def tick(self) -> None:
        """Take one period's samples and hand them to every sink."""
        samples = self.sampler.sample()
        for sample in samples:
            self.metrics.observe(sample)
        if samples:
            for channel in self.channels:
                channel.submit([channel.sink.encode(s) for s in samples])

    def close(self) -> None:
        """Stop the poller, flush and close every sink and spool, stop the metrics server."""
        if self.poller is not None:
            self.poller.stop(STOP_TIMEOUT_S)
        # All channels flush at once. Each may start writes for timeout_s + 1 s (the backlog,
        # spool first), then spools what is left; with the write then in flight it ends within
        # 2 × timeout_s + 2 s (≤ 22 s with timeout_s ≤ 10). One after the other, several
        # hanging sinks would outlast systemd's TimeoutStopSec and be killed mid-flush.
        started = time.monotonic()
        for channel, sink in zip(self.channels, self.config.sinks, strict=True):
            channel.request_stop(write_until=started + sink.timeout_s + 1)
        for channel, sink in zip(self.channels, self.config.sinks, strict=True):
            budget_s = 2 * sink.timeout_s + 2
            channel.stop(max(0.0, started + budget_s - time.monotonic()))
        self.metrics.close()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

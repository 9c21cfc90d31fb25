"""The demo's virtual testbed: six virtual nodes behind the PDU simulator on loopback.

A :class:`VirtualNode` has a CPU load (set by the calibration sweep or by the workload replay)
and a virtual ``/proc/stat``: cumulative busy and total ticks that grow with real time, so the
sweep and the agents measure utilisation exactly as on a real node (from counter deltas). The
simulator polls each node's load at every SNMP request, so the outlet power follows it.

:class:`VirtualRunner` is the calibration sweep's load driver for a virtual node: it implements
the :class:`eams.calibrate.runners.Runner` contract (``cat /proc/stat``, ``getconf``,
``stress-ng --cpu N --cpu-load L``) by setting the node's load instead of running programs,
and answers stress-ng's metrics with bogo-ops/s proportional to the node's speed.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence

from eams.calibrate.errors import SweepError
from eams.demo.fleet import DemoNode
from eams.errors import ProcStatError
from eams.meter.simulator import MeasuredCurve, NodePower, PduSimulator, VirtualOutlet
from eams.procstat import CpuTimes

TICKS_PER_S = 1000
"""Virtual /proc/stat resolution per CPU (real kernels use USER_HZ = 100)."""
BOGO_OPS_PER_CORE_S = 1000.0
"""Virtual stress-ng throughput of one reference core at 100 % load (bogo-ops/s)."""
STRESS_NG_VERSION = "stress-ng, version 0.15.06 (virtual node)"
DRIVER = "apc_rpdu2"
"""The simulator serves an APC rPDU2-like MIB; every demo stage reads it with this driver."""
METER_TIMEOUT_S, METER_RETRIES = 2.0, 2
"""Generous SNMP bounds: the six sweeps, later the six agents, share a small machine."""


class VirtualNode:
    """A node whose CPU load is set from outside; thread-safe.

    Parameters
    ----------
    spec : DemoNode
    clock : callable
        Monotonic seconds (``time.monotonic``).
    """

    def __init__(self, spec: DemoNode, clock: Callable[[], float] = time.monotonic) -> None:
        self.spec = spec
        self._clock = clock
        self.os_state: Callable[[], str] = lambda: "running"
        """The node's power state (the simulator's, once on the testbed): its OS, and so its
        agent, runs only while it is ``running``."""
        self.last_read_s: float | None = None
        """When its ``/proc/stat`` was last read (epoch s): its agent's last report."""
        self._lock = threading.Lock()
        self._load = 0.0
        self._since = clock()
        self._busy_s = 0.0
        self._total_s = 0.0

    def _advance(self, now: float) -> None:
        elapsed = max(0.0, now - self._since)
        self._busy_s += self._load * elapsed
        self._total_s += elapsed
        self._since = now

    def set_load(self, utilisation: float) -> None:
        """Set the CPU load (fraction of all cores, clipped to [0, 1]) from now on."""
        with self._lock:
            self._advance(self._clock())
            self._load = min(1.0, max(0.0, utilisation))

    def load(self) -> float:
        """The current load (fraction); the simulator's load source."""
        return self._load

    def cpu_times(self) -> CpuTimes:
        """Cumulative busy and total ticks of all cores (a virtual ``/proc/stat``).

        Raises
        ------
        ProcStatError
            The node is not running (off, booting, shutting down): no OS reads it.
        """
        state = self.os_state()
        if state != "running":
            raise ProcStatError(f"{self.spec.name} is {state}: its OS does not run")
        with self._lock:
            self.last_read_s = time.time()
            self._advance(self._clock())
            scale = TICKS_PER_S * self.spec.cores
            return CpuTimes(
                busy_ticks=round(self._busy_s * scale), total_ticks=round(self._total_s * scale)
            )

    def proc_stat_text(self) -> str:
        """The ``cpu`` line of ``/proc/stat`` for :meth:`cpu_times` (user and idle columns)."""
        times = self.cpu_times()
        return f"cpu  {times.busy_ticks} 0 0 {times.total_ticks - times.busy_ticks} 0 0 0 0 0 0\n"


class Testbed:
    """The PDU simulator with one outlet per virtual node (outlet n = node n, 1-based).

    Parameters
    ----------
    nodes : list of DemoNode
    power : NodePower, optional
        Every node's hidden power states (boot, soft-off, shutdown); the simulator's defaults
        when not given.
    """

    def __init__(self, nodes: list[DemoNode], power: NodePower | None = None) -> None:
        self.nodes = [VirtualNode(spec) for spec in nodes]
        outlets = [
            VirtualOutlet(
                spec.name,
                MeasuredCurve(
                    [round(0.1 * i, 1) for i in range(11)], spec.points_w, label=spec.server
                ),
                power or NodePower(),
            )
            for spec in nodes
        ]
        self.simulator = PduSimulator(outlets)

    def start(self) -> Testbed:
        """Start the simulator and make each outlet follow its node's load."""
        self.simulator.start()
        for number, node in enumerate(self.nodes, start=1):
            self.simulator.set_load_source(number, node.load)
            node.os_state = functools.partial(self._node_state, number)
        return self

    def _node_state(self, outlet: int) -> str:
        return self.simulator.state(outlet).node

    def stop(self) -> None:
        """Stop the simulator (idempotent)."""
        self.simulator.stop()

    @property
    def url(self) -> str:
        """The meter URL of the simulated PDU."""
        return self.simulator.url

    def __enter__(self) -> Testbed:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _VirtualJob:
    def __init__(self, node: VirtualNode, cpus: int, load_pct: int) -> None:
        self._node = node
        self._started = time.monotonic()
        self._cpus = cpus
        self._load = load_pct / 100
        self._stopped: str | None = None
        node.set_load(self._load * min(cpus, node.spec.cores) / node.spec.cores)

    def running(self) -> bool:
        """Whether the virtual stress-ng still loads the node (the sweep's ``Job`` contract)."""
        return self._stopped is None

    def stop(self) -> str:
        """Unload the node; return stress-ng's output with a ``--metrics-brief`` row whose
        bogo-ops/s are proportional to the node's speed and load (idempotent)."""
        if self._stopped is None:
            self._node.set_load(0.0)
            real_s = max(1e-9, time.monotonic() - self._started)
            rate = BOGO_OPS_PER_CORE_S * self._node.spec.speed * self._cpus * self._load
            ops = round(rate * real_s)
            # the metrics row of ``stress-ng --metrics-brief`` (stress-ng 0.15 format)
            self._stopped = (
                f"stress-ng: metrc: [1] cpu {ops} {real_s:.2f} "
                f"{real_s * self._load * self._cpus:.2f} "
                f"0.00 {rate:.2f} {rate:.2f}\n"
            )
        return self._stopped


class VirtualRunner:
    """The sweep's :class:`~eams.calibrate.runners.Runner` for a virtual node (module doc)."""

    def __init__(self, node: VirtualNode) -> None:
        self.node = node
        self.target = f"virtual://{node.spec.name}"

    def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> str:
        """Answer the few commands a sweep runs; anything else is a :class:`SweepError`."""
        del timeout_s
        command = list(argv)
        if command == ["cat", "/proc/stat"]:
            return self.node.proc_stat_text()
        if command == ["getconf", "_NPROCESSORS_ONLN"]:
            return f"{self.node.spec.cores}\n"
        if command == ["stress-ng", "--version"]:
            return STRESS_NG_VERSION + "\n"
        raise SweepError(f"{self.target}: a virtual node cannot run {' '.join(command)!r}")

    def has_program(self, program: str) -> bool:
        """Only stress-ng (emulated) is there."""
        return program == "stress-ng"

    def start(self, argv: Sequence[str]) -> _VirtualJob:
        """``stress-ng --cpu N --cpu-load L ...`` sets the node's load to L % of N cores."""
        args = list(argv)
        try:
            cpus = int(args[args.index("--cpu") + 1])
            load_pct = int(args[args.index("--cpu-load") + 1])
        except (ValueError, IndexError):
            raise SweepError(f"{self.target}: not a stress-ng load command: {args}") from None
        return _VirtualJob(self.node, cpus, load_pct)

    def close(self) -> None:
        """Nothing to release."""

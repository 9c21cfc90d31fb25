"""Per-node numeric columns, kept up to date on every write, read with numpy on every request.

At 1,000 nodes and 100 pods/s a per-node Python loop on each request costs more than the whole
latency budget, so the node cache, the calibrations and the telemetry store push their numbers
here when they change (a row per node name ever seen), and ``market.py`` reads whole columns
by fancy indexing. Unknown values are NaN, never 0.
"""

from __future__ import annotations

import numpy as np

from eams.calibrate.calfile import Calibration
from eams.scheduler.power.calibrations import node_figures
from eams.telemetry import TelemetrySample, headroom_from_power

COLUMNS = (
    "alloc_cpu_milli",  # allocatable CPU, millicores
    "alloc_memory_bytes",  # allocatable memory, bytes
    "alloc_pods",  # allocatable pod count
    "used_cpu_milli",  # requests of pods bound to the node, millicores
    "used_memory_bytes",  # bytes
    "used_pods",  # count
    "p_idle_w",  # calibration, W
    "p_max_w",  # calibration, W
    "p_wake_w",  # calibration's wake_power_w (measured active idle, else P_idle), W
    "speed",  # calibration, relative to the reference node
    "p_sleep_w",  # calibration's measured sleep state: draw asleep, W (NaN unmeasured)
    "wake_energy_j",  # the one-off energy of a wake, J
    "wake_time_s",  # wake command to Ready, s
    "headroom",  # newest telemetry sample, 1 − P/P_cap
    "power_cap_w",  # P_cap of that sample, W
    "measured_at_s",  # when it was measured, epoch s
    "utilisation",  # CPU utilisation of that sample, 0–1
    "reserved_w",  # live herding reservations on the node, W (herding.py)
    "reserved_pods",  # their count
    "reserved_bound_w",  # of reserved_w, the reservations of pods already bound, W (the taint's)
)
_ZERO = (
    "used_cpu_milli",
    "used_memory_bytes",
    "used_pods",
    "reserved_w",
    "reserved_pods",
    "reserved_bound_w",
)


class NodeTable:
    """One row per node name; columns as in :data:`COLUMNS` (float64, NaN = unknown)."""

    def __init__(self, initial_rows: int = 1024) -> None:
        self.index: dict[str, int] = {}
        self.samples_version = 0  # counts set_sample calls (cached derived views compare it)
        # counts set_capacity and set_calibration calls: the columns that decide which nodes
        # can be valued and the engine's calibration columns (``Market`` keeps both meanwhile)
        self.capacity_version = 0
        self._last_key: tuple[str, ...] = ()
        self._last_names: list[str] | None = None  # the list object last asked for
        self._last_rows = np.zeros(0, dtype=np.int64)
        self._last_span: slice | None = None  # _last_rows as one run of rows, if it is one
        self.cols = {c: np.full(initial_rows, 0.0 if c in _ZERO else np.nan) for c in COLUMNS}

    def row(self, name: str) -> int:
        """The row of ``name``, created (all unknown) on first sight."""
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.index)
            size = self.cols["speed"].shape[0]
            if i >= size:
                for c, old in self.cols.items():
                    grown = np.full(2 * size, 0.0 if c in _ZERO else np.nan)
                    grown[:size] = old
                    self.cols[c] = grown
        return i

    def rows(self, names: list[str]) -> np.ndarray:
        """(N,) int rows of ``names`` in order (creating unknown ones).

        kube-scheduler sends the same candidate list to filter and prioritize, and mostly the
        same for consecutive pods, so the last answer is kept (rows never move or vanish); the
        same list object again (``NodeCache.names``) is not even compared.
        """
        if names is self._last_names:
            return self._last_rows
        key = tuple(names)
        if key == self._last_key:
            self._last_names = names
            return self._last_rows
        found = list(map(self.index.get, names))
        rows = [self.row(n) if r is None else r for n, r in zip(names, found, strict=True)]
        self._last_key, self._last_rows = key, np.array(rows, dtype=np.int64)
        self._last_names = names
        first = rows[0] if rows else 0
        run = rows == list(range(first, first + len(rows)))
        self._last_span = slice(first, first + len(rows)) if run else None
        return self._last_rows

    def set_capacity(
        self, name: str, cpu_milli: int | None, memory_bytes: int | None, pods: int | None
    ) -> None:
        """Allocatable resources of a node (``None`` → unknown)."""
        i = self.row(name)
        self.capacity_version += 1
        for column, value in (
            ("alloc_cpu_milli", cpu_milli),
            ("alloc_memory_bytes", memory_bytes),
            ("alloc_pods", pods),
        ):
            self.cols[column][i] = np.nan if value is None else value

    def add_used(self, name: str, cpu_milli: int, memory_bytes: int, pods: int) -> None:
        """Add (or with negative values remove) a bound pod's requests."""
        i = self.row(name)
        self.cols["used_cpu_milli"][i] += cpu_milli
        self.cols["used_memory_bytes"][i] += memory_bytes
        self.cols["used_pods"][i] += pods

    def add_reserved(self, name: str, power_w: float, count: int) -> None:
        """Add (or with negative values remove) a herding reservation."""
        i = self.row(name)
        self.cols["reserved_w"][i] += power_w
        self.cols["reserved_pods"][i] += count

    def add_reserved_bound(self, name: str, power_w: float) -> None:
        """Count (or with a negative value uncount) a reservation as its pod's, now bound, W."""
        self.cols["reserved_bound_w"][self.row(name)] += power_w

    def set_calibration(self, calibration: Calibration) -> None:
        """P_idle, P_max, wake power and speed of the calibrated node (speed ``None`` → 1.0:
        its own reference, as ``calfile`` writes for ``reference="self"``), and its measured
        sleep state as the power manager reads it
        (:func:`eams.scheduler.power.calibrations.node_figures`; NaN where not measured)."""
        i = self.row(calibration.node)
        self.capacity_version += 1
        self.cols["p_idle_w"][i] = calibration.p_idle_w
        self.cols["p_max_w"][i] = calibration.p_max_w
        self.cols["p_wake_w"][i] = calibration.wake_power_w
        self.cols["speed"][i] = calibration.speed if calibration.speed is not None else 1.0
        figures = node_figures(calibration)
        sleep = (
            figures["sleep_power_w"],
            figures["wake_energy_j"],
            figures["wake_time_s"],
            figures["suspend_time_s"],
            figures["suspend_energy_j"],
        )
        # a sleep state counts only whole and below idle, as the power policy takes it
        # (policy_costs.sleep_measured): the node can then sleep, and be woken for a pod
        measured = None not in sleep and figures["p_idle_w"] > figures["sleep_power_w"]
        for column, value in zip(
            ("p_sleep_w", "wake_energy_j", "wake_time_s"), sleep, strict=False
        ):
            self.cols[column][i] = value if measured else np.nan

    def set_sample(self, sample: TelemetrySample) -> None:
        """The node's newest telemetry sample; headroom from ``power_w`` when not given."""
        i = self.row(sample.node)
        self.samples_version += 1
        headroom = sample.headroom
        if headroom is None:
            headroom = headroom_from_power(sample.power_w, sample.power_cap_w)
        self.cols["headroom"][i] = np.nan if headroom is None else headroom
        self.cols["power_cap_w"][i] = sample.power_cap_w
        self.cols["measured_at_s"][i] = sample.measured_at_ns / 1e9
        self.cols["utilisation"][i] = np.nan if sample.utilisation is None else sample.utilisation

    def take(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Every column at ``rows``: read-only views when ``rows`` is the last :meth:`rows`
        answer and one run of rows (the node cache's list, in the order the nodes were
        learnt: the usual case), else copies. Callers never write into them."""
        if rows is self._last_rows and self._last_span is not None:
            span = self._last_span
            return {c: a[span] for c, a in self.cols.items()}
        return {c: a[rows] for c, a in self.cols.items()}

"""What the power policy is given: the fleet's state at one instant (the seam between the pure
policy core and whoever drives it — the bench's simulator or the live manager service).

Per node (columns of length N, :class:`FleetState`): its power state (:class:`PowerState`) and
whether it is *suspect* (a wake or suspend that did not confirm in time), its allocatable cores
and memory, what its pods request (DaemonSet pods excluded: they run on every node and never
keep one awake — cluster-autoscaler's ``--ignore-daemonsets-utilization``), the calibrated line
(P_idle, P_max) and speed, the measured sleep state (sleep power, wake and suspend time and
energy), when it entered its state, last woke, last slept and became empty, its failed wakes,
and whether a role forbids sleeping it (:data:`NO_SLEEP_ROLES`). Per pending pod
(:class:`PendingPods`): its requests, how long it has pended, its expected runtime when known,
and which nodes its static predicates (taints, tolerations, selectors) admit.

A missing measurement is NaN in the columns (``None`` in :class:`NodePowerView`), never 0: a node
without measured wake and suspend costs is never put to sleep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
from numpy.typing import NDArray

from eams.scheduler.errors import SchedulerError

NO_SLEEP_ROLES = frozenset({"k3s-server", "pdu-owner"})
"""Roles that keep a node awake whatever the load: the k3s server (the control plane) and the
node that owns the PDU (its agent reads the meter for everyone). Slurm's ``SuspendExcNodes``."""


class FleetInputError(SchedulerError, ValueError):
    """A fleet-state column is malformed; the message names the column and index, e.g.
    ``nodes.cores[3] = -1.0: must be finite and > 0``."""


class PowerState(IntEnum):
    """A node's power state as the manager tracks it.

    ``AWAKE`` runs pods (Ready, untainted); ``SUSPENDING`` was told to sleep (cordoned and
    tainted ``eams.io/asleep:NoSchedule`` first) and has not confirmed; ``ASLEEP`` draws its
    sleep power; ``WAKING`` was sent a wake and has not re-registered (agent reporting, node
    Ready). Only ``AWAKE`` nodes take pods.
    """

    AWAKE = 0
    ASLEEP = 1
    WAKING = 2
    SUSPENDING = 3


AWAKE, ASLEEP, WAKING, SUSPENDING = (int(s) for s in PowerState)
"""The state codes as plain ints, for vectorised comparisons with :attr:`FleetState.state`."""


@dataclass(frozen=True)
class NodePowerView:
    """One node as a caller describes it (the live manager; tests). Times are seconds on the
    caller's clock (epoch or simulated), ``None`` for never / unknown.

    Attributes
    ----------
    name : str
    state : PowerState
    allocatable_cores, allocatable_mem_mib : float, > 0
    p_idle_w, p_max_w : float, W, the calibrated line (study §5.1)
    speed : float, > 0, relative per-core speed
    sleep_power_w, wake_time_s, wake_energy_j, suspend_time_s, suspend_energy_j : float or None
        The measured sleep state: draw while asleep (W); a wake until the node is Ready again
        (s, J); a suspend until it is asleep (s, J). ``None``: not measured (never slept).
    state_since_s : float, when it entered ``state``
    pod_cores : tuple of float, cpu requests of its non-DaemonSet pods (cores)
    pod_mem_mib : float, their summed memory requests (MiB)
    empty_since_s : float or None, when its last non-DaemonSet pod left (``None`` with pods)
    last_wake_s, last_sleep_s : float or None, when the last wake / sleep was started
    suspect : bool, its last wake or suspend did not confirm in time
    failed_wakes : int
    roles : frozenset of str, e.g. ``{"k3s-server"}``; see :data:`NO_SLEEP_ROLES`
    p_wake_w : float or None, W, what the node draws awake and idle (the calibration's
        ``wake_power_w``, the wake term of the bids); ``None``: the line's ``p_idle_w``
    """

    name: str
    state: PowerState
    allocatable_cores: float
    allocatable_mem_mib: float
    p_idle_w: float
    p_max_w: float
    speed: float
    sleep_power_w: float | None
    wake_time_s: float | None
    wake_energy_j: float | None
    suspend_time_s: float | None
    suspend_energy_j: float | None
    state_since_s: float
    pod_cores: tuple[float, ...] = ()
    pod_mem_mib: float = 0.0
    empty_since_s: float | None = None
    last_wake_s: float | None = None
    last_sleep_s: float | None = None
    suspect: bool = False
    failed_wakes: int = 0
    roles: frozenset[str] = frozenset()
    p_wake_w: float | None = None


@dataclass(frozen=True)
class PendingPod:
    """A pod that waits for a node: requests, since when it pends (s), its runtime at speed 1
    (reference seconds, ``None`` unknown), the nodes its static predicates admit (``None``:
    every node) and the asleep node the market cleared it onto (``wake_node``: the extender's
    wake request, ``eams.io/wake-request``; ``None``: none)."""

    name: str
    cores: float
    mem_mib: float
    pending_since_s: float
    runtime_ref_s: float | None = None
    eligible_nodes: frozenset[str] | None = None
    wake_node: str | None = None


def _nan(value: float | None) -> float:
    return np.nan if value is None else float(value)


def _fail(column: str, index: int, value: object, rule: str) -> FleetInputError:
    return FleetInputError(f"{column}[{index}] = {value!r}: {rule}")


def _check(column: str, values: NDArray, n: int, rule: str, ok: NDArray[np.bool_]) -> None:
    if values.shape[:1] != (n,):
        raise FleetInputError(f"{column}: shape {values.shape}, expected ({n},)")
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise _fail(column, bad, values[bad].item(), rule)


@dataclass(frozen=True)
class PendingPods:
    """P pending pods as columns; ``eligible`` (K, N) bool rows, pod p uses row ``profile[p]``.

    Attributes
    ----------
    names : tuple of str, length P
    cores, mem_mib : (P,) float, requests (cores, MiB), ≥ 0
    pending_since_s : (P,) float
    runtime_ref_s : (P,) float, s at speed 1, NaN unknown
    profile : (P,) int, row of ``eligible``
    eligible : (K, N) bool, nodes the static predicates admit
    wake_node : (P,) int or None, the asleep node the market cleared each pod onto (its wake
        request), −1 none; ``None``: no pod has one
    """

    names: tuple[str, ...]
    cores: NDArray[np.float64]
    mem_mib: NDArray[np.float64]
    pending_since_s: NDArray[np.float64]
    runtime_ref_s: NDArray[np.float64]
    profile: NDArray[np.int64]
    eligible: NDArray[np.bool_]
    wake_node: NDArray[np.int64] | None = None

    def requested(self) -> NDArray[np.int64]:
        """(P,) int: :attr:`wake_node`, −1 where none (and for every pod when ``None``)."""
        if self.wake_node is None:
            return np.full(self.size, -1, dtype=np.int64)
        return self.wake_node

    @classmethod
    def none(cls, n_nodes: int) -> PendingPods:
        """No pod pends."""
        empty = np.zeros(0)
        return cls(
            (), empty, empty, empty, empty, np.zeros(0, np.int64), np.ones((1, n_nodes), bool)
        )

    @property
    def size(self) -> int:
        """P."""
        return len(self.names)

    def check(self, n_nodes: int) -> None:
        """Raise :class:`FleetInputError` naming the first bad column entry."""
        p = self.size
        for column in ("cores", "mem_mib"):
            values = getattr(self, column)
            ok = np.isfinite(values) & (values >= 0)
            _check(f"pending.{column}", values, p, "must be finite and >= 0", ok)
        since = self.pending_since_s
        _check("pending.pending_since_s", since, p, "must be finite", np.isfinite(since))
        run = self.runtime_ref_s
        _check("pending.runtime_ref_s", run, p, "must be > 0 or NaN", np.isnan(run) | (run > 0))
        if self.eligible.ndim != 2 or self.eligible.shape[1] != n_nodes:
            raise FleetInputError(
                f"pending.eligible: shape {self.eligible.shape}, expected (K, {n_nodes})"
            )
        k = self.eligible.shape[0]
        prof = self.profile
        _check("pending.profile", prof, p, f"must be in [0, {k})", (prof >= 0) & (prof < k))
        wake = self.requested()
        rule = f"must be -1 or in [0, {n_nodes})"
        _check("pending.wake_node", wake, p, rule, (wake >= -1) & (wake < n_nodes))


@dataclass(frozen=True)
class FleetState:
    """The fleet at ``now_s``: N nodes as columns (see the module docstring) and the pending
    pods. Built directly from arrays (the simulator) or from :class:`NodePowerView` objects
    (:meth:`from_views`); every column is checked when built.

    Raises
    ------
    FleetInputError
        A column has the wrong length or a value breaks its rule (named with its index).
    """

    now_s: float
    names: tuple[str, ...]
    state: NDArray[np.int8]
    cores: NDArray[np.float64]
    mem_mib: NDArray[np.float64]
    used_cores: NDArray[np.float64]
    used_mem_mib: NDArray[np.float64]
    pods: NDArray[np.int64]
    largest_pod_cores: NDArray[np.float64]
    p_idle_w: NDArray[np.float64]
    p_max_w: NDArray[np.float64]
    speed: NDArray[np.float64]
    sleep_power_w: NDArray[np.float64]
    wake_time_s: NDArray[np.float64]
    wake_energy_j: NDArray[np.float64]
    suspend_time_s: NDArray[np.float64]
    suspend_energy_j: NDArray[np.float64]
    state_since_s: NDArray[np.float64]
    empty_since_s: NDArray[np.float64]
    last_wake_s: NDArray[np.float64]
    last_sleep_s: NDArray[np.float64]
    suspect: NDArray[np.bool_]
    failed_wakes: NDArray[np.int64]
    no_sleep: NDArray[np.bool_]
    pending: PendingPods = field(default_factory=lambda: PendingPods.none(0))
    p_wake_w: NDArray[np.float64] | None = None
    """P_wake per node (W; NaN or ``None``: ``p_idle_w``), the wake term of the bids."""

    def __post_init__(self) -> None:
        n = self.size
        if not np.isfinite(self.now_s):
            raise FleetInputError(f"now_s = {self.now_s!r}: must be finite")
        positive = ("cores", "mem_mib", "speed")
        for column in positive:
            v = getattr(self, column)
            _check(f"nodes.{column}", v, n, "must be finite and > 0", np.isfinite(v) & (v > 0))
        for column in ("used_cores", "used_mem_mib", "largest_pod_cores", "p_idle_w"):
            v = getattr(self, column)
            _check(f"nodes.{column}", v, n, "must be finite and >= 0", np.isfinite(v) & (v >= 0))
        ok = np.isfinite(self.p_max_w) & (self.p_max_w >= self.p_idle_w)
        _check("nodes.p_max_w", self.p_max_w, n, "must be finite and >= p_idle_w", ok)
        for column in (
            "sleep_power_w",
            "wake_energy_j",
            "suspend_energy_j",
            "wake_time_s",
            "suspend_time_s",
        ):
            v = getattr(self, column)
            _check(f"nodes.{column}", v, n, "must be >= 0 or NaN", np.isnan(v) | (v >= 0))
        ok = (self.state >= PowerState.AWAKE) & (self.state <= PowerState.SUSPENDING)
        _check("nodes.state", self.state, n, f"must be one of {[int(s) for s in PowerState]}", ok)
        since = self.state_since_s
        _check("nodes.state_since_s", since, n, "must be finite", np.isfinite(since))
        for column in ("empty_since_s", "last_wake_s", "last_sleep_s"):
            v = getattr(self, column)
            _check(f"nodes.{column}", v, n, "must be finite or NaN", ~np.isinf(v))
        _check("nodes.pods", self.pods, n, "must be >= 0", self.pods >= 0)
        has_pods = self.pods > 0
        ok = ~has_pods | np.isnan(self.empty_since_s)
        _check("nodes.empty_since_s", self.empty_since_s, n, "must be NaN on a node with pods", ok)
        ok = has_pods | ~np.isnan(self.empty_since_s)
        _check("nodes.empty_since_s", self.empty_since_s, n, "must be set on an empty node", ok)
        ok = (self.state == PowerState.AWAKE) | ~has_pods
        _check("nodes.pods", self.pods, n, "only an awake node runs pods", ok)
        for column in ("suspect", "failed_wakes", "no_sleep"):
            _check(f"nodes.{column}", getattr(self, column), n, "", np.ones(n, bool))
        self.pending.check(n)
        if self.p_wake_w is not None:
            v = self.p_wake_w
            _check("nodes.p_wake_w", v, n, "must be >= 0 or NaN", np.isnan(v) | (v >= 0))
            # a node whose idle draw is not measured wakes at its line's intercept
            object.__setattr__(self, "p_wake_w", np.where(np.isnan(v), self.p_idle_w, v))

    @property
    def size(self) -> int:
        """N."""
        return len(self.names)

    @classmethod
    def from_views(
        cls, now_s: float, nodes: Sequence[NodePowerView], pending: Sequence[PendingPod] = ()
    ) -> FleetState:
        """The columns of ``nodes`` and ``pending`` (one eligibility row per pending pod).

        Raises
        ------
        FleetInputError
            Two nodes share a name, a pod names an unknown node, or a column rule is broken.
        """
        names = tuple(v.name for v in nodes)
        index = {name: i for i, name in enumerate(names)}
        if len(index) != len(names):
            raise FleetInputError(f"nodes.name: duplicate node names in {sorted(names)}")

        def col(get, dtype=float) -> NDArray:
            return np.asarray([get(v) for v in nodes], dtype=dtype).reshape(len(nodes))

        eligible = np.ones((max(len(pending), 1), len(nodes)), dtype=bool)
        for p, pod in enumerate(pending):
            if pod.eligible_nodes is not None:
                unknown = sorted(pod.eligible_nodes - index.keys())
                if unknown:
                    raise FleetInputError(f"pending[{p}].eligible_nodes: unknown nodes {unknown}")
                eligible[p] = False
                eligible[p, [index[name] for name in pod.eligible_nodes]] = True
        unknown_wakes = [p.wake_node for p in pending if p.wake_node is not None]
        unknown_wakes = [name for name in unknown_wakes if name not in index]
        if unknown_wakes:
            raise FleetInputError(f"pending.wake_node: unknown nodes {sorted(unknown_wakes)}")
        pods = PendingPods(
            names=tuple(p.name for p in pending),
            cores=np.asarray([p.cores for p in pending], dtype=float),
            mem_mib=np.asarray([p.mem_mib for p in pending], dtype=float),
            pending_since_s=np.asarray([p.pending_since_s for p in pending], dtype=float),
            runtime_ref_s=np.asarray([_nan(p.runtime_ref_s) for p in pending], dtype=float),
            profile=np.arange(len(pending), dtype=np.int64),
            eligible=eligible,
            wake_node=np.asarray(
                [-1 if p.wake_node is None else index[p.wake_node] for p in pending],
                dtype=np.int64,
            ),
        )
        return cls(
            now_s=float(now_s),
            names=names,
            state=col(lambda v: int(v.state), np.int8),
            cores=col(lambda v: v.allocatable_cores),
            mem_mib=col(lambda v: v.allocatable_mem_mib),
            used_cores=col(lambda v: sum(v.pod_cores)),
            used_mem_mib=col(lambda v: v.pod_mem_mib),
            pods=col(lambda v: len(v.pod_cores), np.int64),
            largest_pod_cores=col(lambda v: max(v.pod_cores, default=0.0)),
            p_idle_w=col(lambda v: v.p_idle_w),
            p_max_w=col(lambda v: v.p_max_w),
            speed=col(lambda v: v.speed),
            sleep_power_w=col(lambda v: _nan(v.sleep_power_w)),
            wake_time_s=col(lambda v: _nan(v.wake_time_s)),
            wake_energy_j=col(lambda v: _nan(v.wake_energy_j)),
            suspend_time_s=col(lambda v: _nan(v.suspend_time_s)),
            suspend_energy_j=col(lambda v: _nan(v.suspend_energy_j)),
            state_since_s=col(lambda v: v.state_since_s),
            empty_since_s=col(lambda v: _nan(v.empty_since_s)),
            last_wake_s=col(lambda v: _nan(v.last_wake_s)),
            last_sleep_s=col(lambda v: _nan(v.last_sleep_s)),
            suspect=col(lambda v: v.suspect, bool),
            failed_wakes=col(lambda v: v.failed_wakes, np.int64),
            no_sleep=col(lambda v: bool(v.roles & NO_SLEEP_ROLES), bool),
            pending=pods,
            p_wake_w=col(lambda v: _nan(v.p_wake_w)),
        )

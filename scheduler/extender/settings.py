"""Settings of the extender service, checked once and completely (STYLE point 7)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from eams.kube.lease import lease_ref
from eams.kube.names import MARKET_LEASE
from eams.scheduler.auction import AuctionParams
from eams.scheduler.extender.errors import ExtenderConfigError
from eams.scheduler.record import WriterSettings

Mode = Literal["shadow", "active"]
PrioritizeAnswer = Literal["deciding", "all"]


@dataclass(frozen=True)
class Settings:
    """How the extender behaves.

    Attributes
    ----------
    mode : {"shadow", "active"}
        ``shadow`` answers neutrally (every candidate passes, every score 0) and records what
        ``active`` would have answered; ``active`` serves the auction.
    window_ms : float
        Batch window W, ms (study §4: 200 ms): the longest a pending pod waits before its batch
        clears; a batch clears earlier as soon as kube-scheduler asks about one of its pods.
        0 disables batching: every pod gets an immediate single-pod bid score.
    calibrations_dir : Path or None
        Folder of calibration files (``eams.calibrate.calfile``); readiness needs at least one.
    max_body_bytes : int
        Largest request body accepted; larger is HTTP 413. Full-node payloads at 5,000 nodes of
        ~7 kB each are ~35 MB, so the default is 64 MiB.
    headroom_floor : float
        Hard floor of discounted power headroom (0–1) below which ``/filter`` removes a node.
    recovery_margin : float
        A filtered node counts as recovered once its headroom is at least floor + margin
        (hysteresis against flapping).
    stale_after_s : float
        Telemetry older than this is stale (AR-6: 15 s): it never grounds a filter decision and
        the bids discount it (``AuctionParams.stale_after_s``).
    slot_milli : int
        CPU per auction slot, millicores (study §5.3: pods are quantised to slots;
        ``AuctionParams.cores_per_slot``). 250m keeps small pods from claiming whole cores.
    default_runtime_s : float
        Runtime assumed for a pod without the ``eams.io/work-core-s`` annotation, s.
    herd_settle_s, herd_ttl_s : float
        Herding-guard reservation settle time and upper bound, s (``herding.py``).
    clearing_ttl_s : float
        How long a clearing-table entry stays valid, s.
    max_batch_pods : int
        Most pods cleared together (the oldest pending first; the rest wait for the next
        clearing); study §6.1 sizes the auction for 500 pods × 1,000 nodes.
    clearing_budget_ms : float or None
        Wall-clock budget of one clearing, ms (study §6.1: the auction's 30 ms of the AR-2
        budget). A clearing runs inside the /prioritize call that asked for it, so this bounds
        that call: when it ends, the engine returns its best certified assignment
        (``Clearing.timed_out``, counted as ``eams_extender_fallbacks_total{reason="budget"}``).
        ``None``: no wall-clock budget, only the engine's deterministic round cap — the bench,
        whose replays in simulated time must clear alike whatever the machine's load (AR-8).
    taint_floor : bool
        Active mode with ``--watch``: a node under ``headroom_floor`` gets the NoSchedule taint
        :data:`~.floor.TAINT` (kube-scheduler's TaintToleration filter enforces it) until it
        is back at floor + ``recovery_margin`` or has no fresh reading (``floor.py``).
    recommendations_kept : int
        Shadow-mode recommendations kept for ``GET /recommendations``.
    scheduler_name : str
        ``spec.schedulerName`` of the pods this extender batches (the k3s profile's name).
    record : WriterSettings or None
        Where the decision record goes (``--record``, ``decisions.py``); ``None``: no record.
    annotate : bool
        With a record: write the ``eams.io/*`` annotations onto each decided pod once bound.
    prioritize_answer : {"deciding", "all"}
        ``deciding``: ``/prioritize`` lists only the nodes scoring 10 (the cleared node), which
        alone decide under a ``weight`` of 120 or more (the shipped 130;
        :func:`~.schemas.encode_deciding`); ``all``: every candidate with its 0–10 score, for a
        configuration whose ``weight`` leaves the in-tree plugins the last word (issue 32).
    market_wakes : bool
        Active mode: price the asleep nodes too and hold a pod for the asleep node whose bid,
        wake energy and wait priced in, beats its every awake bid (``wakes.py``, issue 34):
        ``/filter`` answers no node until that node is woken (the power manager executes the
        request). Needs a configuration that calls ``filterVerb``.
    wake_price_margin : float, ≥ 1
        How much better the wake bid must be than the best awake one to hold the pod: 1.0,
        strictly better (the wait is already priced in the bid).
    release_gates : bool
        With ``--watch``: clear the pods of this profile that carry the ``eams.io/market``
        scheduling gate in their window, then remove the gate and, in active mode, pin each to
        its cleared node (``gates.py``, issue 32); pods without the gate are not affected.
    lease : str
        ``NAMESPACE/NAME`` of the Lease renewed while the extender is ready, with
        ``release_gates`` and a watch (``heartbeat.py``): its lapse lets ``eams extender
        fallback`` release the gated pods unpinned (AR-5).
    """

    mode: Mode = "shadow"
    window_ms: float = 200.0
    calibrations_dir: Path | None = None
    max_body_bytes: int = 64 * 1024 * 1024
    headroom_floor: float = 0.05
    recovery_margin: float = 0.05
    stale_after_s: float = 15.0
    slot_milli: int = 250
    default_runtime_s: float = 600.0
    herd_settle_s: float = 10.0
    herd_ttl_s: float = 120.0
    clearing_ttl_s: float = 60.0
    max_batch_pods: int = 500
    clearing_budget_ms: float | None = 30.0
    taint_floor: bool = True
    recommendations_kept: int = 1000
    scheduler_name: str = "eams-scheduler"
    record: WriterSettings | None = None
    annotate: bool = True
    prioritize_answer: PrioritizeAnswer = "deciding"
    market_wakes: bool = True
    wake_price_margin: float = 1.0
    release_gates: bool = True
    lease: str = MARKET_LEASE

    def auction_params(self) -> AuctionParams:
        """Engine parameters from these settings (slot size, staleness); the rest default."""
        return AuctionParams(
            cores_per_slot=self.slot_milli / 1000.0, stale_after_s=self.stale_after_s
        )

    def __post_init__(self) -> None:
        problems = []
        if self.mode not in ("shadow", "active"):
            problems.append(f"mode: must be 'shadow' or 'active', got {self.mode!r}")
        if self.prioritize_answer not in ("deciding", "all"):
            problems.append(
                f"prioritize_answer: must be 'deciding' or 'all', got {self.prioritize_answer!r}"
            )
        non_negative = ("window_ms", "recovery_margin", "herd_settle_s")
        problems += [
            f"{n}: must be ≥ 0, got {getattr(self, n)!r}"
            for n in non_negative
            if getattr(self, n) < 0
        ]
        positive = (
            "max_body_bytes",
            "stale_after_s",
            "slot_milli",
            "default_runtime_s",
            "herd_ttl_s",
            "clearing_ttl_s",
            "max_batch_pods",
            "clearing_budget_ms",
            "recommendations_kept",
        )
        problems += [
            f"{n}: must be > 0, got {getattr(self, n)!r}"
            for n in positive
            if getattr(self, n) is not None and getattr(self, n) <= 0
        ]
        if not self.wake_price_margin >= 1:
            problems.append(f"wake_price_margin: must be ≥ 1, got {self.wake_price_margin!r}")
        if not 0 <= self.headroom_floor < 1:
            problems.append(f"headroom_floor: must be in [0, 1), got {self.headroom_floor!r}")
        if self.calibrations_dir is not None and not Path(self.calibrations_dir).is_dir():
            problems.append(f"calibrations_dir: {self.calibrations_dir} is not a folder")
        try:
            lease_ref(self.lease)
        except ValueError as exc:
            problems.append(f"lease: {exc}")
        if problems:
            raise ExtenderConfigError("extender settings: " + "; ".join(problems))

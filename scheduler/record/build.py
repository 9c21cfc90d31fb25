"""Placement records of one clearing window, built from the arrays the extender already holds.

One call per window (:func:`placement_records`): the gate reasons of every (pod, node) pair are
found with a few whole-array operations, then each pod keeps its cleared node and its best
``keep_candidates`` open nodes by bid, and up to ``keep_gated`` of the nodes gated for it (every
reason counted in ``gated_counts``). The engine is not imported: a clearing is read through the
:class:`ClearingLike` protocol (``eams.scheduler.auction.Clearing`` satisfies it), so this package
stays below the auction.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from eams.scheduler.record.schema import (
    BEST_BID,
    GATE_REASONS,
    Candidate,
    Certificate,
    Gated,
    Mode,
    Placement,
    PodRef,
)

_PROCESS = os.urandom(3).hex()
_SEQUENCE = itertools.count(1)
_CODE = {reason: i + 1 for i, reason in enumerate(GATE_REASONS)}
_NO_BID = _CODE["no_bid"]
_CAPPED = _CODE["capped"]


def new_clearing_id() -> str:
    """A clearing id unique to this process run: 6 hex digits chosen at start, ``-``, a counter
    (``"3fa2c1-42"``)."""
    return f"{_PROCESS}-{next(_SEQUENCE)}"


class ClearingLike(Protocol):
    """What a placement record reads from a clearing (``eams.scheduler.auction.Clearing``)."""

    @property
    def assignment(self) -> np.ndarray: ...
    @property
    def prices(self) -> np.ndarray: ...
    @property
    def value(self) -> float: ...
    @property
    def epsilon(self) -> float: ...
    @property
    def fell_back(self) -> bool: ...
    @property
    def gap_bound(self) -> float | None: ...
    @property
    def method(self) -> str: ...


class PodLike(Protocol):
    """A pod of the window: ``key`` (``namespace/name``) and ``uid`` (the extender's
    ``PendingPod``)."""

    @property
    def key(self) -> str: ...
    @property
    def uid(self) -> str | None: ...


@dataclass(frozen=True)
class BestBid:
    """A batch of one pod cleared to its best bid without the engine (a :class:`ClearingLike`).

    Parameters
    ----------
    assignment : (1,) int
        Column of the winning node, −1 for none.
    prices : (N,) float
        0 everywhere (one bidder, free slots).
    value : float
        The winning bid (0 without a winner).
    """

    assignment: np.ndarray
    prices: np.ndarray
    value: float
    epsilon: float = 0.0
    fell_back: bool = False
    gap_bound: float | None = 0.0
    method: str = BEST_BID


def certificate(clearing: ClearingLike, batch_pods: int) -> Certificate:
    """The clearing's optimality certificate: ``exact`` for a best bid, the certified gap when
    the engine gives one, else J·ε (study §5.3: ε-CS puts the value within J·ε of optimum)."""
    method = str(clearing.method)
    if method == BEST_BID:
        return Certificate(kind="exact", bound=0.0, value=_num(clearing.value))
    if clearing.gap_bound is not None:
        return Certificate(
            kind="gap_bound",
            bound=float(clearing.gap_bound),
            value=_num(clearing.value),
            epsilon=_num(clearing.epsilon),
        )
    return Certificate(
        kind="j_epsilon",
        bound=batch_pods * float(clearing.epsilon),
        value=_num(clearing.value),
        epsilon=_num(clearing.epsilon),
    )


def gate_codes(
    values: np.ndarray,
    headroom: np.ndarray,
    excluded: Mapping[str, np.ndarray],
) -> np.ndarray:
    """(J, N) int8: 0 where node n is an option for pod j, else 1 + the index in
    :data:`GATE_REASONS` of the first reason that applies.

    Parameters
    ----------
    values : (J, N) float
        Bid values; 0 or not finite is no bid.
    headroom : (N,) float
        NaN = unknown (unknown is not ``capped``).
    excluded : reason → (N,) or (J, N) bool
        Masks of the caller's reasons (any of :data:`GATE_REASONS` but ``capped`` and
        ``no_bid``, which come from ``headroom`` and ``values``).

    Raises
    ------
    ValueError
        An unknown reason, or a mask whose shape does not broadcast to ``values``.
    """
    codes = np.zeros(values.shape, dtype=np.int8)
    unknown = set(excluded) - set(GATE_REASONS)
    if unknown:
        raise ValueError(f"unknown gate reasons {sorted(unknown)}; known: {GATE_REASONS}")
    masks = [(r, np.broadcast_to(excluded[r], values.shape)) for r in GATE_REASONS if r in excluded]
    masks.append(("capped", np.broadcast_to(headroom <= 0, values.shape)))
    masks.append(("no_bid", ~(np.isfinite(values) & (values > 0))))
    for reason, mask in reversed(masks):  # the first reason in order wins: set it last
        codes[mask] = _CODE[reason]
    return codes


def placement_records(
    *,
    pods: Sequence[PodLike],
    names: Sequence[str],
    values: np.ndarray,
    clearing: ClearingLike,
    headroom: np.ndarray,
    age_s: np.ndarray,
    mode: Mode,
    at_s: float,
    clearing_id: str | None = None,
    excluded: Mapping[str, np.ndarray] | None = None,
    gate: np.ndarray | None = None,
    scores: np.ndarray | None = None,
    stale_after_s: float | None = None,
    keep_candidates: int = 8,
    keep_gated: int = 16,
) -> list[Placement]:
    """One :class:`~.schema.Placement` per pod of a cleared window.

    Parameters
    ----------
    pods : sequence of PodLike, length J
    names : sequence of str, length N
        The window's nodes (columns of every array).
    values : (J, N) float
        Bid values v_jn (``eams.scheduler.auction.bids.bid_values``).
    clearing : ClearingLike
        ``assignment`` (J,) (−1 none), ``prices`` (N,), ``value``, ``epsilon``, ``gap_bound``,
        ``fell_back``, ``method``; :class:`BestBid` for a batch of one cleared without the engine.
    headroom, age_s : (N,) float
        What the bids used; NaN = unknown (recorded as ``null``).
    mode : {"shadow", "active"}
    at_s : float
        Epoch seconds of the clearing.
    clearing_id : str, optional
        :func:`new_clearing_id` when not given.
    excluded : reason → (N,) or (J, N) bool, optional
        The caller's gates (:func:`gate_codes`), e.g. ``{"headroom_floor": floor_mask,
        "filter": ~candidate_mask, "no_fit": ~fits}``.
    gate : (N,) float, optional
        σ(k(ĥ − h0)) per node (``bids.gate``).
    scores : (J, N) int, optional
        The 0–10 scores answered to kube-scheduler.
    stale_after_s : float, optional
        AR-6's staleness limit the bids used (recorded, so ``explain`` can say a bid was
        discounted for an old reading).
    keep_candidates, keep_gated : int
        Open nodes kept per pod besides the cleared one (best bids first), and gated nodes
        listed per pod (every one is counted in ``gated_counts``).

    Returns
    -------
    list of Placement, length J

    Raises
    ------
    ValueError
        Arrays of inconsistent shapes, or an unknown gate reason.
    """
    j_pods, n_nodes = len(pods), len(names)
    values = np.asarray(values, dtype=float).reshape(j_pods, n_nodes)
    assignment = np.asarray(clearing.assignment, dtype=np.int64)
    if assignment.shape != (j_pods,):
        raise ValueError(f"assignment has shape {assignment.shape}, expected ({j_pods},)")
    columns = _columns(names, clearing.prices, headroom, age_s, gate)
    codes = gate_codes(values, np.asarray(headroom, dtype=float), excluded or {})
    counts = np.bincount(
        (codes.astype(np.int64) + np.arange(j_pods)[:, None] * (len(GATE_REASONS) + 1)).ravel(),
        minlength=j_pods * (len(GATE_REASONS) + 1),
    ).reshape(j_pods, -1)
    open_values = np.where(codes == 0, values, -np.inf)
    k = min(keep_candidates, n_nodes)
    best = _top(open_values, k)
    cert = certificate(clearing, j_pods)
    cid = clearing_id or new_clearing_id()
    method = str(clearing.method)
    fell_back = bool(clearing.fell_back)
    records = []
    for j, pod in enumerate(pods):
        n = int(assignment[j])
        picked: list[int] = [n] if n >= 0 else []
        if best is not None:
            picked += [int(c) for c in best[j] if c != n and codes[j, c] == 0]
        picked = picked[: k + 1]
        row_scores = scores[j] if scores is not None else None
        gated_at = np.flatnonzero(codes[j])[:keep_gated]
        namespace, _, name = pod.key.partition("/")
        records.append(
            Placement(
                at_s=at_s,
                mode=mode,
                clearing_id=cid,
                batch_pods=j_pods,
                pod=PodRef(namespace=namespace, name=name, uid=pod.uid),
                cleared_node=names[n] if n >= 0 else None,
                price=columns.price[n] if n >= 0 else None,
                bid=_num(values[j, n]) if n >= 0 else None,
                method=method,
                fell_back=fell_back,
                certificate=cert,
                candidates=[columns.candidate(c, values[j, c], row_scores) for c in picked],
                candidates_total=n_nodes,
                gated_counts={
                    reason: int(counts[j, i + 1])
                    for i, reason in enumerate(GATE_REASONS)
                    if counts[j, i + 1]
                },
                gated=[columns.gated(int(c), int(codes[j, c])) for c in gated_at],
                stale_after_s=stale_after_s,
            )
        )
    return records


@dataclass(frozen=True)
class _Columns:
    """Per-node columns as Python lists (one conversion per window, not per pod)."""

    names: Sequence[str]
    price: list[float | None]
    headroom: list[float | None]
    age_s: list[float | None]
    gate: list[float | None] | None

    def candidate(self, n: int, bid: float, scores: np.ndarray | None) -> Candidate:
        return Candidate(
            node=self.names[n],
            bid=_num(bid),
            price=self.price[n],
            headroom=self.headroom[n],
            age_s=self.age_s[n],
            gate=self.gate[n] if self.gate is not None else None,
            score=int(scores[n]) if scores is not None else None,
        )

    def gated(self, n: int, code: int) -> Gated:
        reason = GATE_REASONS[code - 1]
        return Gated(
            node=self.names[n], reason=reason, headroom=self.headroom[n], age_s=self.age_s[n]
        )


def _columns(
    names: Sequence[str],
    prices: np.ndarray,
    headroom: np.ndarray,
    age_s: np.ndarray,
    gate: np.ndarray | None,
) -> _Columns:
    n_nodes = len(names)
    for label, array in (("prices", prices), ("headroom", headroom), ("age_s", age_s)):
        if np.shape(array) != (n_nodes,):
            raise ValueError(f"{label} has shape {np.shape(array)}, expected ({n_nodes},)")
    return _Columns(
        names=names,
        price=_nums(prices),
        headroom=_nums(headroom),
        age_s=_nums(age_s),
        gate=_nums(gate) if gate is not None else None,
    )


def _top(values: np.ndarray, k: int) -> np.ndarray | None:
    """(J, k) columns of each row's k largest values, largest first (O(J·N) selection, then a
    sort of the k)."""
    if k == 0:
        return None
    n_nodes = values.shape[1]
    top = (
        np.argpartition(-values, k - 1, axis=1)[:, :k]
        if k < n_nodes
        else np.tile(np.arange(n_nodes), (values.shape[0], 1))
    )
    order = np.argsort(-np.take_along_axis(values, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def _nums(array: np.ndarray) -> list[float | None]:
    """A float array as a list, NaN and ±inf as ``None``."""
    return [x if math.isfinite(x) else None for x in np.asarray(array, dtype=float).tolist()]


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None

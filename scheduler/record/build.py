"""Placement records of one clearing window, built from the arrays the extender already holds.

One call per window (:func:`placement_records`): the gate reasons of every (pod, node) pair, the
best bids and the first gated nodes of every pod are found with whole-array operations; the
Python loop only assembles the structs. Each pod keeps its cleared node and its best
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
SIGNIFICANT = 6
"""Significant digits kept of each per-node number (bid, price, headroom, age, gate): enough to
explain a decision, and a third of a full float's 17 in the line."""


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
    unknown = set(excluded) - set(GATE_REASONS)
    if unknown:
        raise ValueError(f"unknown gate reasons {sorted(unknown)}; known: {GATE_REASONS}")
    with np.errstate(invalid="ignore"):
        no_bid = ~(values > 0) | np.isinf(values)  # NaN > 0 is False
        capped = headroom <= 0  # NaN (unknown) is not capped
    codes = np.where(no_bid, np.int8(_CODE["no_bid"]), np.int8(0))
    masks = [(r, excluded[r]) for r in GATE_REASONS if r in excluded]
    masks.append(("capped", capped))
    for reason, mask in reversed(masks):  # the first reason in order wins: set it last
        try:
            np.copyto(codes, np.int8(_CODE[reason]), where=mask)
        except ValueError as exc:  # a mask that does not broadcast to (J, N)
            raise ValueError(f"gate mask {reason!r}: {exc}") from exc
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
    keep_candidates: int = 5,
    keep_gated: int = 8,
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
        The best open nodes by bid kept per pod (and the cleared node first, if it is not among
        them), and the gated nodes listed per pod, in column order (every one is counted in
        ``gated_counts``). Per-node numbers are rounded to :data:`SIGNIFICANT` digits.

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
    _check_shapes(n_nodes, clearing.prices, headroom, age_s)
    codes = gate_codes(values, np.asarray(headroom, dtype=float), excluded or {})
    width = len(GATE_REASONS) + 1
    offsets = (np.arange(j_pods, dtype=np.int64) * width)[:, None]
    counts = np.bincount((codes + offsets).ravel(), minlength=j_pods * width)
    counts = counts.reshape(j_pods, width)[:, 1:]
    picked = _picked(values, codes, assignment, min(keep_candidates, n_nodes))
    # the few kept columns as Python lists (a dozen a pod): cheaper than arrays of them
    rows = [j for j, row in enumerate(picked) for _ in row]
    flat = list(itertools.chain.from_iterable(picked))
    bid_at = _nums(values[rows, flat])
    score_at = scores[rows, flat].tolist() if scores is not None else None
    gated = _gated(codes, keep_gated)
    used = sorted({*flat, *(c for row in gated for c, _ in row)})  # cleared nodes are in flat
    columns = _columns(names, used, clearing.prices, headroom, age_s, gate)
    cert = certificate(clearing, j_pods)
    cid = clearing_id or new_clearing_id()
    method = str(clearing.method)
    fell_back = bool(clearing.fell_back)
    counts_rows = counts.tolist()
    records = []
    at = 0
    for j, pod in enumerate(pods):
        columns_j = picked[j]
        candidates = [
            columns.candidate(c, bid_at[at + i], score_at[at + i] if score_at else None)
            for i, c in enumerate(columns_j)
        ]
        n = int(assignment[j])
        cleared = n >= 0
        namespace, _, name = pod.key.partition("/")
        records.append(
            Placement(
                at_s=at_s,
                mode=mode,
                clearing_id=cid,
                batch_pods=j_pods,
                pod=PodRef(namespace=namespace, name=name, uid=pod.uid),
                cleared_node=names[n] if cleared else None,
                price=columns.cleared_price(n) if cleared else None,
                bid=bid_at[at] if cleared else None,
                method=method,
                fell_back=fell_back,
                certificate=cert,
                candidates=candidates,
                candidates_total=n_nodes,
                gated_counts={
                    GATE_REASONS[i]: count for i, count in enumerate(counts_rows[j]) if count
                },
                gated=[columns.gated(c, code) for c, code in gated[j]],
                stale_after_s=stale_after_s,
            )
        )
        at += len(columns_j)
    return records


def _picked(
    values: np.ndarray, codes: np.ndarray, assignment: np.ndarray, k: int
) -> list[list[int]]:
    """Per pod, the columns it keeps: its cleared node first, then its ``k`` best open ones by
    bid other than it (so k + 1 columns when the cleared node is not among the best k)."""
    best = _top(np.where(codes == 0, values, -np.inf), k, copy=False)  # open: finite, > 0
    if best is None:
        return [[n] if n >= 0 else [] for n in assignment.tolist()]
    open_best = ((best >= 0) & (codes[np.arange(len(codes))[:, None], best] == 0)).tolist()
    out = []
    for n, row, is_open in zip(assignment.tolist(), best.tolist(), open_best, strict=True):
        kept = [c for c, o in zip(row, is_open, strict=True) if o and c != n]
        out.append(([n] if n >= 0 else []) + kept)
    return out


def _gated(codes: np.ndarray, keep: int) -> list[list[tuple[int, int]]]:
    """Per pod, its first ``keep`` gated columns with their codes (in column order)."""
    out = []
    for row in codes:
        at = np.flatnonzero(row)[:keep]
        out.append(list(zip(at.tolist(), row[at].tolist(), strict=True)))
    return out


@dataclass(frozen=True)
class _Columns:
    """Per-node columns as Python lists, of only the nodes some record names (one conversion
    per window, not per pod; at 1 pod × 1,000 nodes converting every node cost more than the
    clearing)."""

    names: Sequence[str]
    at: dict[int, int]  # column → position in the lists
    price: list[float | None]
    headroom: list[float | None]
    age_s: list[float | None]
    gate: list[float | None] | None

    def candidate(self, n: int, bid: float | None, score: int | None) -> Candidate:
        i = self.at[n]
        return Candidate(
            node=self.names[n],
            bid=bid,
            price=self.price[i],
            headroom=self.headroom[i],
            age_s=self.age_s[i],
            gate=self.gate[i] if self.gate is not None else None,
            score=score,
        )

    def gated(self, n: int, code: int) -> Gated:
        reason = GATE_REASONS[code - 1]
        i = self.at[n]
        return Gated(
            node=self.names[n], reason=reason, headroom=self.headroom[i], age_s=self.age_s[i]
        )

    def cleared_price(self, n: int) -> float | None:
        return self.price[self.at[n]]


def _check_shapes(n_nodes: int, *arrays: np.ndarray) -> None:
    for label, array in zip(("prices", "headroom", "age_s"), arrays, strict=True):
        if np.shape(array) != (n_nodes,):
            raise ValueError(f"{label} has shape {np.shape(array)}, expected ({n_nodes},)")


def _columns(
    names: Sequence[str],
    used: list[int],
    prices: np.ndarray,
    headroom: np.ndarray,
    age_s: np.ndarray,
    gate: np.ndarray | None,
) -> _Columns:
    """The columns ``used`` (sorted, unique) of the per-node arrays."""
    arrays = [prices, headroom, age_s] + ([gate] if gate is not None else [])
    stacked = np.stack([np.asarray(a, dtype=float)[used] for a in arrays])
    rows = _nums(stacked.ravel())
    k = len(used)
    price, head, age = rows[:k], rows[k : 2 * k], rows[2 * k : 3 * k]
    return _Columns(
        names=names,
        at={c: i for i, c in enumerate(used)},
        price=price,
        headroom=head,
        age_s=age,
        gate=rows[3 * k :] if gate is not None else None,
    )


def _top(values: np.ndarray, k: int, copy: bool = True) -> np.ndarray | None:
    """(J, k) columns of each row's k largest values, largest first, −1 once a row has no
    value above −inf left: k passes of ``argmax`` (cheaper than a partition of the whole
    matrix for the few kept). ``copy=False`` lets it overwrite ``values``."""
    if k == 0:
        return None
    work = values.copy() if copy else values
    rows = np.arange(values.shape[0])
    top = np.empty((values.shape[0], k), dtype=np.int64)
    for i in range(k):
        best = work.argmax(axis=1)
        top[:, i] = np.where(work[rows, best] == -np.inf, -1, best)
        work[rows, best] = -np.inf
    return top


def _nums(array: np.ndarray) -> list[float | None]:
    """A float array as a list rounded to :data:`SIGNIFICANT` digits, NaN and ±inf as ``None``."""
    x = np.asarray(array, dtype=float)
    finite = np.isfinite(x) & (x != 0)
    magnitude = np.floor(np.log10(np.abs(np.where(finite, x, 1.0))))  # finite, ≠ 0: no warning
    scale = 10.0 ** (SIGNIFICANT - 1 - magnitude)
    rounded = np.where(finite, np.round(x * scale) / scale, x)
    return [v if math.isfinite(v) else None for v in rounded.tolist()]


def _num(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None

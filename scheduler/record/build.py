"""Placement records of cleared windows, built from the arrays the extender already holds.

One call for one window (:func:`placement_records`) or for many over the same nodes
(:func:`windows_records`: the extender builds the windows queued over some tens of ms in one
pass): the rows of every window are stacked, one row a pod, and the gate reasons of every (pod,
node) pair, the best bids and the first gated nodes of every pod are found with whole-array
operations over all of them (:mod:`.arrays`); the Python loop only assembles the structs. Each pod
keeps its cleared node and its best ``keep_candidates`` open nodes by bid, and up to
``keep_gated`` of the nodes gated for it (every reason counted in ``gated_counts``). The engine is
not imported: a clearing is read through the :class:`ClearingLike` protocol
(``eams.scheduler.auction.Clearing`` satisfies it), so this package stays below the auction.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from eams.scheduler.record.arrays import (
    gate_codes,
    gated_columns,
    number,
    picked_columns,
    rounded,
    stacked_masks,
    stacked_scores,
)
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
        return Certificate(kind="exact", bound=0.0, value=number(clearing.value))
    if clearing.gap_bound is not None:
        return Certificate(
            kind="gap_bound",
            bound=float(clearing.gap_bound),
            value=number(clearing.value),
            epsilon=number(clearing.epsilon),
        )
    return Certificate(
        kind="j_epsilon",
        bound=batch_pods * float(clearing.epsilon),
        value=number(clearing.value),
        epsilon=number(clearing.epsilon),
    )


@dataclass(frozen=True)
class Window:
    """One cleared window's inputs to its records (:func:`windows_records`), over the nodes
    ``names`` that call is given (N of them).

    Attributes
    ----------
    pods : sequence of PodLike, length J
    values : (J, N) float
        Bid values v_jn (``eams.scheduler.auction.bids.bid_values``).
    clearing : ClearingLike
        ``assignment`` (J,) (−1 none), ``prices`` (N,), ``value``, ``epsilon``, ``gap_bound``,
        ``fell_back``, ``method``; :class:`BestBid` for a batch of one cleared without the
        engine.
    headroom, age_s : (N,) float
        What the bids used; NaN = unknown (recorded as ``null``).
    gate : (N,) float, optional
        The headroom gate the bids used (``eams.scheduler.auction.bids.gate``), recorded for
        each candidate kept; ``null`` in the records without it.
    at_s : float
        Epoch seconds of the clearing.
    clearing_id : str, optional
        :func:`new_clearing_id` when not given.
    excluded : reason → (N,) or (J, N) bool, optional
        The caller's gates (:func:`~.arrays.gate_codes`), e.g. ``{"headroom_floor":
        floor_mask, "filter": ~candidate_mask, "no_fit": ~fits}``.
    scores : (J, N) int, optional
        The 0–10 scores answered to kube-scheduler.
    """

    pods: Sequence[PodLike]
    values: np.ndarray
    clearing: ClearingLike
    headroom: np.ndarray
    age_s: np.ndarray
    at_s: float
    gate: np.ndarray | None = None
    clearing_id: str | None = None
    excluded: Mapping[str, np.ndarray] | None = None
    scores: np.ndarray | None = None


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
    scores: np.ndarray | None = None,
    gate: np.ndarray | None = None,
    stale_after_s: float | None = None,
    keep_candidates: int = 5,
    keep_gated: int = 8,
) -> list[Placement]:
    """One :class:`~.schema.Placement` per pod of one cleared window: :func:`windows_records`
    of the one :class:`Window` of these fields (each described there).

    Returns
    -------
    list of Placement, length J

    Raises
    ------
    ValueError
        Arrays of inconsistent shapes, or an unknown gate reason.
    """
    window = Window(
        pods=pods,
        values=values,
        clearing=clearing,
        headroom=headroom,
        age_s=age_s,
        at_s=at_s,
        gate=gate,
        clearing_id=clearing_id,
        excluded=excluded,
        scores=scores,
    )
    return windows_records(
        [window],
        names=names,
        mode=mode,
        stale_after_s=stale_after_s,
        keep_candidates=keep_candidates,
        keep_gated=keep_gated,
    )


def windows_records(
    windows: Sequence[Window],
    *,
    names: Sequence[str],
    mode: Mode,
    stale_after_s: float | None = None,
    keep_candidates: int = 5,
    keep_gated: int = 8,
) -> list[Placement]:
    """One :class:`~.schema.Placement` per pod of every window, in order, each the same as
    its window alone would give (:func:`placement_records`), built in one pass over the
    windows' rows stacked (ΣJ rows of N columns).

    Parameters
    ----------
    windows : sequence of Window
        Cleared over the same nodes.
    names : sequence of str, length N
        The nodes (columns of every window's arrays).
    mode : {"shadow", "active"}
    stale_after_s : float, optional
        AR-6's staleness limit the bids used (recorded, so ``explain`` can say a bid was
        discounted for an old reading).
    keep_candidates, keep_gated : int
        The best open nodes by bid kept per pod (and the cleared node first, if it is not among
        them), and the gated nodes listed per pod, in column order (every one is counted in
        ``gated_counts``). Per-node numbers are rounded to :data:`~.arrays.SIGNIFICANT` digits.

    Returns
    -------
    list of Placement, length ΣJ

    Raises
    ------
    ValueError
        Arrays of inconsistent shapes, or an unknown gate reason.
    """
    n_nodes = len(names)
    sizes = [len(w.pods) for w in windows]
    if not windows:
        return []
    for w, j_pods in zip(windows, sizes, strict=True):
        _check_shapes(j_pods, n_nodes, w)
    shapes = [(j, n_nodes) for j in sizes]
    values = np.concatenate(
        [np.asarray(w.values, dtype=float).reshape(s) for w, s in zip(windows, shapes, strict=True)]
    )
    assignment = np.concatenate([np.asarray(w.clearing.assignment, np.int64) for w in windows])
    window_of = np.repeat(np.arange(len(windows)), sizes)
    # (W, 4, N): each window's price, headroom, age and gate rows
    per_node = np.array(
        [[w.clearing.prices, w.headroom, w.age_s, _or_nan(w.gate, n_nodes)] for w in windows],
        dtype=float,
    )
    masks = stacked_masks([w.excluded for w in windows], sizes, n_nodes)
    codes = gate_codes(values, per_node[window_of, 1], masks)
    picked = picked_columns(values, codes, assignment, min(keep_candidates, n_nodes))
    counts, gated = gated_columns(codes, keep_gated)
    # every kept (row, column) — the candidates', then the gated nodes' — read at once
    rows = [r for r, row in enumerate(picked) for _ in row]
    kept = len(rows)
    rows += [r for r, row in enumerate(gated) for _ in row]
    columns = list(itertools.chain.from_iterable(picked))
    columns += [c for row in gated for c, _ in row]
    at_rows = np.asarray(rows, dtype=np.intp)
    at_columns = np.asarray(columns, dtype=np.intp)
    scores = stacked_scores([w.scores for w in windows], sizes, n_nodes)
    score_at = scores[at_rows[:kept], at_columns[:kept]].tolist() if scores is not None else []
    kept_nodes = per_node[window_of[at_rows], :, at_columns].T  # (4, entries)
    kept_bids = values[at_rows[:kept], at_columns[:kept]]
    gate_at = kept_nodes[3, :kept]  # a gate for the candidates only (a gated node's has none)
    numbers = rounded(np.concatenate([kept_nodes[:3].ravel(), kept_bids, gate_at]))
    entries = len(rows)
    price, headroom, age_s = (numbers[i * entries : (i + 1) * entries] for i in range(3))
    bid_at, gate = numbers[3 * entries : 3 * entries + kept], numbers[3 * entries + kept :]
    assigned = assignment.tolist()
    records = []
    row = at = 0
    at_gated = kept
    for w, j_pods in zip(windows, sizes, strict=True):
        clearing = w.clearing
        cert = certificate(clearing, j_pods)
        cid = w.clearing_id or new_clearing_id()
        method = str(clearing.method)
        fell_back = bool(clearing.fell_back)
        with_scores = w.scores is not None
        for pod in w.pods:
            candidates = [
                Candidate(
                    node=names[c],
                    bid=bid_at[i],
                    price=price[i],
                    headroom=headroom[i],
                    age_s=age_s[i],
                    gate=gate[i],
                    score=score_at[i] if with_scores else None,
                )
                for i, c in enumerate(picked[row], at)
            ]
            n = assigned[row]
            cleared = n >= 0
            namespace, _, name = pod.key.partition("/")
            records.append(
                Placement(
                    at_s=w.at_s,
                    mode=mode,
                    clearing_id=cid,
                    batch_pods=j_pods,
                    pod=PodRef(namespace=namespace, name=name, uid=pod.uid),
                    cleared_node=names[n] if cleared else None,
                    price=price[at] if cleared else None,
                    bid=bid_at[at] if cleared else None,
                    method=method,
                    fell_back=fell_back,
                    certificate=cert,
                    candidates=candidates,
                    candidates_total=n_nodes,
                    gated_counts={
                        GATE_REASONS[i]: count for i, count in enumerate(counts[row]) if count
                    },
                    gated=[
                        Gated(
                            node=names[c],
                            reason=GATE_REASONS[code - 1],
                            headroom=headroom[i],
                            age_s=age_s[i],
                        )
                        for i, (c, code) in enumerate(gated[row], at_gated)
                    ],
                    stale_after_s=stale_after_s,
                )
            )
            at += len(picked[row])
            at_gated += len(gated[row])
            row += 1
    return records


def _check_shapes(j_pods: int, n_nodes: int, window: Window) -> None:
    assignment = np.shape(window.clearing.assignment)
    if assignment != (j_pods,):
        raise ValueError(f"assignment has shape {assignment}, expected ({j_pods},)")
    arrays = {"prices": window.clearing.prices, "headroom": window.headroom,
              "age_s": window.age_s, "gate": window.gate}  # fmt: skip
    for label, array in arrays.items():
        if array is not None and np.shape(array) != (n_nodes,):
            raise ValueError(f"{label} has shape {np.shape(array)}, expected ({n_nodes},)")


def _or_nan(values: np.ndarray | None, n: int) -> np.ndarray:
    return np.full(n, np.nan) if values is None else np.asarray(values, dtype=float)

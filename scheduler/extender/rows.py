"""Rows of the clearing table and the 0–10 scores they answer ``/prioritize`` with.

Scores follow kube-scheduler's extender range (``MaxExtenderPriority`` = 10, kube-scheduler
``extender/v1/types.go``); the cleared node of a row gets 10 and every other at most 9, so
the extender's ``weight`` sets the cleared node's lead (``deploy/k3s/scheduler-config.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eams.scheduler.extender.pending import PendingPod

MAX_SCORE = 10  # MaxExtenderPriority, kube-scheduler extender/v1 types.go


class Columns(dict[str, int]):
    """Node name → column of a window's score rows, shared by every row of the window.

    It keeps the column indices of the last candidate list asked for: kube-scheduler sends the
    same list pod after pod, so answering costs one numpy gather, not a pass over the names.
    """

    def __init__(self, names: list[str]) -> None:
        super().__init__((name, i) for i, name in enumerate(names))
        self._last: tuple[str, ...] | None = None
        self._last_names: list[str] | None = None
        self._index = np.zeros(0, dtype=np.int64)

    def index_of(self, names: list[str]) -> np.ndarray:
        """(len(names),) int columns of ``names``, −1 for a node not valued in the window."""
        if names is self._last_names:  # the verbs keep one list object while names repeat
            return self._index
        key = tuple(names)
        if key != self._last:
            self._last = key
            self._index = np.fromiter((self.get(n, -1) for n in names), np.int64, len(names))
        self._last_names = names
        return self._index


@dataclass(frozen=True, slots=True)
class Cleared:
    """One row of the clearing table.

    Attributes
    ----------
    pod : str
    node : str or None
        The node the auction cleared the pod onto; ``None`` if it stayed unassigned.
    price : float or None
        That node's clearing price (bid-value units per slot).
    cleared_at_s : float
        Epoch seconds.
    fell_back : bool
        The engine hit its round cap and the greedy fallback completed the assignment.
    scores : (N,) int8 ndarray
        0–10 score of every valued node of the window for this pod (:func:`scale_scores`),
        computed with the clearing so that answering ``/prioritize`` costs no bid evaluation.
    columns : Columns
        Node name → index into ``scores``; one object shared by every row of the window (a table
        of thousands of rows must not hold a dict per row: memory and GC time).
    source : PendingPod or None
        The pod as it was cleared (its ``uid``, and what to clear again when kube-scheduler
        no longer offers ``node``: :meth:`.batching.Batcher.clear_again`); ``None`` for a
        single-pod score.
    """

    pod: str
    node: str | None
    price: float | None
    cleared_at_s: float
    fell_back: bool
    scores: np.ndarray
    columns: Columns
    source: PendingPod | None = None

    @property
    def uid(self) -> str | None:
        """``metadata.uid`` of the cleared pod (:attr:`PendingPod.uid`; ``None`` unknown)."""
        return None if self.source is None else self.source.uid

    def scores_for(self, names: list[str]) -> np.ndarray:
        """(len(names),) int8 scores of ``names`` in order; 0 for a node that was not valued in
        the window."""
        index = self.columns.index_of(names)
        if not self.scores.size:  # no node was valued in the window
            return np.zeros(index.size, dtype=np.int8)
        picked = self.scores[index]
        if index.size and index.min() < 0:
            picked = np.where(index >= 0, picked, 0)
        return picked


def scale_scores(values: np.ndarray, cleared: np.ndarray) -> np.ndarray:
    """Bid values → 0–10 integer scores, row by row.

    The cleared node of a row gets 10 and every other node at most 9, linear in its bid value
    v_jn relative to the row's best other node, rounded half up; without a cleared node the best
    gets 10. A value of 0 (not valued, does not fit, gated out) scores 0.

    Parameters
    ----------
    values : (J, N) float, ≥ 0
        Bid values (``bids.bid_values``), 0 where the node is not an option.
    cleared : (J,) int
        Column of each row's cleared node, −1 for none.

    Returns
    -------
    (J, N) int64
    """
    values = values.copy()
    rows = np.flatnonzero(cleared >= 0)
    values[rows, cleared[rows]] = 0.0
    best = values.max(axis=1, initial=0.0)[:, None]
    top = np.where(cleared >= 0, MAX_SCORE - 1, MAX_SCORE)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(best > 0, np.floor(top * values / best + 0.5), 0.0).astype(np.int64)
    scores[rows, cleared[rows]] = MAX_SCORE
    return scores

"""The whole-array steps of the placement records, over the rows of one or many windows.

Each function takes (R, N) arrays, one row a pod (of any window: the rows of several windows
stacked), and returns per-row Python lists of the few columns a record keeps, so the Python
loop that assembles the records only indexes lists (:mod:`.build`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from eams.scheduler.record.schema import GATE_REASONS

CODE = {reason: i + 1 for i, reason in enumerate(GATE_REASONS)}
"""Gate reason → its code in :func:`gate_codes` (1 + its index in :data:`GATE_REASONS`)."""
SIGNIFICANT = 6
"""Significant digits kept of each per-node number (bid, price, headroom, age, gate): enough to
explain a decision, and a third of a full float's 17 in the line."""


def gate_codes(
    values: np.ndarray,
    headroom: np.ndarray,
    excluded: Mapping[str, np.ndarray],
) -> np.ndarray:
    """(R, N) int8: 0 where node n is an option for pod (row) r, else 1 + the index in
    :data:`GATE_REASONS` of the first reason that applies.

    Parameters
    ----------
    values : (R, N) float
        Bid values; 0 or not finite is no bid.
    headroom : (N,) or (R, N) float
        NaN = unknown (unknown is not ``capped``).
    excluded : reason → (N,) or (R, N) bool
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
    codes = np.where(no_bid, np.int8(CODE["no_bid"]), np.int8(0))
    masks = [(r, excluded[r]) for r in GATE_REASONS if r in excluded]
    masks.append(("capped", capped))
    for reason, mask in reversed(masks):  # the first reason in order wins: set it last
        try:
            np.copyto(codes, np.int8(CODE[reason]), where=mask)
        except ValueError as exc:  # a mask that does not broadcast to (R, N)
            raise ValueError(f"gate mask {reason!r}: {exc}") from exc
    return codes


def picked_columns(
    values: np.ndarray, codes: np.ndarray, assignment: np.ndarray, k: int
) -> list[list[int]]:
    """Per row, the columns it keeps: its cleared node (``assignment`` (R,), −1 none) first,
    then its ``k`` best open ones by bid other than it (so k + 1 columns when the cleared node
    is not among the best k)."""
    best = top_columns(np.where(codes == 0, values, -np.inf), k, copy=False)  # open: finite > 0
    if best is None:
        return [[n] if n >= 0 else [] for n in assignment.tolist()]
    open_best = ((best >= 0) & (codes[np.arange(len(codes))[:, None], best] == 0)).tolist()
    out = []
    for n, row, is_open in zip(assignment.tolist(), best.tolist(), open_best, strict=True):
        kept = [c for c, o in zip(row, is_open, strict=True) if o and c != n]
        out.append(([n] if n >= 0 else []) + kept)
    return out


def gated_columns(
    codes: np.ndarray, keep: int
) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
    """Per row, how many nodes each reason gated ((R, len(GATE_REASONS)) as lists), and its
    first ``keep`` gated columns with their codes (in column order): one pass over the gated
    (row, column) pairs of every row at once."""
    n_rows, width = len(codes), len(GATE_REASONS) + 1
    rows, columns = np.nonzero(codes)  # row-major: each row's columns ascending
    code = codes[rows, columns]
    counts = np.bincount(rows * width + code, minlength=n_rows * width)
    rank = np.arange(rows.size) - np.searchsorted(rows, rows)  # position within its row
    kept = rank < keep
    rows, columns, code = rows[kept], columns[kept], code[kept]
    ends = np.cumsum(np.bincount(rows, minlength=n_rows)).tolist()
    pairs = list(zip(columns.tolist(), code.tolist(), strict=True))
    listed = [pairs[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
    return counts.reshape(n_rows, width)[:, 1:].tolist(), listed


def stacked_masks(
    excluded: Sequence[Mapping[str, np.ndarray] | None], sizes: Sequence[int], n_nodes: int
) -> dict[str, np.ndarray]:
    """reason → (ΣJ, N) bool: each window's mask of it (``excluded[w][reason]``, (N,) or
    (J_w, N)) over its ``sizes[w]`` rows, False without one; one window's masks as given.

    Raises
    ------
    ValueError
        A mask that does not broadcast to its window's (J_w, N) (names the reason).
    """
    if len(excluded) == 1:
        return dict(excluded[0] or {})
    reasons = {r: None for masks in excluded if masks for r in masks}  # in first-seen order
    ends = np.cumsum(sizes).tolist()
    stacked = {}
    for reason in reasons:
        rows = stacked[reason] = np.zeros((ends[-1], n_nodes), dtype=bool)
        for masks, start, end in zip(excluded, [0, *ends[:-1]], ends, strict=True):
            mask = masks.get(reason) if masks else None
            if mask is not None:
                try:
                    rows[start:end] = mask
                except ValueError as exc:
                    raise ValueError(f"gate mask {reason!r}: {exc}") from exc
    return stacked


def stacked_scores(
    scores: Sequence[np.ndarray | None], sizes: Sequence[int], n_nodes: int
) -> np.ndarray | None:
    """(ΣJ, N): each window's (J_w, N) scores (zeros for a window without, not to be read);
    ``None`` when no window has any."""
    given = [s for s in scores if s is not None]
    if not given:
        return None
    if len(scores) == 1:
        return np.asarray(given[0])
    dtype = np.result_type(*given)
    return np.concatenate(
        [
            np.zeros((j, n_nodes), dtype) if s is None else np.reshape(s, (j, n_nodes))
            for s, j in zip(scores, sizes, strict=True)
        ]
    )


def top_columns(values: np.ndarray, k: int, copy: bool = True) -> np.ndarray | None:
    """(R, k) columns of each row's k largest values, largest first, −1 once a row has no
    value above −inf left: k passes of ``argmax`` (cheaper than a partition of the whole
    matrix for the few kept). ``copy=False`` lets it overwrite ``values``; ``None`` for k 0."""
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


def rounded(array: np.ndarray) -> list[float | None]:
    """A float array as a flat list rounded to :data:`SIGNIFICANT` digits, NaN and ±inf as
    ``None``."""
    x = np.asarray(array, dtype=float)
    finite = np.isfinite(x) & (x != 0)
    magnitude = np.floor(np.log10(np.abs(np.where(finite, x, 1.0))))  # finite, ≠ 0: no warning
    scale = 10.0 ** (SIGNIFICANT - 1 - magnitude)
    out = np.where(finite, np.round(x * scale) / scale, x).astype(object)
    out[~np.isfinite(x)] = None
    return out.ravel().tolist()  # type: ignore[no-any-return]


def number(x: float) -> float | None:
    """``float(x)``, ``None`` when not finite."""
    x = float(x)
    return x if math.isfinite(x) else None

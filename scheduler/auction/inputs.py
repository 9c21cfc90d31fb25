"""The engine's input checks: the arrays of ``Pods``/``Nodes`` when they are built, and the value
matrix, demand, capacity and filter mask that :func:`.auction.solve` receives.

Every check raises :class:`~eams.scheduler.errors.AuctionInputError` (a ``ValueError``) naming
the array and the index of the first bad element; nothing here clears anything.
:func:`allowed` turns the checked values into the matrix every method works on (−inf wherever
a pod may not go).
"""

from __future__ import annotations

import numpy as np

from eams.scheduler.errors import AuctionInputError


def array(name: str, values: object, dtype: type, length: int | None) -> np.ndarray:
    """``values`` as a read-only 1-D array of ``dtype``, of ``length`` elements if given.

    Raises
    ------
    AuctionInputError
        Not numeric, not 1-D, or of the wrong length (names ``name``).
    """
    try:
        result: np.ndarray = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise AuctionInputError(f"{name}: not a numeric array ({exc})") from exc
    if result.ndim != 1:
        raise AuctionInputError(f"{name}: must be 1-D, got shape {result.shape}")
    if length is not None and result.shape[0] != length:
        raise AuctionInputError(f"{name}: length {result.shape[0]}, expected {length}")
    result.setflags(write=False)
    return result


def check(name: str, values: np.ndarray, bad: np.ndarray, rule: str) -> None:
    """Raise for the first ``bad`` element of ``values``: ``name[i] = value: rule``.

    Raises
    ------
    AuctionInputError
        Any element of ``bad`` (same shape as ``values``) is True.
    """
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AuctionInputError(f"{name}[{i}] = {values[i].item()!r}: {rule}")


def int_array(name: str, values: object, length: int | None) -> np.ndarray:
    """:func:`array` of int64; floats are accepted only when they are whole numbers.

    Raises
    ------
    AuctionInputError
        A non-integer float (names the index) or a non-numeric dtype.
    """
    raw = np.asarray(values)
    if raw.size and raw.dtype.kind == "f":
        check(
            name,
            raw.ravel(),
            ~np.isfinite(raw.ravel()) | (raw.ravel() % 1 != 0),
            "must be an integer",
        )
    elif raw.size and raw.dtype.kind not in "iub":
        raise AuctionInputError(f"{name}: must be integers, got dtype {raw.dtype}")
    return array(name, raw, np.int64, length)


def check_matrix(
    values: object, demand: object, capacity: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The inputs of :func:`.auction.solve`, checked.

    Parameters
    ----------
    values : (J, N) float, finite or −inf
    demand : (J,) int ≥ 1
    capacity : (N,) int ≥ 0

    Returns
    -------
    (values, demand, capacity)
        As float and int64 arrays.

    Raises
    ------
    AuctionInputError
        Not 2-D, shapes disagree, NaN or +inf values, demand < 1 or capacity < 0 (names the
        index).
    """
    v = np.asarray(values, dtype=float)
    d = np.asarray(demand)
    c = np.asarray(capacity)
    if v.ndim != 2:
        raise AuctionInputError(f"values: must be 2-D (pods × nodes), got shape {v.shape}")
    if d.shape != (v.shape[0],) or c.shape != (v.shape[1],):
        raise AuctionInputError(
            f"demand {d.shape} / capacity {c.shape} do not match values {v.shape}"
        )
    if d.size and (d.dtype.kind not in "iu" or d.min() < 1):
        i = int(np.flatnonzero(d < 1)[0]) if d.dtype.kind in "iu" else 0
        raise AuctionInputError(f"demand[{i}]: must be an integer ≥ 1")
    if c.size and (c.dtype.kind not in "iu" or c.min() < 0):
        i = int(np.flatnonzero(c < 0)[0]) if c.dtype.kind in "iu" else 0
        raise AuctionInputError(f"capacity[{i}]: must be an integer ≥ 0")
    total = v.sum()  # one pass: NaN or +inf anywhere makes the sum NaN or +inf
    if np.isnan(total) or total == np.inf:
        j, n = np.argwhere(np.isnan(v) | (v == np.inf))[0]
        raise AuctionInputError(
            f"values[{j}, {n}] = {v[j, n].item()!r}: must be finite or −inf (not allowed)"
        )
    return v, d.astype(np.int64), c.astype(np.int64)


def allowed(
    v: np.ndarray, d: np.ndarray, cap: np.ndarray, eligible: np.ndarray | None
) -> np.ndarray:
    """``v`` with −inf wherever the pod may not go: v ≤ 0, not eligible, or wider than the node.

    Parameters
    ----------
    v : (J, N) float, checked by :func:`check_matrix`
    d : (J,) int, slots per pod
    cap : (N,) int, free slots per node
    eligible : (J, N) bool or None
        The filter predicates' verdicts.

    Returns
    -------
    (J, N) float
        ``v`` itself (not a copy) when nothing has to change.

    Raises
    ------
    AuctionInputError
        ``eligible`` is not a bool array of shape (J, N).
    """
    if eligible is not None:
        mask = np.asarray(eligible)
        if mask.shape != v.shape or mask.dtype != bool:
            raise AuctionInputError(
                f"feasible: must be a bool array of shape {v.shape}, got {mask.dtype} {mask.shape}"
            )
    if v.size == 0:
        return v
    narrow = np.flatnonzero(cap < d.max())  # only these nodes can be too small for a pod
    if eligible is None and narrow.size == 0 and v.min() > 0:
        return v
    v = np.where((v > 0) & mask if eligible is not None else v > 0, v, -np.inf)
    if narrow.size:
        v[:, narrow] = np.where(d[:, None] <= cap[narrow][None, :], v[:, narrow], -np.inf)
    return v

"""Classes of identical nodes ("similar objects", Bertsekas & Castañón 1989).

Nodes whose value columns are identical are one market: a pod's second-best option must come
from another class, or identical nodes would outbid each other by ε forever.
"""

from __future__ import annotations

import numpy as np


def node_classes(values: np.ndarray, probe_rows: int = 16) -> np.ndarray:
    """Class id per node; nodes of one class have identical value columns (similar objects).

    Columns are grouped by a digest of a few probe rows, then every multi-member group is
    split column by column, so a digest collision never merges two different nodes. The
    digest is integer arithmetic on the values' bits (wrapping uint64), exact in any order:
    a float digest such as ``weights @ probe`` is summed by BLAS in an order that depends on
    the column's position (SIMD blocks and their remainder), so two identical columns could
    land 1 ulp apart, in different classes, and start the ε price war the classes prevent.

    Parameters
    ----------
    values : (J, N) float
        Bid values, −inf where the pod may not go (no NaN and no −0: :mod:`.inputs` maps
        v ≤ 0 to −inf).
    probe_rows : int
        About how many rows the digest covers (every ``J // probe_rows``-th row).

    Returns
    -------
    (N,) int
        The lowest node index of the node's class.
    """
    n_pods, n_nodes = values.shape
    result = np.arange(n_nodes)
    if n_pods == 0 or n_nodes == 0:
        return result
    probe = values[:: max(1, n_pods // probe_rows)]
    bits = np.ascontiguousarray(probe, dtype=np.float64).view(np.uint64)
    rng = np.random.default_rng(0)
    weights = np.asarray(rng.integers(1, 2**63, size=bits.shape[0], dtype=np.uint64)) | 1
    digest = (bits * weights[:, None]).sum(axis=0, dtype=np.uint64)
    _, group, counts = np.unique(digest, return_inverse=True, return_counts=True)
    for c in np.flatnonzero(counts > 1):  # groups of look-alike nodes only
        members = np.flatnonzero(group == c)
        while members.size > 1:  # one class per pass: the columns equal to the first left
            same = (values[:, members] == values[:, [members[0]]]).all(axis=0)
            result[members[same]] = members[0]
            members = members[~same]
    return result

"""Classes of identical nodes ("similar objects", Bertsekas & Castañón 1989).

Nodes whose value columns are identical are one market: a pod's second-best option must come
from another class, or identical nodes would outbid each other by ε forever.
"""

from __future__ import annotations

import numpy as np


def node_classes(values: np.ndarray, probe_rows: int = 16) -> np.ndarray:
    """Class id per node; nodes of one class have identical value columns (similar objects).

    Columns are grouped by a hash of a few probe rows, then every multi-member group is
    confirmed column by column, so a hash collision never merges two different nodes.

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
    probe = np.where(np.isfinite(probe), probe, -1.0)
    weights = np.random.default_rng(0).uniform(1.0, 2.0, probe.shape[0])
    _, cls, counts = np.unique(weights @ probe, return_inverse=True, return_counts=True)
    for c in np.flatnonzero(counts > 1):  # groups of look-alike nodes only
        members = np.flatnonzero(cls == c)
        same = (values[:, members] == values[:, [members[0]]]).all(axis=0)
        result[members[same]] = members[0]
    return result

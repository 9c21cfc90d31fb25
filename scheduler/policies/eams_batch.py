"""EAMS with its batch window: the extender's ε-auction clearing the pods pending together.

Source: study §4–5.3 (window W = 200 ms, the batch cleared jointly), DESIGN.md §5; the code is
the ``eams`` plug-in's (:mod:`eams.scheduler.policies.eams`), with the extender's window set to
``params.extender_window_ms`` and every pod announced at its arrival, the clock the extender's
window and ages run on moved in simulated time (issue 33).
"""

from __future__ import annotations

from eams.scheduler.policies import eams
from eams.scheduler.policies.base import Cluster, Params

NAME = "eams-batch"


def make(cluster: Cluster, params: Params, seed: int) -> eams.ExtenderPolicy:
    """The ``eams`` plug-in with window ``params.extender_window_ms`` (> 0, ``Params`` checks)."""
    policy = eams.make(cluster, params, seed, window_ms=params.extender_window_ms)
    policy.name = NAME
    return policy

"""EAMS without market wakes: the extender with ``market_wakes`` off (issue 34's reference).

Source: this project's extender (``eams.scheduler.extender``, ``Settings.market_wakes``). The
``eams`` plug-in (:mod:`eams.scheduler.policies.eams`, the single-pod bid score) whose
extender never prices an asleep node nor asks for a wake: under the bench's power manager the
manager decides every wake alone (its own rules: pods that fit no awake node, the reserve), as
every ``eams+pm`` run before issue 34 did. Beside ``eams+pm`` it measures what the market's wakes
add.
"""

from __future__ import annotations

from eams.scheduler.policies import eams
from eams.scheduler.policies.base import Cluster, Params

NAME = "eams-no-wakes"


def make(cluster: Cluster, params: Params, seed: int) -> eams.ExtenderPolicy:
    """The ``eams`` plug-in with ``market_wakes=False``."""
    policy = eams.make(cluster, params, seed, market_wakes=False)
    policy.name = NAME
    return policy

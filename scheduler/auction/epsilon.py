"""The ε schedule of the ε-auction (Bertsekas, *Network Optimization: Continuous and Discrete
Models*, 1998, §7.1: ε-scaling).

ε runs from a first value down to the final ``epsilon_rel`` of the largest bid, divided by
``epsilon_factor`` per phase; the final ε is what the guarantee is stated in (value within J·ε
of the optimum for single-slot pods). The first ε is ``epsilon_start_rel`` of the largest bid
from zero prices, and the warm start's rank-one misfit when that is smaller: coarse phases would
only blur good starting prices into flat ones (every pod would then pile onto the same node),
and exactly rank-one bids need a single phase at the final ε.
"""

from __future__ import annotations

from eams.scheduler.auction.model import AuctionParams


def final(params: AuctionParams, v_max: float) -> float:
    """The last phase's ε, ``epsilon_rel · v_max`` (bid-value units)."""
    return params.epsilon_rel * v_max


def first(params: AuctionParams, v_max: float, misfit: float | None) -> float:
    """The first phase's ε: ``epsilon_start_rel · v_max``, or the warm start's ``misfit``
    (:func:`.warmstart.rank_one_prices`, value units) when smaller; ``None`` = cold start."""
    coarse = params.epsilon_start_rel * v_max
    return coarse if misfit is None else min(coarse, misfit)


def schedule(first: float, final: float, factor: float) -> list[float]:
    """ε per phase: ``first``, ``first/factor``, … while above ``final``, then ``final``.

    Parameters
    ----------
    first, final : float > 0, value units
    factor : float > 1

    Returns
    -------
    list of float
        At least one phase; the last is always ``final``.
    """
    phases = []
    eps = first
    while eps > final * (1 + 1e-9):
        phases.append(eps)
        eps /= factor
    return [*phases, final]

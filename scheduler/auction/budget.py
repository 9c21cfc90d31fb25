"""The wall-clock budget of one clearing (``solve``/``clear``'s ``time_budget_s``).

The round cap (``AuctionParams.max_rounds``) is deterministic (AR-8) and is what the bench
harness relies on; a budget is for the extender, whose batch window leaves a clearing a fixed
time: each method checks :meth:`Deadline.expired` before it starts and between its passes or
rounds, a method that finds the budget spent gives up, and the ε-auction, last, completes its
(always feasible) partial assignment greedily and certifies its gap (``Clearing.timed_out``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from eams.scheduler.errors import AuctionInputError


@dataclass(frozen=True)
class Deadline:
    """When the clearing's budget ends, on ``clock`` (seconds, monotonic).

    Attributes
    ----------
    at_s : float or None
        The clock reading at which the budget ends; None = no budget.
    clock : callable () -> float
        ``time.monotonic`` unless a test injects another.
    """

    at_s: float | None = None
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    @classmethod
    def after(cls, budget_s: float | None, clock: Callable[[], float] = time.monotonic) -> Deadline:
        """The deadline ``budget_s`` seconds from now (None: none).

        Raises
        ------
        AuctionInputError
            ``budget_s`` is NaN, infinite or negative.
        """
        if budget_s is None:
            return cls(None, clock)
        if not (math.isfinite(budget_s) and budget_s >= 0):
            raise AuctionInputError(f"time_budget_s = {budget_s!r}: must be finite and ≥ 0")
        return cls(clock() + budget_s, clock)

    def expired(self) -> bool:
        """The budget is spent (never, without one)."""
        return self.at_s is not None and self.clock() >= self.at_s


NO_DEADLINE = Deadline()

"""Errors of the scheduler package::

EamsError
└── SchedulerError
    ├── AuctionInputError        an auction input array is malformed (names the array and
    │                            index); also a ``ValueError``
    ├── extender.errors.ExtenderError
    └── bench.errors ...         (each sub-package adds its own below ``SchedulerError``)

Non-convergence of the auction is not an error: it comes back in the ``Clearing``
(``converged``, ``fell_back``).
"""

from eams.errors import EamsError


class SchedulerError(EamsError):
    """Base class of every deliberate scheduler failure."""


class AuctionInputError(SchedulerError, ValueError):
    """An input of the auction engine is malformed, or the method it names cannot clear it.

    The message names the array and, where one element is at fault, its index, for example
    ``pods.work_core_s[3] = nan: must be finite and > 0``; or the method and why, for example
    ``params.method = 'matching' cannot clear this batch: it clears single-slot pods only, and
    pod 3 needs 2 slots``.
    """

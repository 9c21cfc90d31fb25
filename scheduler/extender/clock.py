"""The extender's one clock: the time its telemetry ages and table rows are measured on, and the
timer its batch window runs on.

In a cluster that is the wall clock (:class:`WallClock`: epoch seconds from ``time.time`` for
ages, the event loop's monotonic ``call_later`` for the window, as before issue 33). The bench
replays a trace in *simulated* time, where a 200 ms window has to close at the simulated instant
200 ms after its first pod, whatever the wall clock did meanwhile: it hands the extender a
:class:`ManualClock` that it moves forward itself, and every window that closes on the way is
cleared at its own instant, in order (AR-8: two replays clear the same batches).

Both are a :class:`Clock`: called, the time in epoch seconds; ``call_later(delay_s, callback)``
runs ``callback`` once ``delay_s`` has passed on that clock and returns a handle whose
``cancel()`` stops it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    """A pending ``call_later``: ``cancel()`` stops it (no effect once it ran)."""

    def cancel(self) -> None:
        """Stop the timer."""


class Clock(Protocol):
    """What the extender reads the time from and runs its window timer on."""

    def __call__(self) -> float:
        """Now, epoch seconds."""

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` after ``delay_s`` seconds of this clock."""


class WallClock:
    """The production clock: ``now()`` epoch seconds for ages, the running event loop's
    ``call_later`` (monotonic) for timers.

    Parameters
    ----------
    now : callable
        Epoch seconds (``time.time``; tests pass a controllable one to age telemetry).
    """

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self.now = now

    def __call__(self) -> float:
        """``now()``, epoch s."""
        return self.now()

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """``asyncio.get_running_loop().call_later``.

        Raises
        ------
        RuntimeError
            No event loop runs in this thread.
        """
        return asyncio.get_running_loop().call_later(delay_s, callback)


class _Timer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that moves only when told to (the bench's simulated time).

    Parameters
    ----------
    start_s : float
        The time it starts at, epoch s.

    Notes
    -----
    Timers due at the same instant run in the order they were set; a callback that sets a timer
    due before the target of the running :meth:`advance_to` has it run in the same call.
    """

    def __init__(self, start_s: float = 0.0) -> None:
        self.now_s = start_s
        self._timers: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()

    def __call__(self) -> float:
        """The current time, epoch s."""
        return self.now_s

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once the clock has been advanced ``delay_s`` past now."""
        timer = _Timer(callback)
        heapq.heappush(self._timers, (self.now_s + max(0.0, delay_s), next(self._seq), timer))
        return timer

    def next_due_s(self) -> float | None:
        """When the earliest live timer is due, epoch s; ``None`` without one."""
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def advance_to(self, at_s: float) -> int:
        """Move to ``at_s`` (never back), running every timer due on the way at its own time.

        Returns
        -------
        int
            How many timers ran.
        """
        ran = 0
        while (due := self.next_due_s()) is not None and due <= at_s:
            _, _, timer = heapq.heappop(self._timers)
            self.now_s = max(self.now_s, due)
            timer.callback()
            ran += 1
        self.now_s = max(self.now_s, at_s)
        return ran


def as_clock(clock: Clock | Callable[[], float]) -> Clock:
    """``clock`` itself when it has timers, else a :class:`WallClock` reading it."""
    return clock if hasattr(clock, "call_later") else WallClock(clock)  # type: ignore[return-value]

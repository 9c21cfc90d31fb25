"""Batch windows: pending pods are collected for W, then cleared together into a table.

Study §4 (QueueSort/Permit rows) and DESIGN.md §5: pods pending for this scheduler are grouped
over a window W = 200 ms; when the window closes the auction clears the whole batch, and each
pod's row in the clearing table says which node won it. A pod arriving while a batch clears
goes into the next window. ``/prioritize`` waits for its pod's row up to W + grace (50 ms);
a pod still without a row then gets a single-pod bid score instead (the fallback).

The first pod to arrive opens a window (nothing runs while no pod waits). W is the first pod's
wait (AR-2 counts it in the 250 ms budget), so the window stops collecting early enough for its
clearing to end at W: it closes at W minus the longest of the last few clearing times (at most
W/2), instead of adding a whole clearing after W. Clearing itself is supplied as a coroutine so
this module knows nothing of the engine; if it raises, the batch's pods simply get no row and
fall back — a window never takes the service down.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from eams.scheduler.extender.market import Cleared, PendingPod

log = logging.getLogger(__name__)

ClearFn = Callable[[list[PendingPod]], Awaitable[list[Cleared]]]
LEAD_HISTORY = 8  # clearings whose longest duration sets how early a window closes


class Batcher:
    """Pending pods, the open window and the clearing table.

    Parameters
    ----------
    window_s : float
        Window length W, s (> 0).
    clearing_ttl_s : float
        A table row older than this is dropped, s.
    clear : callable
        ``async clear(batch) -> rows``; run once per window on the closed batch.
    clock : callable
        Epoch seconds, for row ages.
    """

    def __init__(
        self, window_s: float, clearing_ttl_s: float, clear: ClearFn, clock: Callable[[], float]
    ) -> None:
        self.window_s = window_s
        self.clearing_ttl_s = clearing_ttl_s
        self._clear = clear
        self._clock = clock
        self._pending: dict[str, PendingPod] = {}
        self._in_flight: set[str] = set()
        self._table: dict[str, Cleared] = {}
        self._window: asyncio.Task[None] | None = None
        self._cleared = asyncio.Event()
        self._clearing_s: deque[float] = deque(maxlen=LEAD_HISTORY)

    @property
    def lead_s(self) -> float:
        """How long before W a window closes, s: the longest recent clearing, at most W/2."""
        return min(self.window_s / 2, max(self._clearing_s, default=0.0))

    def submit(self, pod: PendingPod) -> None:
        """Add a pod to the open window (opening one if none is open).

        A pod that already has a fresh row or is being cleared is left alone; a pod already
        pending is replaced (its candidate set may have become known).
        """
        if self.row(pod.key, pod.uid) is not None or pod.key in self._in_flight:
            return
        self._pending[pod.key] = pod
        if self._window is None:
            self._window = asyncio.get_running_loop().create_task(self._run_window())

    def row(self, key: str, uid: str | None = None) -> Cleared | None:
        """The pod's fresh clearing-table row, or ``None``.

        With ``uid``, a row cleared for another pod of the same name (deleted and created
        again) is dropped instead of answered.
        """
        row = self._table.get(key)
        if row is None:
            return None
        stale = self._clock() - row.cleared_at_s > self.clearing_ttl_s
        if stale or (uid is not None and row.uid is not None and row.uid != uid):
            del self._table[key]
            return None
        return row

    def forget(self, key: str) -> None:
        """Drop a pod from the window and the table (it was bound or deleted)."""
        self._pending.pop(key, None)
        self._table.pop(key, None)

    def waiting(self, key: str) -> bool:
        """Whether the pod is in an open or clearing window."""
        return key in self._pending or key in self._in_flight

    async def wait(self, key: str, timeout_s: float, uid: str | None = None) -> Cleared | None:
        """Wait up to ``timeout_s`` for the pod's row (of that ``uid``, see :meth:`row`);
        ``None`` if it did not come in time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (row := self.row(key, uid)) is None and self.waiting(key):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            event = self._cleared
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                return None
        return row

    async def _run_window(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await asyncio.sleep(self.window_s - self.lead_s)
        finally:
            self._window = None
        batch = list(self._pending.values())
        self._pending.clear()
        self._in_flight.update(p.key for p in batch)
        started_s = loop.time()
        try:
            rows = await self._clear(batch) if batch else []
        except Exception:
            log.exception("clearing a batch of %d pods failed; they fall back", len(batch))
            rows = []
        finally:
            self._in_flight.difference_update(p.key for p in batch)
            self._clearing_s.append(loop.time() - started_s)
        now_s = self._clock()
        for key in [
            k for k, r in self._table.items() if now_s - r.cleared_at_s > self.clearing_ttl_s
        ]:
            del self._table[key]
        self._table.update((r.pod, r) for r in rows)
        event, self._cleared = self._cleared, asyncio.Event()
        event.set()

    async def close(self) -> None:
        """Cancel the open window (at shutdown)."""
        if self._window is not None:
            self._window.cancel()
            await asyncio.gather(self._window, return_exceptions=True)
            self._window = None

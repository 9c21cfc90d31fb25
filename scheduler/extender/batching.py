"""Batches of pending pods, cleared as they arrive, into the clearing table.

Study §4 (QueueSort/Permit rows) and DESIGN.md §5 group the pods pending for this scheduler
over a window W = 200 ms and clear each batch jointly. Behind kube-scheduler's extender
protocol there is no Permit to wait at: kube-scheduler schedules one pod at a time, and a
``/prioritize`` that waited for its window held the scheduler's only loop (issue 15: the first
pod of each window waited 100–200 ms while ~20 pods queued behind it). So no request waits for
a window here:

* pods join the pending set as soon as the extender hears of them — usually from the pod watch,
  before kube-scheduler asks — or from their first request;
* the batch clears when kube-scheduler asks about one of its pods (then at once, on the event
  loop, so the answer comes from the fresh table row), or W after its first pod arrived,
  whichever comes first; a batch holds at most ``max_batch_pods`` pods (oldest first);
* a batch therefore holds the pods kube-scheduler has not reached yet: one or two while it
  keeps up, its whole backlog when it falls behind — the joint decision costs no waiting.

Each pod's row in the table says which node won it and scores every node of its window. The
clearing is supplied as a function, so this module knows nothing of the engine; if it raises,
the batch's pods get no row and fall back to a single-pod score — a batch never takes the
service down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from eams.scheduler.extender.clock import Clock, TimerHandle, as_clock
from eams.scheduler.extender.pending import PendingPod
from eams.scheduler.extender.rows import Cleared

log = logging.getLogger(__name__)

ClearFn = Callable[[list[PendingPod]], list[Cleared]]


class Batcher:
    """Pending pods, the window timer and the clearing table.

    Parameters
    ----------
    window_s : float
        Window length W, s (> 0): the longest a pending pod waits before its batch clears.
    clearing_ttl_s : float
        A table row older than this is dropped, s.
    clear : callable
        ``clear(batch) -> rows``, run on the event loop.
    clock : Clock or callable
        The extender's clock (``clock.py``): epoch seconds for row ages, and the timer the
        window runs on; a plain callable gives the ages, and the running event loop the timer.
    max_batch_pods : int
        Most pods per clearing.
    """

    def __init__(
        self,
        window_s: float,
        clearing_ttl_s: float,
        clear: ClearFn,
        clock: Clock | Callable[[], float],
        max_batch_pods: int = 500,
    ) -> None:
        self.window_s = window_s
        self.clearing_ttl_s = clearing_ttl_s
        self.max_batch_pods = max_batch_pods
        self._clear = clear
        self._clock = as_clock(clock)
        self._pending: dict[str, PendingPod] = {}
        self._table: dict[str, Cleared] = {}
        self._timer: TimerHandle | None = None
        self.last_clearing_s = 0.0

    def submit(self, pod: PendingPod) -> None:
        """Add a pod to the pending set (starting the window timer if none runs).

        A pod that already has a fresh row is left alone; a pod already pending is replaced
        (its candidate set may have become known).
        """
        if self.row(pod.key, pod.uid) is not None:
            return
        self._pending[pod.key] = pod
        if self._timer is None:
            self._timer = self._clock.call_later(self.window_s, self._on_window)

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

    def pending(self, key: str) -> PendingPod | None:
        """The pod if it waits for a clearing."""
        return self._pending.get(key)

    def waiting(self, key: str, uid: str | None = None) -> bool:
        """Whether the pod waits for a clearing; with ``uid``, not when the pod pending under
        ``key`` is another one of the same name (deleted and created again)."""
        pod = self._pending.get(key)
        return pod is not None and (uid is None or pod.uid is None or pod.uid == uid)

    def forget(self, key: str) -> None:
        """Drop a pod from the pending set and the table (it was bound or deleted)."""
        self._pending.pop(key, None)
        self._table.pop(key, None)

    def clear_for(self, key: str, uid: str | None = None) -> Cleared | None:
        """The pod's row, clearing its batch now if it is still pending (kube-scheduler asks)."""
        row = self.row(key, uid)
        if row is None and key in self._pending:
            self.clear_pending(first=key)
            row = self.row(key, uid)
        return row

    def clear_again(self, row: Cleared, candidates: frozenset[str]) -> Cleared | None:
        """Clear a pod of the table again, now over ``candidates``, and return its new row:
        kube-scheduler no longer offers the node ``row`` cleared it onto (an in-tree filter,
        the floor's taint or ``/filter`` removed it since, or the pod came back for another
        cycle), so scores from ``row`` would rank what is left without the clearing's
        choice among it. ``None`` when the row does not carry its pod (a single-pod score)."""
        if row.source is None:
            return None
        self._table.pop(row.pod, None)
        self._pending[row.pod] = replace(row.source, candidates=candidates)
        return self.clear_for(row.pod, row.uid)

    def clear_pending(self, first: str | None = None) -> list[Cleared]:
        """Clear the pending pods now (``first`` first, then the oldest, ``max_batch_pods`` at
        most); the rest stay pending. Returns the rows made."""
        keys = list(self._pending)
        if first is not None and first in self._pending:
            keys.remove(first)
            keys.insert(0, first)
        batch = [self._pending.pop(k) for k in keys[: self.max_batch_pods]]
        if not self._pending and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not batch:
            return []
        started_s = time.perf_counter()
        try:
            rows = self._clear(batch)
        except Exception:
            log.exception("clearing a batch of %d pods failed; they fall back", len(batch))
            rows = []
        self.last_clearing_s = time.perf_counter() - started_s
        now_s = self._clock()
        stale = [k for k, r in self._table.items() if now_s - r.cleared_at_s > self.clearing_ttl_s]
        for key in stale:
            del self._table[key]
        self._table.update((r.pod, r) for r in rows)
        return rows

    def _on_window(self) -> None:
        self._timer = None
        self.clear_pending()
        if self._pending:  # more than one batch's worth: the rest gets its own window
            self._timer = self._clock.call_later(self.window_s, self._on_window)

    async def close(self) -> None:
        """Stop the window timer (at shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

"""The extender's one clock: a batch window closes at its instant on a clock the caller moves."""

from __future__ import annotations

import numpy as np

from eams.kube.requests import PodRequest
from eams.scheduler.extender.batching import Batcher
from eams.scheduler.extender.clock import ManualClock, WallClock, as_clock
from eams.scheduler.extender.pending import PendingPod
from eams.scheduler.extender.rows import Cleared, Columns


def test_timers_run_in_due_order_each_at_its_own_time_and_a_cancelled_one_never() -> None:
    clock = ManualClock(100.0)
    seen: list[tuple[str, float]] = []
    clock.call_later(0.3, lambda: seen.append(("late", clock())))
    clock.call_later(0.1, lambda: seen.append(("early", clock())))
    cancelled = clock.call_later(0.2, lambda: seen.append(("cancelled", clock())))
    cancelled.cancel()
    assert clock.advance_to(100.25) == 1 and seen == [("early", 100.1)]
    assert clock() == 100.25 and clock.next_due_s() == 100.3
    # a timer set by a callback, due before the target, runs in the same advance
    clock.call_later(0.0, lambda: clock.call_later(0.5, lambda: seen.append(("chained", clock()))))
    assert clock.advance_to(101.0) == 3
    assert seen[1:] == [("late", 100.3), ("chained", 100.75)]
    assert clock.advance_to(50.0) == 0 and clock() == 101.0  # never back


def test_a_plain_callable_becomes_a_wall_clock_and_a_clock_stays_itself() -> None:
    manual = ManualClock(5.0)
    assert as_clock(manual) is manual
    wall = as_clock(lambda: 42.0)
    assert isinstance(wall, WallClock) and wall() == 42.0


def test_the_batch_window_closes_at_its_simulated_instant_without_an_event_loop() -> None:
    # The bench's case: no event loop runs between requests; the window of the first pod closes
    # when the clock passes W after it, with every pod announced by then, stamped at that instant.
    clock = ManualClock(1000.0)
    batches: list[tuple[float, list[str]]] = []

    def clear(batch: list[PendingPod]) -> list[Cleared]:
        batches.append((clock(), [p.key for p in batch]))
        scores = np.array([10], dtype=np.int8)
        return [
            Cleared(p.key, "node-a", 0.0, clock(), False, scores, Columns(["node-a"]))
            for p in batch
        ]

    batcher = Batcher(0.2, 60.0, clear, clock)
    pod = lambda name: PendingPod(f"default/{name}", PodRequest(100, 0), 1.0, "default", None)  # noqa: E731
    batcher.submit(pod("p0"))
    clock.advance_to(1000.15)
    batcher.submit(pod("p1"))
    assert clock.advance_to(1000.19) == 0 and batches == []
    clock.advance_to(1000.5)
    assert batches == [(1000.2, ["default/p0", "default/p1"])]
    assert batcher.row("default/p1").cleared_at_s == 1000.2
    clock.advance_to(1061.0)  # rows age on the same clock: past clearing_ttl_s they are gone
    assert batcher.row("default/p0") is None

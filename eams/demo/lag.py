"""How far the demo's live loop ran behind its schedule, and how far the results allow.

The demo is an experiment in real time on a shared host: a busy machine (another job on both
cores) delays every timer of the run. Five kinds of event have a schedule (:data:`KINDS`):

* ``arrival`` — a pod offered to the emulated kube-scheduler's queue, against its trace arrival
  compressed by the speedup;
* ``tick`` — a power-manager step, against a period after the previous one began (a tick due
  while the previous step was still acting — a soft-off waited for, an outlet switched — is
  due when that step ends: the product's manager acts within its step, on a quiet host as on a
  busy one);
* ``sample`` — an agent's sample, against its period (the interval since its previous sample
  less one period: a skipped sample is a period late);
* ``meter`` — a reading of the PDU (every outlet at once, by the PDU owner's poller), against
  the same period: a reading lost or late leaves a gap in every node's metered power, the
  wall-power check's input, while the agents' samples may keep their time (so one gap is
  enough: :data:`GAP_PERIODS`);
* ``end`` — a pod's end (its node unloaded), against its bind time plus its run time.

Each late time is kept (never negative: early is on time). :meth:`LagLog.summary` gives, per
kind, p50, p95 and the maximum in real seconds and in trace seconds (× the speedup: how much of
the trace's own time the lag stands for), against the margin the results need
(:func:`margin_s`).
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from typing import Any

import numpy as np

from eams.calibrate.wallpower.energy import GAP_FACTOR

KINDS = ("arrival", "tick", "sample", "meter", "end")
"""The scheduled events of a live run (module docstring), in the order they are stated."""
GAP_PERIODS = {"meter": GAP_FACTOR - 1}
"""Kinds also judged by their worst event, in periods late: a meter reading later than this
leaves an interval the wall-power check calls a gap (:data:`GAP_FACTOR` periods) in every
node's metered power, and one such gap widens VT-5 however few the run has, while a p95
never sees two gaps in a run of a hundred readings."""
KIND_WORDS = {
    "arrival": "pod arrivals",
    "tick": "manager ticks",
    "sample": "agent samples",
    "meter": "meter readings",
    "end": "pod ends",
}


def margin_s(period_s: float) -> float:
    """The lag the demo's results allow: one agent period (= the power manager's tick), s.

    Why one period. Every decision the runs compare is taken on the agents' samples, which
    come once a period: the extender scores on the latest sample (its herding guard waits
    three periods after a clearing for a sample that holds the pod), the power manager looks
    once a period and its shortest timer (``wake_after_s``, 0.3 s quick and 0.5 s full) is
    about one period. An event late by less than a period is inside that resolution: the
    same samples are seen, the same tick decides. Later than that, a decision is taken on a
    sample one period older than designed, or a step later than its timer. The energy figures
    are metered at the same period: a pod that ends (its node unloaded) or arrives less than
    a period late moves its energy by less than one meter sample, and the wall-power check
    already treats the window's edges to that resolution. (The phase timeouts allow more, a
    2 s busy-host allowance: :data:`eams.demo.power.HOST_LAG_S`; a transition confirmed late
    is not a decision taken on the wrong figures.)
    """
    return period_s


class LagLog:
    """The late times of one run, by kind (module docstring).

    Thread-safe for :meth:`note` (a list append): the agents note from their own threads.
    """

    def __init__(self) -> None:
        self.late_s: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.step_s: list[float] = []
        """How long each power-manager step took (its observation, decision and actions)."""

    def note(self, kind: str, due_s: float, at_s: float) -> None:
        """An event of ``kind`` due at ``due_s`` happened at ``at_s`` (one clock, s)."""
        self.late_s[kind].append(max(0.0, at_s - due_s))

    def periodic(self, kind: str, times_s: Iterable[float], period_s: float) -> None:
        """Events of ``kind`` meant to come every ``period_s``, at ``times_s`` (in order):
        each is late by its interval from the previous one less the period."""
        for before, after in pairwise(times_s):
            self.note(kind, before + period_s, after)

    def ticks(self, kind: str, steps: Iterable[tuple[float, float]], period_s: float) -> None:
        """Steps of ``kind`` meant to begin every ``period_s``, as (began, ended) in order:
        each is late from a period after the previous one began or, when the previous step
        outlasted its period, from that step's end."""
        steps = list(steps)
        self.step_s.extend(ended - began for began, ended in steps)
        for (began, ended), (after, _) in pairwise(steps):
            self.note(kind, max(began + period_s, ended), after)

    def summary(self, margin: float, speedup: float) -> dict[str, Any]:
        """Per kind, ``n`` and p50, p95 and max late, in s and trace s; ``margin_s``;
        ``exceeded`` (a kind whose p95 is over the margin, or whose max is over
        :data:`GAP_PERIODS` margins: the margin is one period, :func:`margin_s`) and
        ``exceeded_kinds``; ``worst`` (the kind of the largest p95) and its p95 and max."""
        out: dict[str, Any] = {"margin_s": margin}
        over = []
        for kind in KINDS:
            values = np.array(self.late_s[kind], dtype=float)
            if values.size == 0:
                out[kind] = {"n": 0, "p50_s": None, "p95_s": None, "max_s": None}
                continue
            p50, p95, top = (float(v) for v in np.percentile(values, [50, 95, 100]))
            out[kind] = {
                "n": int(values.size),
                "p50_s": p50,
                "p95_s": p95,
                "max_s": top,
                "p50_trace_s": p50 * speedup,
                "p95_trace_s": p95 * speedup,
                "max_trace_s": top * speedup,
            }
            if p95 > margin or top > GAP_PERIODS.get(kind, math.inf) * margin:
                over.append(kind)
        if self.step_s:
            out["tick"]["step_p50_s"], out["tick"]["step_p95_s"] = (
                float(v) for v in np.percentile(self.step_s, [50, 95])
            )
        seen = [k for k in KINDS if out[k]["n"]]
        out["exceeded"] = bool(over)
        out["exceeded_kinds"] = over
        out["p95_s"] = max((out[k]["p95_s"] for k in seen), default=0.0)
        out["max_s"] = max((out[k]["max_s"] for k in seen), default=0.0)
        return out


def lag_line(lag: dict[str, Any]) -> str:
    """One run's lag in words: p95 and max per kind, against the margin (the terminal)."""
    parts = []
    for kind in KINDS:
        k = lag.get(kind, {})
        if k.get("n"):
            parts.append(f"{KIND_WORDS[kind]} p95 {k['p95_s']:.3f} s (max {k['max_s']:.3f})")
    verdict = (
        f"EXCEEDED by {', '.join(KIND_WORDS[k] for k in lag['exceeded_kinds'])}: a busy host "
        "distorted this run"
        if lag["exceeded"]
        else "within"
    )
    return f"late: {'; '.join(parts)}; margin {lag['margin_s']:g} s: {verdict}"


def lag_sentence(runs: dict[str, dict[str, Any]]) -> str:
    """The report's sentence on the live loop's lag over a band's runs (label → summary)."""
    runs = {label: lag for label, lag in runs.items() if lag}
    if not runs:
        return ""
    worst = max(runs, key=lambda label: runs[label]["max_s"])
    p95 = max(r["p95_s"] for r in runs.values())
    margin = next(iter(runs.values()))["margin_s"]
    over = [label for label, r in runs.items() if r["exceeded"]]
    head = (
        "The live loop (pod arrivals, power-manager ticks, agent samples, meter readings, pod "
        f"ends) ran late by at most {runs[worst]['max_s']:.2f} s (run {worst}; p95 at most "
        f"{p95:.3f} s); the results need ≤ {margin:g} s at p95 (one agent period, the "
        "resolution every decision and energy figure is taken at)"
    )
    if not over:
        return f"{head}: every run stayed within it."
    kinds = sorted({k for label in over for k in runs[label]["exceeded_kinds"]}, key=KINDS.index)
    which = f"run {over[0]}" if len(over) == 1 else f"runs {', '.join(over)}"
    them, their = ("it", "its") if len(over) == 1 else ("them", "their")
    return (
        f"{head}: {which} exceeded it ({', '.join(KIND_WORDS[k] for k in kinds)}) — a busy "
        f"host distorted {them}: {their} figures are less certain than stated."
    )


async def every(
    period_s: float,
    step: Callable[[], Awaitable[None]],
    on_step: Callable[[float, float], None] = lambda began, ended: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Await ``step()`` every ``period_s`` on a deadline grid, until cancelled.

    Tick *k* is due at ``start + k × period_s``: the wait before it is what is left of the
    period after the step and any late wake-up, so lateness does not accumulate (a
    ``sleep(period_s)`` after each step adds the step's time and every late wake-up to every
    later tick). A tick that comes after its successor's due time (a long step, a host that
    gave no CPU) runs once, at once, for all the ticks it missed, and the grid goes on from
    its last missed point: the ticker catches up to its schedule instead of drifting from it,
    and never runs a burst of stale ticks. ``on_step`` gets each step's begin and end (of
    ``clock``; :meth:`LagLog.ticks`).
    """
    due = clock()
    while True:
        began = clock()
        await step()
        ended = clock()
        on_step(began, ended)
        due = next_due(due, period_s, ended)
        await sleep(max(0.0, due - clock()))


def next_due(due_s: float, period_s: float, now_s: float) -> float:
    """The tick after the one due at ``due_s``, when it ran by ``now_s``: ``due_s + period_s``,
    or, if that has passed, the last grid point not after ``now_s`` (missed ticks merge into
    one, run now; the grid is kept)."""
    following = due_s + period_s
    if following >= now_s:
        return following
    return due_s + period_s * math.floor((now_s - due_s) / period_s)


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Collect garbage now, then keep every object made so far out of the collector's way
    until the block ends (:func:`gc.freeze`; :func:`gc.unfreeze` after).

    Why: the demo's process holds a large long-lived heap by the time a run starts (the PDU
    simulator's and the SNMP clients' MIB objects, the extender, the agents, numpy and
    pydantic models), and the run allocates fast (SNMP messages, samples, JSON). Each
    full (generation-2) collection then walks the whole heap with the GIL held: 0.1–0.35 s
    on a quiet 2-core host, several times that with both cores busy — every agent, the
    manager's ticker and the scheduling loop stop together, and a sample is skipped or a tick
    runs late by a period or more. Frozen, the old heap is not walked: a full collection
    during the run sees only the run's own objects. The collection before the block is
    outside the run's window.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()

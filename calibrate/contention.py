"""Is other work competing with a sweep's load? (issue 16, item 6)

A node's speed s_n (study §5.1) is stress-ng's bogo-ops/s at full load over the reference's,
and it goes straight into the bids. Beside other work it comes out low: a sweep next to a
one-core busy loop measured 1,842 bogo-ops/s against 3,312–3,422 quiet and wrote speed 0.54
instead of 0.97. Three signs, each measured by the sweep itself:

- **Idle utilisation**: the node's ``/proc/stat`` utilisation at the idle level, before any
  load is started, above :data:`IDLE_BUSY_MAX` (the active-idle limit of the calibration
  file): other work is running.
- **The load's CPU share at full load**: stress-ng's usr + sys time over the CPU time its
  workers asked for (:func:`eams.calibrate.stressng.load_cpu_share`), below
  :data:`LOAD_SHARE_MIN`: something else took the rest, and the bogo-ops/s are low by about as
  much. It is measured over the very run that gives the speed, so a busy spell that starts
  after the idle level shows too. (A spread of the rate across repeated runs would miss a
  steady competitor, which slows every repeat alike.)
- **Steal**: the share of CPU time the hypervisor gave other guests during a level's
  measurement (``/proc/stat``, :func:`eams.procstat.steal_between`), above :data:`STEAL_MAX`.

A sweep with any sign is refused by default, right after the level that shows it (the idle
level comes first, so a busy node is refused within a couple of minutes, not after the whole
sweep); ``SweepPlan.allow_contention`` (``--allow-contention``) keeps it, and the calibration
file records the figures and findings, which ``eams calibrate show`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eams.calibrate.calfile import ACTIVE_IDLE_MAX_UTILISATION
from eams.calibrate.sweeprecord import Contention

IDLE_BUSY_MAX = ACTIVE_IDLE_MAX_UTILISATION
"""Utilisation at the idle level above which other work is running (fraction)."""
LOAD_SHARE_MIN = 0.90
"""A worker at 100 % is a pure CPU loop, so on an otherwise idle node its CPU time is its run
time but for start-up (share ≈ 1); below this share something else ran on its CPUs. (On this
shared 2-core machine: 0.84 at load average 2.8, 0.60 beside a one-core busy loop, 0.17 at
load 7–9.)"""
STEAL_MAX = 0.05
"""Share of CPU time stolen by the hypervisor above which the node's CPUs were not its own."""
OVERRIDE = (
    "stop that work and sweep again, or pass --allow-contention to keep this sweep (the "
    "calibration file then records the contention and `eams calibrate show` flags it)"
)


@dataclass(slots=True)
class ContentionWatch:
    """Collects the signs level by level (see the module doc)."""

    idle_utilisation: float | None = None
    full_load_cpu_share: float | None = None
    full_load_bogo_ops_per_s: float | None = None
    steal: dict[int, float] = field(default_factory=dict)

    def add(
        self,
        commanded_pct: int,
        utilisation: float | None,
        steal: float | None,
        load_cpu_share: float | None,
        bogo_ops_per_s: float | None,
    ) -> None:
        """Record one level's measured utilisation, steal and load share (fractions) and its
        bogo-ops/s; ``None`` where not measured."""
        if commanded_pct == 0 and utilisation is not None:
            self.idle_utilisation = utilisation
        if commanded_pct == 100:
            self.full_load_cpu_share = load_cpu_share
            self.full_load_bogo_ops_per_s = bogo_ops_per_s
        if steal is not None:
            self.steal[commanded_pct] = steal

    def findings(self) -> list[str]:
        """One sentence per sign beyond its limit, with the figures; empty when none is."""
        out = []
        u = self.idle_utilisation
        if u is not None and u > IDLE_BUSY_MAX:
            out.append(
                f"the node was {u * 100:.0f} % busy at the idle level, before any load was "
                f"started (idle is at most {IDLE_BUSY_MAX * 100:.0f} %)"
            )
        share = self.full_load_cpu_share
        if share is not None and share < LOAD_SHARE_MIN:
            rate = self.full_load_bogo_ops_per_s
            out.append(
                f"stress-ng's workers got {share * 100:.0f} % of the CPU time they asked for at "
                f"full load ({'?' if rate is None else f'{rate:,.0f}'} bogo-ops/s; on an idle "
                f"node at least {LOAD_SHARE_MIN * 100:.0f} %), so the speed is low by about "
                "as much"
            )
        stolen = {pct: s for pct, s in self.steal.items() if s > STEAL_MAX}
        if stolen:
            pct, worst = max(stolen.items(), key=lambda kv: kv[1])
            out.append(
                f"the hypervisor stole {worst * 100:.0f} % of the CPU time at the {pct} % level "
                f"(limit {STEAL_MAX * 100:.0f} %)"
            )
        return out

    def summary(self) -> Contention:
        """The figures and findings for the sweep record."""
        return Contention(
            idle_utilisation=self.idle_utilisation,
            full_load_cpu_share=self.full_load_cpu_share,
            steal_max=max(self.steal.values(), default=None),
            findings=self.findings(),
        )


def refusal(findings: list[str]) -> str:
    """The error of a sweep refused for contention: the findings and how to override."""
    return (
        f"contention: {'; '.join(findings)}. Other work competes with the load, so the speed "
        f"(which goes into the bids) and the idle power would be wrong; {OVERRIDE}"
    )

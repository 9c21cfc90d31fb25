"""Demo stage 4: the VT-5 wall-power check of the live runs, the report's answer, the summary.

For each band, three checks at the wall against the ``default`` run: ``default+pm`` (what the
power manager alone saves), ``eams+pm-mgr`` (EAMS's placement, the manager deciding the wakes)
and ``eams+pm`` (EAMS's placement, its market deciding the wakes; the VT-5 check of record).
The saving of ``eams+pm`` splits into three shares, each the difference of two measured runs
(:func:`shares`): the power manager's, the placement's and the market wakes'. The report of the
demo's band (the first) opens with the answer in words (:func:`answer`), links the three
placements that saved the most energy to the decision record, and its
``wallpower_summary.json`` adds ``rho``, ``power_transitions`` (sleeps and wakes per run), the
shares, the market's wakes (:func:`market_wakes`), the share of placements the market cleared,
the extender's answers and the other bands' figures (its repeats after the first, other offered
loads). The answer of a band's first repeat is over all its repeats (:mod:`eams.demo.spread`);
each other repeat's report answers for its own runs. Every band's report is written
(``report/`` for the first, ``report/rho-…`` for the others).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from eams.calibrate.wallpower import check_runs, load_fleet, load_run, write_report
from eams.calibrate.wallpower.check import SavingCheck
from eams.calibrate.wallpower.cli import summary_lines
from eams.calibrate.wallpower.errors import WallPowerError
from eams.calibrate.wallpower.plots import PowerMark
from eams.calibrate.wallpower.report import (
    HTML_NAME,
    NOT_RESOLVED,
    About,
    render_text_page,
    shown_verdict,
)
from eams.demo.lag import lag_sentence
from eams.demo.live import CLOCK
from eams.demo.power import failure_text
from eams.demo.record import Saved, market_share
from eams.demo.runs import Band
from eams.demo.sleeps import sleeps_text, slept, wake_energies
from eams.demo.spread import K_SIGMA, basis_text, over_runs
from eams.scheduler.power.policy_plan import Reason
from eams.scheduler.record import Bound, Power, Query, Wake, read_records
from eams.scheduler.record.explain import explain_pod, render_pod

ACCURACY_PCT = 3.0
"""The simulated PDU is an APC rPDU2: ±3 % of reading (Schneider FAQ FA156074)."""
SETUP = (
    "simulated: no hardware was metered. The PDU is EAMS's PDU simulator (an APC rPDU2 "
    "imitation served over SNMP on loopback, read by the real APC driver and agents; its "
    "outlets switched by SNMP SET) and the six nodes are virtual, their power following hidden "
    "curves ({fleet}) as the live-placed pods load them. The power manager puts a node to sleep "
    "by soft-off and outlet off and wakes it by outlet on; the sleep figures it and the "
    "extender's wake prices use were measured in the calibration stage (soft-off, outlet off "
    "and on, three repeats each, through the same meter) on the testbed's {power}"
)
"""What the demo's report says was measured."""
MARKET_REASON = str(Reason.MARKET)
"""The power record's reason of a wake the market asked for (``market-bid``)."""


def sd_of(parts: dict[str, float]) -> float:
    """Total standard uncertainty (fraction) of a saving from its components (1σ each)."""
    return math.sqrt(sum(v * v for v in parts.values()))


RUN_NAMES = {
    "default": "the default scheduler alone",
    "default+pm": "the default scheduler with the power manager",
    "eams+pm-mgr": "EAMS's placement with the power manager deciding the wakes",
    "eams+pm": "EAMS's placement with the market deciding the wakes",
}
"""How the answer names each run."""


def measured(checks: dict[str, SavingCheck]) -> dict[str, tuple[float, float]]:
    """Per run label other than ``default``: (metered saving against default, its 1σ), both
    fractions, from one repeat's checks."""
    return {label: (c.saving_metered, sd_of(c.sd_metered)) for label, c in checks.items()}


def savings(per_repeat: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """Each run's saving against ``default`` over the band's repeats (``per_repeat``:
    :func:`measured` of each), as (saving, ±) fractions by label
    (:func:`~eams.demo.spread.over_runs`)."""
    return {
        label: over_runs([r[label][0] for r in per_repeat], [r[label][1] for r in per_repeat])
        for label in per_repeat[0]
    }


SHARES = {
    "power_manager": ("default+pm", None),
    "placement": ("eams+pm-mgr", "default+pm"),
    "market_wakes": ("eams+pm", "eams+pm-mgr"),
}
"""Each share of eams+pm's saving: (run, the run it is measured from; ``None``: default)."""


def shares(per_repeat: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """What each part accounts for of ``eams+pm``'s saving against ``default``, in points of
    the default run's energy per unit of work, each the difference of two measured runs of
    the same trace (:data:`SHARES`): ``power_manager`` = default+pm − default, ``placement`` =
    eams+pm-mgr − default+pm (EAMS's placement, the same manager deciding the wakes),
    ``market_wakes`` = eams+pm − eams+pm-mgr (the same placement, the market deciding the
    wakes). They add up to eams+pm's saving. ``per_repeat``: :func:`measured` of each repeat.
    Per share (points, ± points), each repeat's difference taken within that repeat, its 1σ
    the two savings' 1σ in quadrature (an upper bound: both share the default run's
    uncertainty), combined over the repeats by :func:`~eams.demo.spread.over_runs`.
    """
    out = {}
    for key, (run, base) in SHARES.items():
        values = [r[run][0] - (r[base][0] if base else 0.0) for r in per_repeat]
        sds = [math.hypot(r[run][1], r[base][1] if base else 0.0) for r in per_repeat]
        value, plus_minus = over_runs(values, sds)
        out[key] = (value * 100, plus_minus * 100)
    return out


def shares_text(parts: dict[str, tuple[float, float]]) -> str:
    """The shares of :func:`shares` in one sentence."""

    def one(key: str) -> str:
        value, plus_minus = parts[key]
        return f"{value:+.1f} ± {plus_minus:.1f}"

    return (
        f"Of that saving the power manager alone accounts for {one('power_manager')} points, "
        f"EAMS's placement for {one('placement')} and the market's wakes for "
        f"{one('market_wakes')} (each the difference of two runs: default+pm − default, "
        "eams+pm-mgr − default+pm, eams+pm − eams+pm-mgr)."
    )


def headline(per_repeat: list[dict[str, tuple[float, float]]], rho: float) -> str:
    """The report's and the terminal's first sentence: which run used the least energy per
    unit of work at the wall, by how much against the default scheduler, and the others
    beside it — whichever run that is, EAMS's or not.

    Parameters
    ----------
    per_repeat : list of dict of str to (float, float), one per repeat
        :func:`measured` of each repeat: per run label other than ``default``
        (:data:`RUN_NAMES`' order), the metered saving against ``default`` (fraction; > 0 less
        energy) and its 1σ. Each figure is :func:`savings`'; the gap to the next best is the
        difference taken within each repeat, combined as the shares are.
    rho : float
    """
    figures = {label: (v * 100, pm * 100) for label, (v, pm) in savings(per_repeat).items()}
    best = max(figures, key=lambda label: figures[label][0])

    def against_default(value: float, plus_minus: float) -> str:
        word = "less" if value >= 0 else "more"
        clear = "" if abs(value) > plus_minus else ", not distinguishable from none"
        return (
            f"{abs(value):.1f} % {word} than the default scheduler alone (±{plus_minus:.1f}{clear})"
        )

    where = (
        f"At the wall, while the pods arrived (offered load ρ = {rho:g}; "
        f"{basis_text(len(per_repeat))}), "
    )
    if figures[best][0] <= 0:
        others = "; ".join(f"{RUN_NAMES[k]} {against_default(*v)}" for k, v in figures.items())
        return f"{where}{RUN_NAMES['default']} used the least energy per unit of work: {others}."
    rest = {k: v for k, v in figures.items() if k != best}
    second = max(rest, key=lambda label: rest[label][0])
    gap, gap_pm = over_runs(
        [(r[best][0] - r[second][0]) * 100 for r in per_repeat],
        [math.hypot(r[best][1], r[second][1]) * 100 for r in per_repeat],  # an upper bound
    )
    close = " (within the uncertainty)" if gap <= gap_pm else ""
    others = "; ".join(f"{RUN_NAMES[k]}: {against_default(*v)}" for k, v in rest.items())
    return (
        f"{where}{RUN_NAMES[best]} used the least energy per unit of work: "
        f"{against_default(*figures[best])}; {others}; the next best {gap:.1f} points "
        f"behind{close}."
    )


def placement_note(
    parts: dict[str, tuple[float, float]], band: Band, share: dict[str, int], repeats: int = 1
) -> str | None:
    """Why the placement's share is negative, in the figures that bear on it; ``None`` when it
    is not (or not beyond its ±). ``band``: the first of the ``repeats`` the share is over
    (its counts are named as that repeat's when there are several)."""
    value, plus_minus = parts["placement"]
    if value >= 0:
        return None
    if -value <= plus_minus:
        return (
            f"EAMS's placement share ({value:+.1f} points) is within its uncertainty "
            f"(±{plus_minus:.1f}): not distinguishable from none."
        )
    pm, mgr = band.run("default+pm"), band.run("eams+pm-mgr")
    return (
        f"EAMS's placement cost {-value:.1f} points against the same power manager with the "
        f"default scheduler. What bears on it{'' if repeats == 1 else ', in repeat 1'}: the "
        f"market cleared {cleared_text(share)}; "
        "the others were placed by kube-scheduler's own scores; and the manager slept and woke "
        f"around each placement differently (default+pm {pm.transitions.get('sleep', 0)} sleeps "
        f"and {pm.transitions.get('wake', 0)} wakes, eams+pm-mgr "
        f"{mgr.transitions.get('sleep', 0)} and {mgr.transitions.get('wake', 0)}), which "
        "decides most of a run's energy here."
    )


def per_repeat_text(per_repeat: list[dict[str, tuple[float, float]]]) -> str | None:
    """Each run's saving in each repeat, in one sentence; ``None`` for one repeat."""
    if len(per_repeat) == 1:
        return None
    runs = "; ".join(
        f"{label} " + " / ".join(f"{r[label][0] * 100:.1f}" for r in per_repeat) + " %"
        for label in per_repeat[0]
    )
    return (
        f"Repeat by repeat, against the default run of the same repeat: {runs}. The runs table "
        "and the wall-power check below are repeat 1's; each other repeat has its own report."
    )


def vt5_text(per_repeat: list[SavingCheck]) -> str:
    """Whether the model agreed on ``eams+pm`` (VT-5), in each repeat."""

    def figures(check: SavingCheck) -> str:
        return (
            f"modelled saving {check.saving_modelled * 100:.1f} %, difference "
            f"{check.difference_pts:+.1f} ± {K_SIGMA * check.sd_difference_pts:.1f} points"
        )

    if len(per_repeat) > 1:
        verdicts = [shown_verdict(c) for c in per_repeat]
        counts = ", ".join(f"{v} in {verdicts.count(v)}" for v in dict.fromkeys(verdicts))
        each = "; ".join(
            f"repeat {i}: {v}, {figures(c)}"
            for i, (v, c) in enumerate(zip(verdicts, per_repeat, strict=True), start=1)
        )
        return f"VT-5 on eams+pm: {counts} of the {len(per_repeat)} repeats ({each})."
    full = per_repeat[0]
    shown = shown_verdict(full)
    if shown == NOT_RESOLVED:
        return (
            f"Whether the model agreed on eams+pm cannot be told (VT-5 {shown}: {figures(full)})."
        )
    if full.passed:
        loss = " — on a loss" if full.saving_metered < 0 else ""
        return f"The model agreed on eams+pm (VT-5 PASS{loss}: {figures(full)})."
    return f"The model did not agree on eams+pm (VT-5 FAIL: {figures(full)})."


def answer(
    per_repeat: list[dict[str, SavingCheck]],
    rho: float,
    note: str | None = None,
    sleeps: str | None = None,
) -> str:
    """The report's first sentences: :func:`headline` (which run did best, and by how much
    against default at the wall), the shares (:func:`shares_text`), ``note`` (why the
    placement's share is negative, :func:`placement_note`), each repeat's savings
    (:func:`per_repeat_text`), ``sleeps`` (the nodes slept in some repeats only,
    :func:`~eams.demo.sleeps.sleeps_text`), then VT-5 (the model's agreement on ``eams+pm``,
    :func:`vt5_text`).

    Parameters
    ----------
    per_repeat : list of dict of str to SavingCheck, one per repeat of the band
        Per run label other than ``default``: its check against that repeat's ``default``.
    rho : float
    note, sleeps : str or None
    """
    each = [measured(checks) for checks in per_repeat]
    text = f"{headline(each, rho)} {shares_text(shares(each))}"
    for extra in (note, per_repeat_text(each), sleeps):
        if extra:
            text += f" {extra}"
    return f"{text} {vt5_text([checks['eams+pm'] for checks in per_repeat])}"


def _checks(band: Band, calibrations_dir: Path) -> dict[str, SavingCheck]:
    """Each run but ``default`` checked against ``default`` at the wall, by label, on the
    band's own calibration files (``calibrations_dir``: the calibration stage's)."""
    fleet = load_fleet(band.calibration_dir(calibrations_dir))
    runs = {r.label: load_run(r.spec, r.label) for r in band.runs}
    return {
        label: check_runs(runs["default"], run, fleet, accuracy_pct=ACCURACY_PCT)
        for label, run in runs.items()
        if label != "default"
    }


def run_figures(band: Band, checks: dict[str, SavingCheck]) -> dict[str, dict[str, Any]]:
    """Each run's figures, by label, as the terminal, the report and the JSON summary state
    them: work (reference core-s), wall and modelled energy (Wh), energy per unit of work
    (J/core-s) and p95 completion (s), all in :data:`~eams.demo.live.CLOCK`; sleeps, wakes."""
    checked = {c.b.label: c.b for c in checks.values()}
    checked["default"] = checks["eams+pm"].a
    out = {}
    for run in band.runs:
        r = checked[run.label]
        assert r.work_core_s is not None, "the demo states every run's work"
        out[run.label] = {
            "work_core_s": r.work_core_s,
            "metered_wh": r.metered_wh,
            "modelled_wh": r.modelled_wh,
            "metered_j_per_core_s": r.metered_wh * 3600 / r.work_core_s,
            "modelled_j_per_core_s": r.modelled_wh * 3600 / r.work_core_s,
            "p95_completion_s": (
                float(np.percentile(run.completion_s, 95)) if run.completion_s.size else None
            ),
            "sleeps": run.transitions.get("sleep", 0),
            "wakes": run.transitions.get("wake", 0),
        }
    return out


RUN_COLUMNS = (
    ("work_core_s", "work\ncore-s", "{:.1f}"),
    ("metered_wh", "wall\nWh", "{:.2f}"),
    ("metered_j_per_core_s", "J/core-s\nmetered", "{:.1f}"),
    ("modelled_j_per_core_s", "J/core-s\nmodelled", "{:.1f}"),
    ("p95_completion_s", "p95\ncompletion s", "{:.1f}"),
)
"""(key of :func:`run_figures`, header, format) of the runs table, terminal and report."""


def clock_note(speedup: float) -> str:
    """The one sentence that names the clock of every figure (terminal, report, JSON)."""
    return (
        f"Work, J/core-s and completion times are in {CLOCK}: the trace was played "
        f"{speedup:.2f}× faster at the same power, so a pod's core-seconds and its completion "
        "are its compressed ones, on the clock the energy was metered on."
    )


def window_note(band: Band) -> str:
    """The sentence that names the window every energy and work figure is taken over."""
    windows = _span([r.window_s for r in band.runs])
    lengths = _span([r.run_s for r in band.runs])
    return (
        "Energy and work are taken over the arrival window, first to last arrival, closed once "
        f"no node was in transition ({windows} s; the whole runs lasted {lengths} s): there "
        "the offered load ρ holds. After "
        "it the cluster drains at a load that tends to 0, and a run lasts until its last pod "
        "ends, a timing one placement on a slow node decides; the benchmark's AR-3 figure is "
        "taken over the same window."
    )


def _span(values: list[float]) -> str:
    low, high = f"{min(values):.1f}", f"{max(values):.1f}"
    return low if low == high else f"{low}–{high}"


def _cells(figures: dict[str, Any]) -> list[str]:
    return [
        "—" if figures[key] is None else fmt.format(figures[key]) for key, _, fmt in RUN_COLUMNS
    ] + [f"{figures['sleeps']}/{figures['wakes']}"]


def _figures(
    band: Band, per_repeat: list[dict[str, SavingCheck]], record_root: Path
) -> dict[str, Any]:
    """The band's figures for its summary; ``per_repeat``: the checks its answer is over, the
    band's own first (one entry for a band reported alone)."""
    checks = per_repeat[0]
    eams = band.run("eams+pm")
    runs = run_figures(band, checks)
    each = [measured(c) for c in per_repeat]
    over = savings(each)
    parts = shares(each)
    share = market_share(record_root / band.name / "eams+pm")
    return {
        "rho": band.rho,
        "repeat": band.repeat,
        "repeats": band.repeats,
        "answer_over_repeats": len(per_repeat),
        "uncertainty": basis_text(len(per_repeat)),
        "speedup": band.speedup,
        "clock": CLOCK,
        "window_s": {r.label: r.window_s for r in band.runs},
        "run_s": {r.label: r.run_s for r in band.runs},
        "window_explained": window_note(band),
        "run_figures": runs,
        "power_transitions": {r.label: dict(r.transitions) for r in band.runs},
        "power_suspect_nodes": {r.label: list(r.suspect_nodes) for r in band.runs},
        "lag": {r.label: r.lag for r in band.runs},
        "lag_explained": lag_sentence({r.label: r.lag for r in band.runs}),
        "saving_power_manager": parts["power_manager"][0] / 100,
        "savings": {
            label: {
                "saving_metered": v,
                "plus_minus": pm,
                "per_repeat": [r[label][0] for r in each],
            }
            for label, (v, pm) in over.items()
        },
        "shares_pts": {
            key: {"points": v, "plus_minus_points": pm} for key, (v, pm) in parts.items()
        },
        "shares_explained": shares_text(parts),
        "placement_note": placement_note(parts, band, share, len(per_repeat)),
        "saving_placement": parts["placement"][0] / 100,
        "saving_market_wakes": parts["market_wakes"][0] / 100,
        "vt5_per_repeat": [shown_verdict(c["eams+pm"]) for c in per_repeat],
        "market_wakes": market_wakes(band, record_root),
        "market": share,
        "p95_completion_s": {label: f["p95_completion_s"] for label, f in runs.items()},
        "extender": {
            "pods": len(eams.binds),
            "cycles": eams.cycles,
            "prioritize_calls": eams.prioritize_calls,
            "prioritize_answered": eams.extender_prioritize,
            "unscored_binds": eams.unscored_binds,
            "unanswered_pods": eams.unanswered,
            "call_errors": eams.call_errors,
            "decisions": len(eams.decisions),
            "bound_to_highest_score": sum(
                1 for d in eams.decisions if d.scores[d.node] == max(d.scores.values())
            ),
        },
    }


def check_and_report(
    console: Console,
    bands: list[Band],
    report_dir: Path,
    calibrations_dir: Path,
    *,
    fleet: str,
    power: str,
    saved: list[Saved],
    record_dir: Path,
) -> SavingCheck:
    """Check every band at the wall, write the reports, print the summary.

    Parameters
    ----------
    console : Console
    bands : list of Band
        The demo's band first.
    report_dir, calibrations_dir : Path
    fleet, power : str
        Where the hidden curves came from; the hidden sleep figures the measurement found.
    saved : list of Saved
        The demo band's three placements that saved the most energy.
    record_dir : Path
        The demo band's ``eams+pm`` record folder.

    Returns
    -------
    SavingCheck
        The demo band's ``eams+pm`` check.
    """
    record_root = record_dir.parent.parent
    results = [(band, _checks(band, calibrations_dir)) for band in bands]
    repeats_of: dict[float, list[dict[str, SavingCheck]]] = {}
    for band, checks in results:
        repeats_of.setdefault(band.rho, []).append(checks)

    def over(band: Band, checks: dict[str, SavingCheck]) -> list[dict[str, SavingCheck]]:
        """What a band's answer is over: every repeat from its first's report, else its own."""
        return repeats_of[band.rho] if band.repeat == 1 else [checks]

    marks = {band.name: power_marks(band, record_root) for band in bands}  # each record once

    def sleeps_of(band: Band) -> str | None:
        """On a first repeat's report: the nodes its runs' managers slept in some repeats of
        its offered load and not in others (:func:`sleeps_text`)."""
        if band.repeat != 1:
            return None
        group = [b for b in bands if b.rho == band.rho]
        return sleeps_text(
            [slept(marks[b.name]) for b in group],
            [wake_energies(b.calibration_dir(calibrations_dir)) for b in group],
        )

    figures = {  # read once per band: its records, its market's wakes
        band.name: _figures(band, over(band, checks), record_root)
        | {"sleeps_explained": sleeps_of(band)}
        for band, checks in results
    }
    main_band, main_checks = results[0]
    main = main_checks["eams+pm"]
    others = {
        band.name: {
            "saving_metered": checks["eams+pm"].saving_metered,
            "sd_metered": sd_of(checks["eams+pm"].sd_metered),
            "passed": checks["eams+pm"].passed,
            "resolvable": checks["eams+pm"].resolvable,
            **figures[band.name],
        }
        for band, checks in results[1:]
    }
    links = [
        (
            f"{s.pod} on {s.node} instead of {s.default_node} (LeastAllocated's choice): "
            f"{s.saved_wh * 1000:.2f} mWh less on the calibrated line — "
            f"eams explain demo/{s.pod} --record {record_dir}",
            _relative(decision_page(record_dir, report_dir, s.pod), report_dir),
        )
        for s in saved
    ]
    example = None if saved else _example_pod(record_dir)
    if example is not None:
        links = [
            (
                "No placement used less energy on its node's calibrated line than "
                "LeastAllocated's choice would have: the saving is the nodes the consolidation "
                f"let sleep (the sleeps and wakes below) — one decision, {example}: eams explain "
                f"demo/{example} --record {record_dir}",
                _relative(decision_page(record_dir, report_dir, example), report_dir),
            )
        ]
    others_html = other_reports(bands, report_dir)
    see_also = [
        (
            f"{band.title}, the same four runs: eams+pm "
            f"{checks['eams+pm'].saving_metered * 100:.1f} % ± "
            f"{K_SIGMA * sd_of(checks['eams+pm'].sd_metered) * 100:.1f} (2σ, that run's "
            f"measurement) against default at the wall, VT-5 {shown_verdict(checks['eams+pm'])}",
            _relative(path, report_dir),
        )
        for (band, checks), path in zip(results[1:], others_html, strict=True)
    ]
    for i, (band, checks) in enumerate(results):
        folder = report_dir if i == 0 else report_dir / band.name
        full = checks["eams+pm"]
        extra = figures[band.name] | {"sd_metered_total": sd_of(full.sd_metered)}
        extra["cycles_explained"] = cycles_text(band)
        if i == 0:
            extra |= {"bands": others, "record": str(record_dir)}
            extra["decisions_saved_most"] = [s.__dict__ for s in saved]
        html, summary = write_report(
            full,
            folder,
            title="eams demo — VT-5 wall-power check",
            note=(
                f"{window_note(band)} {clock_note(band.speedup)} {cycles_text(band)} "
                f"{extra['lag_explained']}"
            ),
            overview=_overview(band, checks),
            alerts=power_alerts(band),
            about=About(
                setup=SETUP.format(fleet=fleet, power=power) + remeasured(band, calibrations_dir),
                workload=f"placed live four times: {band.source}",
            ),
            answer=answer(
                over(band, checks), band.rho, extra["placement_note"], extra["sleeps_explained"]
            ),
            links=links if i == 0 else (),
            links_intro=(
                f"{of_repeat(band)}{market_text(extra['market'])} "
                f"{wakes_text(extra['market_wakes'])}" if i == 0 else None
            ),
            marks=marks[band.name],
            see_also=see_also if i == 0 else back_to_main(band, report_dir, folder),
            extra=extra,
        )  # fmt: skip
        _print_band(console, band, checks)
        if i == 0:
            main_paths = (html, summary)
            main_extra = extra
    colour = "green" if main.passed and main.resolvable and main.saving_metered > 0 else "red"
    console.print(
        answer(over(main_band, main_checks), main_band.rho, main_extra["placement_note"],
               main_extra["sleeps_explained"]),
        soft_wrap=False, markup=False,
    )  # fmt: skip
    console.print(f"{of_repeat(main_band)}{market_text(main_extra['market'])} "
                  f"{wakes_text(main_extra['market_wakes'])}",
                  soft_wrap=False, markup=False)  # fmt: skip
    lines = summary_lines(main)
    if main_band.repeats > 1:
        console.print(f"The wall-power check of {main_band.title}, in detail:", markup=False)
    console.print(f"[bold {colour}]{lines[0]}[/]")
    for line in lines[1:]:
        console.print(line, markup=False)
    console.print(
        paths_text(main_paths[0], main_paths[1], record_dir,
                   [(band.title, path) for band, path in zip(bands[1:], others_html, strict=True)]),
        soft_wrap=True,
        markup=False,
    )  # fmt: skip
    return main


def remeasured(band: Band, calibrations_dir: Path) -> str:
    """What a repeat's report adds to :data:`SETUP`: from the second repeat on, the power
    states were measured again, and where; nothing for the first."""
    if band.repeat == 1:
        return ""
    return (
        f"; for this repeat ({band.title}) the power states were measured again before its "
        f"runs, into {band.calibration_dir(calibrations_dir)}, and the manager and the "
        "extender read those"
    )


def of_repeat(band: Band) -> str:
    """``In repeat 1 of 3: `` before a sentence about one repeat's runs, when there are several."""
    return "" if band.repeats == 1 else f"In repeat {band.repeat} of {band.repeats}: "


def back_to_main(band: Band, report_dir: Path, folder: Path) -> list[tuple[str, str]]:
    """A later band's link back to the demo's report (in ``report_dir``) from its own
    ``folder``: (text, relative href)."""
    what = "the answer over all repeats" if band.repeats > 1 else "the demo's answer"
    return [(f"The demo's report: {what}", _relative(report_dir / HTML_NAME, folder))]


def other_reports(bands: list[Band], report_dir: Path) -> list[Path]:
    """The report of each band after the demo's (the first: repeats, other offered loads), in
    order: ``<report>/<band name>/``."""
    return [report_dir / band.name / HTML_NAME for band in bands[1:]]


def paths_text(html: Path, summary: Path, record: Path, others: list[tuple[str, Path]]) -> str:
    """The terminal's last lines: where the report, its summary, the other bands' reports
    (``others``: (:attr:`Band.title`, path)) and the decision record are."""
    lines = [f"report: {html}"]
    lines += [f"report of {title}: {path}" for title, path in others]
    lines += [f"summary: {summary}", f"record: {record}"]
    return "\n".join(lines)


DECISIONS_DIR = "decisions"
"""The report's sub-folder of decision pages (one per featured pod)."""


def decision_page(record_dir: Path, report_dir: Path, pod: str) -> Path:
    """Write ``<report>/decisions/<pod>.html``: what ``eams explain demo/<pod>`` prints, as a
    page the report links to (the raw record beside it), and return its path.

    Raises
    ------
    WallPowerError
        The page cannot be written (naming it).
    """
    records = read_records(record_dir, Query(pod=pod)).records
    text = render_pod(explain_pod(records, pod))
    page = report_dir / DECISIONS_DIR / f"{re.sub(r'[^A-Za-z0-9._-]', '_', pod)}.html"
    links = [
        ("back to the report", f"../{HTML_NAME}"),
        ("the raw decision record (JSONL)", _relative(record_dir / "decisions.jsonl", page.parent)),
    ]
    intro = (
        f"What the decision record says about pod demo/{pod}: the text `eams explain "
        f"demo/{pod} --record {record_dir}` prints."
    )
    try:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(render_text_page(f"Pod demo/{pod}: its placement", text, intro, links))
    except OSError as exc:
        raise WallPowerError(f"cannot write {page}: {exc.strerror or exc}") from exc
    return page


def _example_pod(record_dir: Path) -> str | None:
    """A pod the market cleared (bound where it chose), to show one decision; ``None``."""
    for record in read_records(record_dir).records:
        if isinstance(record, Bound) and record.honoured:
            return record.pod.name
    return None


def power_marks(band: Band, record_root: Path) -> dict[str, list[PowerMark]]:
    """Where each run's power manager put a node to sleep or woke it (the transitions that
    went through, ``result`` ok) inside the run's window, from the run's power record, in
    seconds since the window's start: the marks of the report's power-over-time plot. A run
    without a record (no power manager) has none.

    Parameters
    ----------
    band : Band
    record_root : Path
        The demo's ``record`` folder (``<band>/<label>/power*.jsonl`` below it).
    """
    out: dict[str, list[PowerMark]] = {}
    for run in band.runs:
        folder = record_root / band.name / run.label
        if not folder.is_dir():
            continue
        start_s, end_s = run.start_ns / 1e9, run.end_ns / 1e9
        out[run.label] = [
            PowerMark(p.node, p.at_s - start_s, "wake" if p.to_state == "running" else "sleep")
            for p in read_records(folder).records
            if isinstance(p, Power)
            and p.mode == "active"
            and p.result == "ok"
            and start_s <= p.at_s <= end_s
        ]
    return out


def _relative(path: Path, start: Path) -> str:
    """``path`` as a link from a page in ``start`` (relative, so the folder can move)."""
    return Path(os.path.relpath(path, start)).as_posix()


def cycles_text(band: Band) -> str:
    """What a scheduling cycle is, and why the runs' counts differ (the report's note)."""
    counts = ", ".join(f"{r.label} {r.cycles} for {len(r.binds)} pods" for r in band.runs)
    eams = band.run("eams+pm")
    return (
        "A scheduling cycle is one pass of kube-scheduler's loop for one pod: filters, "
        "scoring, binding. A pod no node can take at that moment (every node full or asleep, "
        "or, in the EAMS runs only, refused by the extender's /filter: under its headroom "
        "floor, or held for an asleep node its market is having woken) "
        "waits and is tried again at each cluster event (a pod ending, a node woken), each try "
        f"a cycle: {counts}; the difference from the pods is those retries. kube-scheduler "
        "asks the extender to score (/prioritize) only when more than one node passes the "
        f"filters: in the eams+pm run {eams.prioritize_calls} cycles were scored and "
        f"{eams.unscored_binds} pods bound with one node left, unscored."
    )


def cleared_text(share: dict[str, int]) -> str:
    """``C of the P placements (X %)``: the share the market cleared, one wording everywhere."""
    pct = 100 * share["cleared"] / share["pods"] if share["pods"] else 0.0
    return f"{share['cleared']} of the {share['pods']} placements ({pct:.0f} %)"


def market_text(share: dict[str, int]) -> str:
    """How many placements the market cleared (the decisions' introduction, and the
    terminal's line)."""
    return (
        f"The market cleared {cleared_text(share)} of the eams+pm run (bound to the node its "
        f"clearing chose); {share['cleared_nowhere']} were cleared "
        f"nowhere and {share['unscored']} bound unscored (one feasible node), both by "
        f"kube-scheduler alone, and {share['overridden']} bound elsewhere than cleared. Only "
        "placements the market cleared are featured below."
    )


def market_wakes(band: Band, record_root: Path) -> dict[str, Any]:
    """The market's wakes in the ``eams+pm`` run, from its record (``record/<band>/eams+pm``):
    ``wakes``: nodes the power manager woke for the market (reason ``market-bid``, carried out),
    ``manager_wakes``: the manager's other wakes of that run; ``held``, ``failed``,
    ``withdrawn``: the extender's wake lines (a pod held for an asleep node; its wake did not
    come in time and the pod was cleared again; an awake node became the better price while it
    waited); ``wake_energy_wh``: the measured wake energy E_wake of each node the market had
    woken, summed (what the boots cost at the calibration's figures, Wh); ``mgr_wakes``: the
    manager's wakes in ``eams+pm-mgr``, which has no market wakes."""
    records = read_records(record_root / band.name / "eams+pm").records
    woken = [r for r in records if isinstance(r, Power) and r.mode == "active"
             and r.to_state == "running" and r.result == "ok"]  # fmt: skip
    market = [r for r in woken if r.reason == MARKET_REASON]
    asked = [r for r in records if isinstance(r, Wake)]
    energy_j = {r.node: r.wake_energy_j for r in asked if r.wake_energy_j is not None}
    return {
        "wakes": len(market),
        "manager_wakes": len(woken) - len(market),
        "held": sum(1 for r in asked if r.event == "asked"),
        "failed": sum(1 for r in asked if r.event == "failed"),
        "withdrawn": sum(1 for r in asked if r.event == "withdrawn"),
        "wake_energy_wh": sum(energy_j.get(r.node, 0.0) for r in market) / 3600,
        "mgr_wakes": band.run("eams+pm-mgr").transitions.get("wake", 0),
    }


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def wakes_text(wakes: dict[str, Any]) -> str:
    """The market's wakes (:func:`market_wakes`) in words."""
    return (
        f"The market held {wakes['held']} pods for an asleep node and the power manager woke "
        f"{_nodes(wakes['wakes'])} for it (and {wakes['manager_wakes']} by its own rule; "
        f"{wakes['mgr_wakes']} in eams+pm-mgr, where it decides every wake); "
        f"{wakes['failed']} market wakes failed and {wakes['withdrawn']} were withdrawn for a "
        f"better awake node. The market's wakes cost {wakes['wake_energy_wh'] * 1000:.0f} mWh "
        "of boots at the measured wake energies; what they account for of the saving is the "
        "difference of eams+pm and eams+pm-mgr above."
    )


def power_alerts(band: Band) -> list[str]:
    """Each run's failed power transitions in words (none when every one went through)."""
    out = []
    for run in band.runs:
        text = failure_text(run.transitions, run.suspect_nodes)
        if text:
            out.append(f"Power transitions of run {run.label} that failed: {text} "
                       "(record/power.log has each one).")  # fmt: skip
    return out


def _overview(band: Band, checks: dict[str, SavingCheck]) -> list[list[str]]:
    """The runs table (header row first) as the report shows it: the terminal's cells."""
    header = ["run"] + [h.replace("\n", " ") for _, h, _ in RUN_COLUMNS] + ["sleeps/wakes"]
    figures = run_figures(band, checks)
    return [header] + [[label, *_cells(f)] for label, f in figures.items()]


def _print_band(console: Console, band: Band, checks: dict[str, SavingCheck]) -> None:
    table = Table(
        title=f"{band.title}: four live runs of the same trace",
        caption=f"in {CLOCK} (the trace {band.speedup:.2f}× faster)",
    )
    table.add_column("run", no_wrap=True)
    # two-line headers: the table fits an 80-column terminal without cutting a word
    for _, header, _ in RUN_COLUMNS:
        table.add_column(header)
    table.add_column("sleeps/\nwakes")
    for label, figures in run_figures(band, checks).items():
        table.add_row(label, *_cells(figures))
    console.print(table)

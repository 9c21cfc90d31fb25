"""Human-readable output of ``eams calibrate fit``, ``show`` and ``fleet`` (rich tables)."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group
from rich.table import Column, Table
from rich.text import Text

from eams.calibrate.calfile import Calibration
from eams.calibrate.fit import FitResult
from eams.calibrate.fleet import NodeOutcome
from eams.calibrate.model import wake_power
from eams.calibrate.powerstates.record import Estimate


def _ci(interval: Sequence[float] | None) -> str:
    return "[unknown]" if interval is None else f"[{interval[0]:.1f}, {interval[1]:.1f}]"


def _opt(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _speed(cal: Calibration) -> str:
    contended = cal.sweep is not None and cal.sweep.contention and cal.sweep.contention.findings
    return _opt(cal.speed, ".3f") + (" (contended)" if contended else "")


def contention_notes(calibrations: Sequence[Calibration]) -> list[str]:
    """One line per calibration swept under contention (``--allow-contention``), naming the
    node and every finding with its figures; empty when none was."""
    return [
        f"{cal.node}: calibrated under contention, speed suspect: "
        + "; ".join(cal.sweep.contention.findings)
        for cal in calibrations
        if cal.sweep is not None and cal.sweep.contention and cal.sweep.contention.findings
    ]


def fit_report(result: FitResult) -> Group:
    """The fit as text: line with 95 % intervals, R², RMSE, linearity, wake power, per level."""
    levels = Table("u", "n", "measured W", "model W", "error W", "error %", "weight", box=None)
    for lv in result.levels:
        levels.add_row(
            f"{lv.utilisation:.3f}",
            str(lv.n_points),
            f"{lv.measured_w:.2f}",
            f"{lv.model_w:.2f}",
            f"{lv.error_w:+.2f}",
            f"{lv.error_pct:+.1f}",
            f"{lv.weight:.2f}",
        )
    verdict = "yes" if result.linear_ok else "NO"
    _, wake_note = wake_power(result.p_active_idle_w, result.p_idle_w)
    return Group(
        Text(f"P_idle  {result.p_idle_w:8.2f} W   95 % CI {_ci(result.p_idle_ci95_w)} W"),
        Text(f"P_max   {result.p_max_w:8.2f} W   95 % CI {_ci(result.p_max_ci95_w)} W"),
        Text(
            f"R² {result.r2:.4f}   RMSE {result.rmse_w:.2f} W   "
            f"{result.n_points} points at {result.n_levels} levels"
        ),
        Text(f"linear_ok: {verdict}. {result.linear_reason}"),
        Text(wake_note),
        Text(f"method: {result.method}", style="dim"),
        levels,
    )


def _value_ci(value: float, interval: Sequence[float] | None) -> str:
    """The value over its 95 % interval: ``±half`` when centred on it (as fits are), else
    ``[lo, hi]``; two lines, so the table stays narrow."""
    if interval is None:
        return f"{value:.1f}\n±?"
    low, high = interval
    if f"{(low + high) / 2:.1f}" == f"{value:.1f}":
        return f"{value:.1f}\n±{(high - low) / 2:.1f}"
    return f"{value:.1f}\n{_ci(interval)}"


def calibrations_table(calibrations: Sequence[Calibration]) -> Table:
    """One row per node: P_idle and P_max with intervals, active idle, speed, R², RMSE,
    linear_ok and when the file was made (UTC); fits 80 columns for node names up to 24
    characters on one line (columns one space apart; longer names fold, never cut)."""
    numbers = ("P_idle\nW", "P_max\nW", "active\nidle W", "speed", "R²", "RMSE\nW")
    table = Table(
        Column("node", overflow="fold"),
        *(Column(header, justify="right", no_wrap=True) for header in numbers),
        Column("linear", no_wrap=True),
        Column("created\n(UTC)", no_wrap=True),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 0),  # the box's blank separator is the gap: node names keep their line
        caption="±: half-width of the 95 % confidence interval; linear: linear_ok",
    )
    for cal in calibrations:
        table.add_row(
            cal.node,
            _value_ci(cal.p_idle_w, cal.p_idle_ci95_w),
            _value_ci(cal.p_max_w, cal.p_max_ci95_w),
            _opt(cal.p_active_idle_w, ".1f"),
            _speed(cal),
            f"{cal.r2:.4f}",
            f"{cal.rmse_w:.2f}",
            "yes" if cal.linear_ok else "NO",
            cal.created_at.strftime("%Y-%m-%d\n%H:%M"),
        )
    return table


def fleet_table(outcomes: Sequence[NodeOutcome]) -> Table:
    """The fleet summary: per node, the fitted values and file, or the error."""
    table = Table(
        Column("node", overflow="fold"),
        "result",
        Column("P_idle W", justify="right", no_wrap=True),
        Column("P_max W", justify="right", no_wrap=True),
        Column("speed", justify="right", no_wrap=True),
        Column("linear", no_wrap=True),
        Column("file / error", overflow="fold"),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for outcome in outcomes:
        cal = outcome.calibration
        if cal is None:
            table.add_row(outcome.node, "[red]failed[/red]", "—", "—", "—", "—", outcome.error)
            continue
        table.add_row(
            outcome.node,
            "ok",
            f"{cal.p_idle_w:.1f}",
            f"{cal.p_max_w:.1f}",
            _speed(cal),
            "yes" if cal.linear_ok else "NO",
            str(outcome.path),
        )
    return table


def _estimate(value: Estimate | None, fmt: str = ".1f") -> str:
    if value is None:
        return "—"
    lo, hi = value.ci95
    return f"{value.value:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def power_states_table(calibrations: Sequence[Calibration]) -> Table:
    """The measured power states, a section per node: its method and repeats, then P_off,
    P_suspend and each transition's time and energy, one line each with its 95 % interval
    (the measurement's notes: :func:`power_state_notes`).

    Long rather than wide (a column per quantity needed ~130 columns), so it fits 80 columns
    with node names up to ~40 characters (longer ones fold, never cut).
    """
    table = Table(
        Column("node / quantity", overflow="fold"),
        Column("value [95 % CI]", no_wrap=True),
        Column("energy J [95 % CI]", no_wrap=True),
        title="power states",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for cal in calibrations:
        states = cal.power_states
        if states is None:
            continue
        table.add_row(Text(cal.node, style="bold"), f"{states.method}, {states.repeats} repeats")
        table.add_row("  P_off W", _estimate(states.p_off_w))
        table.add_row("  P_suspend W", _estimate(states.p_suspend_w))
        boot = "  boot s" + (f", from {states.boot_from}" if states.boot_from else "")
        transitions = (
            ("  wake s", states.wake),
            ("  suspend s", states.suspend),
            (boot, states.boot),
            ("  shutdown s", states.shutdown),
        )
        for label, cost in transitions:
            energy = "—" if cost is None else _estimate(cost.energy_j, ".0f")
            table.add_row(label, "—" if cost is None else _estimate(cost.time_s), energy)
        table.add_section()
    return table


def power_state_notes(calibrations: Sequence[Calibration]) -> list[str]:
    """The power-state measurement's notes, one line each, ``node: note`` (a repeat retaken
    after a stall, readings under the meter's floor), to print under
    :func:`power_states_table`; none for a file without power states."""
    return [
        f"{cal.node}: {note}"
        for cal in calibrations
        if cal.power_states is not None
        for note in cal.power_states.notes
    ]

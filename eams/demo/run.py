"""The stages of ``eams demo``: the whole toolkit on a virtual six-node testbed.

1. start the PDU simulator on loopback for six virtual nodes whose hidden power curves come
   from six real SPECpower servers (scaled; :mod:`eams.demo.fleet` says why not to 10–60 W)
   and whose speeds differ, and read it back through the APC driver (:mod:`eams.demo.testbed`);
2. calibrate every node with the real sweep through the real meter, measure the power states
   of every node that may sleep, and write its calibration file (:mod:`eams.demo.calibrate`);
3. start the extender (active) and place a trace live four times — default, default + power
   manager, EAMS + power manager deciding the wakes alone, EAMS + power manager with the
   market deciding the wakes (:mod:`eams.demo.runs`, :mod:`eams.demo.live`) — while each
   run's agents meter it (:mod:`eams.demo.services`); the full demo does it three times
   (:data:`~eams.demo.runs.REPEATS`, :mod:`eams.demo.spread`); the live extender records the
   EAMS run's placements and wakes (``--record``), the demo adds each pod's energy
   (:mod:`eams.demo.record`);
4. run the VT-5 wall-power check on the runs and print the answer, the summary and the
   report's path (:mod:`eams.demo.report`).

Every thread, server and agent the demo starts is stopped on exit, on an error and on Ctrl-C
(one :class:`contextlib.ExitStack`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from eams.calibrate.calfile import Calibration
from eams.calibrate.sweep import SweepProgress
from eams.demo.calibrate import POWER_STATES_PLAN, calibrate_fleet, measure_power_states
from eams.demo.errors import DemoError
from eams.demo.fleet import DemoNode, demo_fleet
from eams.demo.lag import lag_line
from eams.demo.live import EXTENDER_TIMEOUT_S, LiveRun
from eams.demo.power import NODE_POWER, failure_text
from eams.demo.record import Saved, write_energy
from eams.demo.report import check_and_report
from eams.demo.runs import PERIOD_S, REPEATS, Band, bands
from eams.demo.runs import record_dir as runs_record_dir
from eams.demo.testbed import DRIVER, METER_RETRIES, METER_TIMEOUT_S, Testbed
from eams.demo.workload import RHO, harness_cluster, missing_trace
from eams.meter.blocking import BlockingMeter


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def _read_back(console: Console, testbed: Testbed, nodes: list[DemoNode]) -> None:
    loads = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    for node, load in zip(testbed.nodes, loads, strict=True):
        node.set_load(load)
    with BlockingMeter(
        testbed.url, driver=DRIVER, timeout_s=METER_TIMEOUT_S, retries=METER_RETRIES
    ) as meter:
        reading = meter.read()
    for node in testbed.nodes:
        node.set_load(0.0)
    table = Table(title=f"PDU simulator at {reading.meter} read through driver {reading.driver}")
    for column in ("outlet", "node", "hidden curve from", "speed", "load", "power W"):
        table.add_column(column)
    for number, (spec, load) in enumerate(zip(nodes, loads, strict=True), start=1):
        outlet = reading.outlet(number)
        power = "—" if outlet is None or outlet.power_w is None else f"{outlet.power_w:g}"
        table.add_row(
            str(number), spec.name, spec.server, f"{spec.speed:.2f}", f"{load:.0%}", power
        )
    console.print(table)


def _calibrate(console: Console, testbed: Testbed, out_dir: Path, quick: bool) -> list[Calibration]:
    with _progress(console) as bar:
        tasks = {n.spec.name: bar.add_task(f"sweep {n.spec.name}", total=1) for n in testbed.nodes}

        def update(node: str, p: SweepProgress) -> None:
            bar.update(
                tasks[node],
                total=p.count,
                completed=p.index,
                description=f"sweep {node}: level {p.commanded_pct:3d} % {p.phase}",
            )

        calibrations = calibrate_fleet(testbed, out_dir, quick=quick, progress=update)
    table = Table(title=f"calibration files in {out_dir}")
    for column in ("node", "P_idle W", "P_max W", "R²", "speed", "straight line?"):
        table.add_column(column)
    for cal in calibrations:
        table.add_row(
            cal.node,
            f"{cal.p_idle_w:.1f}",
            f"{cal.p_max_w:.1f}",
            f"{cal.r2:.4f}",
            "—" if cal.speed is None else f"{cal.speed:.2f}",
            "yes" if cal.linear_ok else "no",
        )
    console.print(table)
    for cal in calibrations:
        note = cal.intercept_note()
        if note is not None:
            console.print(f"    {note}", soft_wrap=True, markup=False)
    with console.status("measuring the power states (soft-off, outlet off and on, ×3)"):
        calibrations = measure_power_states(testbed, calibrations, out_dir)
    console.print(power_states_text(calibrations), soft_wrap=True, markup=False)
    return calibrations


def power_states_text(calibrations: list[Calibration]) -> str:
    """The measured power states in one line per node that has them (what the power manager
    and the extender's wake prices both read), and why a node has none."""
    planned = POWER_STATES_PLAN.repeats
    lines = [
        f"    power states measured ({planned} repeats, 95 % intervals), asleep = outlet off (0 W):"
    ]
    for cal in calibrations:
        states = cal.power_states
        if states is None or states.boot is None or states.shutdown is None:
            lines.append(f"      {cal.node}: not measured (it never sleeps: PDU owner, k3s server)")
            continue
        boot, off = states.boot, states.shutdown
        lines.append(
            f"      {cal.node}: wake {boot.time_s.value:.2f} s "
            f"[{boot.time_s.ci95[0]:.2f}, {boot.time_s.ci95[1]:.2f}] and "
            f"{boot.energy_j.value:.0f} J [{boot.energy_j.ci95[0]:.0f}, "
            f"{boot.energy_j.ci95[1]:.0f}]; sleep {off.time_s.value:.2f} s and "
            f"{off.energy_j.value:.0f} J" + _retaken(states.repeats - planned)
        )
    return "\n".join(lines)


def _retaken(count: int) -> str:
    """What a node's power-state line adds when repeats were retaken after a stall
    (:data:`eams.calibrate.powerstates.measure.RETAKE_FACTOR`)."""
    if count <= 0:
        return ""
    repeats = f"{count} repeat{'s' * (count > 1)}"
    return f"; {repeats} retaken, the host having stalled (eams calibrate show FILE says which)"


def _live(
    console: Console,
    testbed: Testbed,
    nodes: list[DemoNode],
    calibrations: list[Calibration],
    out_dir: Path,
    quick: bool,
    repeats: int,
) -> tuple[list[Band], list[Saved], Path]:
    harness = harness_cluster(nodes, calibrations)

    def on_run(title: str, run: LiveRun) -> None:
        asked = ""
        if run.extender_prioritize is not None:
            asked = (
                f"; the extender answered {run.extender_prioritize} /prioritize calls "
                f"for {len(run.binds)} pods, {len(run.decisions)} placed on its best score "
                "(kube-scheduler asks for scores only when more than one node passes its filters)"
            )
        if run.unanswered:
            why = (run.call_errors or ["no answer"])[0]
            asked += (
                f"; {len(run.unanswered)} pods placed without it (its /filter answer failed or "
                f"came after the {EXTENDER_TIMEOUT_S:g} s httpTimeout: {why})"
            )
        what_failed = failure_text(run.transitions, run.suspect_nodes)
        failed = f"; failed: {what_failed} (record/power.log)" if what_failed else ""
        console.print(
            f"    {title}, {run.label}: {len(run.binds)} pods placed live in {run.cycles} "
            f"cycles, {run.transitions.get('sleep', 0)} sleeps and "
            f"{run.transitions.get('wake', 0)} wakes ({run.transitions.get('refused', 0)} sleeps "
            f"refused by the safety rules){failed}{asked}",
            soft_wrap=True,
            markup=False,
        )
        console.print(f"      {lag_line(run.lag)}", soft_wrap=True, markup=False)

    with _progress(console) as bar:

        def progress(text: str) -> Callable[[float], None]:
            task = bar.add_task(text, total=1.0)
            return lambda done: bar.update(task, completed=done)

        def on_extender(url: str) -> None:
            console.print(
                f"    extender (active mode) at {url}, recording", soft_wrap=True, markup=False
            )

        def on_power_states(band: Band, own: list[Calibration]) -> None:
            console.print(
                f"    {band.title}: the power states measured again, into "
                f"{band.calibration_dir(out_dir / 'calibration')}\n{power_states_text(own)}",
                soft_wrap=True,
                markup=False,
            )

        done = bands(
            testbed, harness, calibrations, out_dir, quick, RHO[quick], repeats, on_run,
            progress, on_extender, on_power_states,
        )  # fmt: skip
    main = done[0]
    console.print(f"    workload: {main.source}", soft_wrap=True, markup=False)
    console.print(
        f"    placed live {main.speedup:.2f}× faster than the trace (agents sample every "
        f"{PERIOD_S[quick]:g} s); the extender ingested {main.samples_ingested} samples "
        f"from the agents (active mode, at {main.extender_url}, recording)",
        soft_wrap=True,
        markup=False,
    )
    by_node = {c.node: c for c in calibrations}
    cores = {n.name: n.cores for n in nodes}
    saved_by_band = {  # every band's pods get their energy; the report shows the demo band's
        b.name: write_energy(
            b.run("eams+pm"), runs_record_dir(out_dir, b.name), by_node, cores, b.speedup
        )
        for b in done
    }
    saved = saved_by_band[main.name]
    record_dir = runs_record_dir(out_dir, main.name)
    console.print(f"    decision record: {record_dir}", soft_wrap=True, markup=False)
    return done, saved, record_dir


def _make_dirs(out_dir: Path) -> None:
    for sub in ("calibration", "telemetry", "report", "record"):
        try:
            (out_dir / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DemoError(
                f"cannot write the demo's output into {out_dir}: {exc.strerror or exc} "
                f"({exc.filename or out_dir / sub}); choose another folder with --out"
            ) from exc


def run_demo(console: Console, quick: bool, out_dir: Path, repeats: int | None = None) -> None:
    """Run the four stages (module docstring), writing everything under ``out_dir``.

    Parameters
    ----------
    console : Console
        Where progress and the summary go.
    quick : bool
        Shorter sweeps and runs (CI).
    out_dir : Path
        Absolute; created as needed.
    repeats : int or None
        Times each offered load's four runs are placed (≥ 1; ``None``: :data:`REPEATS`).

    Raises
    ------
    ValueError
        ``repeats`` under 1.
    DemoError
        ``out_dir`` cannot be written (checked before anything starts).
    EamsError
        A stage failed (sweep, meter, wall-power check); everything started is stopped first.
    """
    started = time.monotonic()
    repeats = REPEATS[quick] if repeats is None else repeats
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    _make_dirs(out_dir)

    def stage(number: int, text: str) -> None:
        console.print(f"[bold]{number}/4[/] [dim]{time.monotonic() - started:3.0f} s[/] {text}")

    nodes, source = demo_fleet()
    stage(1, f"PDU simulator for six virtual nodes: {source}")
    note = missing_trace(quick)
    if note is not None:  # said now, not after the runs it changes
        console.print(f"    workload: {note}", soft_wrap=True, markup=False)
    with ExitStack() as stack:
        testbed = stack.enter_context(Testbed(nodes, NODE_POWER[quick]))
        _read_back(console, testbed, nodes)
        stage(2, "calibrating the six nodes (sweeps through the meter)")
        calibrations = _calibrate(console, testbed, out_dir / "calibration", quick)
        stage(
            3,
            "placing a trace live: default, default + power manager, EAMS + power manager "
            "(the manager deciding the wakes alone, then the market deciding them)"
            + ("" if repeats == 1 else f"; {repeats} times, for the spread between runs"),
        )
        done, saved, record_dir = _live(
            console, testbed, nodes, calibrations, out_dir, quick, repeats
        )
    power = NODE_POWER[quick]
    stage(4, "VT-5 wall-power check")
    check_and_report(
        console,
        done,
        out_dir / "report",
        out_dir / "calibration",
        fleet=source,
        power=(
            f"hidden: asleep 0 W (outlet off), wake = boot {power.boot_s:g} s at the curve's "
            f"50 % draw, sleep = soft-off {power.shutdown_s:g} s at idle"
        ),
        saved=saved,
        record_dir=record_dir,
    )
    console.print(
        f"demo finished in {time.monotonic() - started:.0f} s; everything is in {out_dir}",
        soft_wrap=True,
        markup=False,
    )

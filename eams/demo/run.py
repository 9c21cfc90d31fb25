"""The stages of ``eams demo``: the whole toolkit on a virtual six-node testbed.

1. start the PDU simulator on loopback for six virtual nodes whose hidden power curves come
   from six real SPECpower servers (scaled; :mod:`eams.demo.fleet` says why not to 10–60 W)
   and whose speeds differ, and read it back through the APC driver (:mod:`eams.demo.testbed`);
2. calibrate every node with the real sweep through the real meter and write its calibration
   file (:mod:`eams.demo.calibrate`);
3. plan a trace's placements with the default scheduler and with EAMS
   (:mod:`eams.demo.workload`), start the extender, and play each run on the testbed
   (:mod:`eams.demo.replay`) while that run's agents meter it (:mod:`eams.demo.services`),
   telemetry flowing simulator → SNMP → agent → JSONL and extender;
4. run the VT-5 wall-power check on the two runs and print the summary and the report's path
   (:mod:`eams.demo.report`).

Every thread, server and agent the demo starts is stopped on exit, on an error and on Ctrl-C
(one :class:`contextlib.ExitStack`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from eams.calibrate.calfile import Calibration
from eams.calibrate.sweep import SweepProgress
from eams.demo.calibrate import calibrate_fleet
from eams.demo.errors import DemoError
from eams.demo.fleet import DemoNode, demo_fleet
from eams.demo.replay import PlayedRun, play
from eams.demo.report import check_and_report
from eams.demo.services import Agents, ExtenderServer
from eams.demo.testbed import DRIVER, METER_RETRIES, METER_TIMEOUT_S, Testbed
from eams.demo.workload import PlannedRun, demo_workload, harness_cluster, plan_runs
from eams.meter.blocking import BlockingMeter
from eams.scheduler.policies.base import Workload

RUN_S = {True: 6.0, False: 50.0}
"""Real seconds the longer of the two runs lasts (quick, full)."""
PERIOD_S = {True: 0.25, False: 0.5}
"""Agent sample period and meter poll (quick, full), s."""
WARMUP_PERIODS = 3
"""Agent periods before and after the played window, so its edges hold samples."""
METER_START_TIMEOUT_S = 20.0
"""How long a run waits for the PDU owner agent's first meter reading, s."""


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
    return calibrations


def _play_metered(
    testbed: Testbed,
    planned: PlannedRun,
    workload: Workload,
    *,
    speedup: float,
    calibrations_dir: Path,
    telemetry_dir: Path,
    extender_url: str,
    period_s: float,
    tick: Callable[[float], None],
) -> PlayedRun:
    """Start this run's agents, play the run, stop the agents (their sinks flushed)."""
    with Agents(testbed, calibrations_dir, telemetry_dir, extender_url, period_s) as agents:
        agents.wait_metered(METER_START_TIMEOUT_S)
        time.sleep(WARMUP_PERIODS * period_s)
        start_ns, end_ns = play(testbed, planned, workload, speedup, tick)
        time.sleep(WARMUP_PERIODS * period_s)
    placed = planned.replay.node >= 0
    return PlayedRun(
        planned.label, telemetry_dir, start_ns, end_ns, float(workload.work_core_s[placed].sum())
    )


def _replay(
    console: Console,
    stack: ExitStack,
    testbed: Testbed,
    nodes: list[DemoNode],
    calibrations: list[Calibration],
    out_dir: Path,
    quick: bool,
) -> tuple[list[PlayedRun], dict[str, dict], float, str]:
    cluster = harness_cluster(nodes, calibrations)
    workload, source = demo_workload(cluster, quick)
    console.print(f"    workload: {source}")
    planned = plan_runs(cluster, workload)
    speedup = max(float(p.replay.makespan_s) for p in planned) / RUN_S[quick]
    console.print(
        f"    placements planned by the harness; played {speedup:.2f}× faster than the trace "
        f"(agents sample every {PERIOD_S[quick]:g} s)"
    )
    extender = ExtenderServer(out_dir / "calibration").start()
    stack.callback(extender.stop)
    console.print(f"    extender (shadow mode) at {extender.url}")
    played = []
    for run in planned:
        with _progress(console) as bar:
            task = bar.add_task(f"run {run.label}", total=1.0)

            def tick(done: float, task: TaskID = task) -> None:
                bar.update(task, completed=done)

            played.append(
                _play_metered(
                    testbed,
                    run,
                    workload,
                    speedup=speedup,
                    calibrations_dir=out_dir / "calibration",
                    telemetry_dir=out_dir / "telemetry" / run.label,
                    extender_url=extender.url,
                    period_s=PERIOD_S[quick],
                    tick=tick,
                )
            )
        console.print(
            f"    run {run.label}: played, telemetry in {played[-1].telemetry_dir}",
            soft_wrap=True,
            markup=False,
        )
    console.print(
        f"    the extender ingested {extender.samples_ingested()} samples from the agents"
    )
    return played, {p.label: p.figures for p in planned}, speedup, source


def _make_dirs(out_dir: Path) -> None:
    for sub in ("calibration", "telemetry", "report"):
        try:
            (out_dir / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DemoError(
                f"cannot write the demo's output into {out_dir}: {exc.strerror or exc} "
                f"({exc.filename or out_dir / sub}); choose another folder with --out"
            ) from exc


def run_demo(console: Console, quick: bool, out_dir: Path) -> None:
    """Run the four stages (module docstring), writing everything under ``out_dir``.

    Parameters
    ----------
    console : Console
        Where progress and the summary go.
    quick : bool
        Shorter sweeps and runs (CI).
    out_dir : Path
        Absolute; created as needed.

    Raises
    ------
    DemoError
        ``out_dir`` cannot be written (checked before anything starts).
    EamsError
        A stage failed (sweep, meter, wall-power check); everything started is stopped first.
    """
    started = time.monotonic()
    _make_dirs(out_dir)

    def stage(number: int, text: str) -> None:
        console.print(f"[bold]{number}/4[/] [dim]{time.monotonic() - started:3.0f} s[/] {text}")

    nodes, source = demo_fleet()
    stage(1, f"PDU simulator for six virtual nodes: {source}")
    with ExitStack() as stack:
        testbed = stack.enter_context(Testbed(nodes))
        _read_back(console, testbed, nodes)
        stage(2, "calibrating the six nodes (sweeps through the meter)")
        calibrations = _calibrate(console, testbed, out_dir / "calibration", quick)
        stage(3, "replaying a trace with the default scheduler and with EAMS")
        played, figures, speedup, workload = _replay(
            console, stack, testbed, nodes, calibrations, out_dir, quick
        )
    stage(4, "VT-5 wall-power check")
    check_and_report(
        console,
        [p.spec for p in played],
        figures,
        speedup,
        out_dir / "report",
        out_dir / "calibration",
        workload=workload,
        fleet=source,
    )
    console.print(
        f"demo finished in {time.monotonic() - started:.0f} s; everything is in {out_dir}",
        soft_wrap=True,
        markup=False,
    )

"""Demo stage 4: the VT-5 wall-power check on the two played runs, and the printed summary."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from eams.calibrate.wallpower import check_runs, load_fleet, load_run, write_report
from eams.calibrate.wallpower.check import SavingCheck
from eams.calibrate.wallpower.cli import summary_lines
from eams.calibrate.wallpower.report import About
from eams.calibrate.wallpower.spec import RunSpec

ACCURACY_PCT = 3.0
"""The simulated PDU is an APC rPDU2: ±3 % of reading (Schneider FAQ FA156074)."""
SETUP = (
    "simulated: no hardware was metered. The PDU is EAMS's PDU simulator (an APC rPDU2 "
    "imitation served over SNMP on loopback, read by the real APC driver and agents) and the "
    "six nodes are virtual, their power following hidden curves ({fleet}) as their virtual "
    "stress-ng load and the replayed pods change"
)
"""What the demo's report says was measured (``{fleet}``: where the hidden curves came from)."""


def check_and_report(
    console: Console,
    runs: list[RunSpec],
    figures: dict[str, dict],
    speedup: float,
    report_dir: Path,
    calibrations_dir: Path,
    workload: str = "not stated",
    fleet: str = "not stated",
) -> SavingCheck:
    """Check run B against run A at the wall, write the report, print the summary.

    Parameters
    ----------
    console : Console
    runs : list of RunSpec, length 2
        Run A (baseline) and run B, each labelled (the played runs' ``spec``).
    figures : dict
        The harness's figures per run label (p95 completion time in trace seconds).
    speedup : float
        Trace seconds per real second: wall energy × speedup = energy in trace time.
    report_dir, calibrations_dir : Path
    workload : str
        What was replayed (trace file, pods, ρ), as the workload stage says it.
    fleet : str
        Where the nodes' hidden power curves came from, as the fleet stage says it.

    Returns
    -------
    SavingCheck
    """
    run_a, run_b = (load_run(spec, default) for spec, default in zip(runs, "AB", strict=True))
    result = check_runs(run_a, run_b, load_fleet(calibrations_dir), accuracy_pct=ACCURACY_PCT)
    note = (
        f"The runs were played {speedup:.2f}× faster than the trace at the same power: "
        f"multiply these J/core-s by {speedup:.2f} for trace time (the terminal's summary "
        "shows them so)."
    )
    about = About(setup=SETUP.format(fleet=fleet), workload=f"replayed twice: {workload}")
    html_path, json_path = write_report(
        result, report_dir, title="eams demo — VT-5 wall-power check", note=note, about=about
    )
    table = Table(title="two runs of the same trace on the six-node testbed")
    # two-line headers: the table fits an 80-column terminal without cutting a word
    for column in (
        "run",
        "work\ncore-s",
        "wall\nWh",
        "J/core-s\nmetered",
        "J/core-s\nmodelled",
        "J/core-s\nharness",
        "p95\ncompletion s",
    ):
        table.add_column(column)
    for run in (result.a, result.b):
        p95 = figures[run.label].get("p95_completion_s")
        exact = figures[run.label].get("energy_per_work_j_per_core_s")
        table.add_row(
            run.label,
            f"{run.work_core_s:.0f}",
            f"{run.metered_wh:.2f}",
            f"{run.metered_wh * 3600 * speedup / run.work_core_s:.1f}",
            f"{run.modelled_wh * 3600 * speedup / run.work_core_s:.1f}",
            "—" if exact is None else f"{exact:.1f}",
            "—" if p95 is None else f"{p95:.0f}",
        )
    console.print(table)
    console.print(
        f"(energy per unit work and completion times in trace time: the runs were played "
        f"{speedup:.2f}× faster at the same power, so the report's J/core-s are {speedup:.2f}× "
        "smaller; 'harness' is the bench simulator's exact energy on the hidden curves)"
    )
    colour = "green" if result.passed else "red"
    lines = summary_lines(result)
    console.print(f"[bold {colour}]{lines[0]}[/]")
    for line in lines[1:]:
        console.print(line, markup=False)
    # paths unwrapped and as given (soft wrap, no markup), so they can be copied
    console.print(f"report: {html_path}\nsummary: {json_path}", soft_wrap=True, markup=False)
    return result

"""``eams demo``: the whole toolkit end to end on a virtual six-node testbed.

No hardware and no external server: a PDU simulator on loopback, calibration sweeps through the
real meter protocol, agents and the extender, three live runs of a trace (default scheduler,
default + power manager, EAMS + power manager) placed by an emulated kube-scheduler, and the
VT-5 wall-power check with its HTML report. The stages live in :mod:`eams.demo.run`;
this module only wires the command (and imports the stages when it runs, so ``eams --help``
stays fast).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from eams.cli import ValueType


def _output_folder(text: str) -> Path:
    """The demo's output folder: made if missing, but only in a folder that exists (a typo in
    the path is a usage error, not a tree of folders made behind the user's back)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{text}: is a file, not a folder")
    parent = path.resolve().parent
    if not parent.exists():
        raise ValueError(f"{text}: the folder {parent} does not exist")
    return path


@click.command()
@click.option("--quick", is_flag=True, help="Shorter sweeps and runs, one offered load (CI).")
@click.option(
    "--out",
    "out_dir",
    default="eams-demo",
    show_default=True,
    type=ValueType(_output_folder, "DIR"),
    help="Where calibration files, telemetry and the report go (made if missing, in a folder "
    "that exists).",
)
@click.option(
    "--repeats",
    type=click.IntRange(1, 10),
    default=None,
    help="Times the four runs are placed; the answer is their mean and its 95 % interval "
    "[default: 3; 1 with --quick].",
)
def demo(quick: bool, out_dir: Path, repeats: int | None) -> None:
    """Run the toolkit end to end on a virtual six-node testbed (no hardware, no server).

    Starts a PDU simulator for six virtual nodes, calibrates them, places a cluster trace live
    four times — the default scheduler, the default with the power manager, EAMS (the live
    extender) with the power manager deciding the wakes, and with its market deciding them —
    while the agents meter the runs, then says at the wall which run used the least energy per
    unit of work and whether the model agrees (VT-5), and prints where the HTML report and the
    decision record are. The full demo places the four runs three times (--repeats) and states
    the mean saving with its 95 % interval, which allows for the spread between runs; one run's ±
    covers its measurement only. Every thread and server it starts is stopped on exit and on Ctrl-C.

    Exit status 0 whatever the verdict (it is printed), 1 on an error (one line on stderr),
    2 on a bad invocation (an --out whose parent folder does not exist, --repeats outside
    1–10), 130 on Ctrl-C. The
    real data is read from EAMS_DATA_DIR (default ../shared/data next to the repository);
    without it the demo says at the start which files it wanted and uses built-in ones.
    """
    from eams.demo.run import run_demo

    run_demo(Console(highlight=False), quick, out_dir.resolve(), repeats)

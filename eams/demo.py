"""``eams demo``: the whole toolkit on a virtual six-node testbed, no hardware, no server.

Stages (each prints progress):

1. start the PDU simulator on loopback for six virtual nodes whose hidden power curves come
   from six real SPECpower servers (scaled; :mod:`eams.demo_fleet` says why not to 10–60 W)
   and whose speeds differ
   (:mod:`eams.demo_fleet`, :mod:`eams.demo_testbed`), and read it back through the APC driver;
2. calibrate every node with the real sweep through the real meter protocol and write its
   calibration file (:mod:`eams.demo_calibrate`).

Every thread, server and process the demo starts is stopped on exit, on an error and on Ctrl-C
(one :class:`contextlib.ExitStack`).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import click
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from eams.calibrate.calfile import Calibration
from eams.calibrate.sweep import SweepProgress
from eams.demo_calibrate import calibrate_fleet
from eams.demo_fleet import DemoNode, demo_fleet
from eams.demo_testbed import Testbed
from eams.meter.blocking import BlockingMeter

DRIVER = "apc_rpdu2"


def _read_back(console: Console, testbed: Testbed, nodes: list[DemoNode]) -> None:
    loads = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    for node, load in zip(testbed.nodes, loads, strict=True):
        node.set_load(load)
    with BlockingMeter(testbed.url, driver=DRIVER) as meter:
        reading = meter.read()
    for node in testbed.nodes:
        node.set_load(0.0)
    table = Table(title=f"PDU simulator at {reading.meter} read through driver {reading.driver}")
    for column in ("outlet", "node", "hidden curve from", "speed", "load", "power W"):
        table.add_column(column)
    for spec, load in zip(nodes, loads, strict=True):
        outlet = reading.outlet(int(spec.name.split("-")[1]))
        power = "—" if outlet is None or outlet.power_w is None else f"{outlet.power_w:g}"
        table.add_row(
            spec.name.split("-")[1],
            spec.name,
            spec.server[:40],
            f"{spec.speed:.2f}",
            f"{load:.0%}",
            power,
        )
    console.print(table)


def _calibrate(console: Console, testbed: Testbed, out_dir: Path, quick: bool) -> list[Calibration]:
    with Progress(console=console, transient=True) as bar:
        tasks = {
            n.spec.name: bar.add_task(f"sweep {n.spec.name}", total=None) for n in testbed.nodes
        }

        def update(node: str, p: SweepProgress) -> None:
            bar.update(
                tasks[node],
                total=p.count,
                completed=p.index,
                description=f"sweep {node}: level {p.commanded_pct:3d} % {p.phase}",
            )

        calibrations = calibrate_fleet(testbed, out_dir, quick=quick, progress=update)
    table = Table(title=f"calibration files in {out_dir}")
    for column in ("node", "P_idle W", "P_max W", "R²", "speed", "linear?"):
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


@click.command()
@click.option("--quick", is_flag=True, help="Shorter sweeps and runs (under a minute; CI).")
@click.option(
    "--out",
    "out_dir",
    default=Path("eams-demo"),
    show_default=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Where calibration files, telemetry and the report go.",
)
def demo(quick: bool, out_dir: Path) -> None:
    """Run the toolkit end to end on a virtual six-node testbed (no hardware, no server)."""
    console = Console(highlight=False)
    started = time.monotonic()
    nodes, source = demo_fleet()
    console.print(f"[bold]1/2[/] PDU simulator: {source}")
    with ExitStack() as stack:
        testbed = stack.enter_context(Testbed(nodes))
        _read_back(console, testbed, nodes)
        console.print("[bold]2/2[/] calibrating the six nodes (stress-ng sweep on virtual nodes)")
        _calibrate(console, testbed, out_dir / "calibration", quick)
    console.print(f"demo finished in {time.monotonic() - started:.1f} s; output in {out_dir}")

"""``eams demo``: the whole toolkit on a virtual six-node testbed, no hardware, no server.

Stages (each prints progress):

1. start the PDU simulator on loopback for six virtual mini-PCs whose hidden power curves come
   from six real SPECpower servers (scaled to mini-PC power) and whose speeds differ
   (:mod:`eams.demo_fleet`, :mod:`eams.demo_testbed`), and read it back through the APC driver.

Every thread, server and process the demo starts is stopped on exit, on an error and on Ctrl-C
(one :class:`contextlib.ExitStack`).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

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
    console.print(f"[bold]1/1[/] PDU simulator: {source}")
    with ExitStack() as stack:
        testbed = stack.enter_context(Testbed(nodes))
        _read_back(console, testbed, nodes)
    console.print(f"demo finished in {time.monotonic() - started:.1f} s; output in {out_dir}")
    del quick

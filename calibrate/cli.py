"""``eams calibrate``: sweep, fit, show and fleet. This module only wires (STYLE.md §14)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from eams.calibrate.calfile import Calibration, load_calibration
from eams.calibrate.csvinput import fit_csv
from eams.calibrate.errors import SweepError
from eams.calibrate.fleet import Inventory, run_fleet
from eams.calibrate.plot import plot_calibrations
from eams.calibrate.progress import progress_bar
from eams.calibrate.report import (
    calibrations_table,
    contention_notes,
    fit_report,
    fleet_table,
    power_state_notes,
    power_states_table,
)
from eams.calibrate.run import SpeedReferenceSpec, SshOptions, fit_and_save, sweep_node
from eams.calibrate.sweep import DEFAULT_LEVELS, SweepPlan
from eams.cli import OUTPUT_FILE, FiniteFloatRange, ValueType
from eams.meter.cli import DRIVER, METER_URL

_FILE = click.Path(dir_okay=False, path_type=Path)
_INPUT = click.Path(exists=True, dir_okay=False, path_type=Path)
_SECONDS = FiniteFloatRange(min=0, min_open=True)


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise ValueError(f"{text!r}: expected percentages like 0,10,20,...,100") from None
    SweepPlan(levels)  # SweepError unless distinct whole percentages in 0–100
    return levels


def _plan_options(command):  # type: ignore[no-untyped-def]
    """The sweep-plan flags shared by ``sweep`` and ``fleet``."""
    for option in reversed(
        [
            click.option(
                "--levels",
                type=ValueType(_levels, "PCT,..."),
                default=",".join(map(str, DEFAULT_LEVELS)),
                help="Commanded load levels in % (default 0,10,...,100; 0 = active idle).",
            ),
            click.option(
                "--settle-s",
                type=_SECONDS,
                default=60.0,
                show_default=True,
                help="Longest wait for power and utilisation to settle at each level.",
            ),
            click.option(
                "--measure-s",
                type=_SECONDS,
                default=60.0,
                show_default=True,
                help="Measurement interval per level.",
            ),
            click.option(
                "--sample-s",
                type=_SECONDS,
                default=1.0,
                show_default=True,
                help="Meter read period (also the settle-detection window).",
            ),
            click.option(
                "--allow-contention",
                is_flag=True,
                help="Keep a sweep that other work competed with (busy at idle, stress-ng short "
                "of CPU at full load, steal); the file records it and `show` flags it.",
            ),
            click.option(
                "--accept-unknown-host",
                is_flag=True,
                help="Accept and save an SSH host key not in known_hosts (never a changed one).",
            ),
        ]
    ):
        command = option(command)
    return command


def _sweep_plan(
    levels: tuple[int, ...],
    settle_s: float,
    measure_s: float,
    sample_s: float,
    allow_contention: bool,
) -> SweepPlan:
    """The plan from the flags of :func:`_plan_options`."""
    return SweepPlan(
        levels,
        settle_s=settle_s,
        measure_s=measure_s,
        sample_s=sample_s,
        allow_contention=allow_contention,
    )


@click.group()
def calibrate() -> None:
    """Fit each node's power model P(u) = P_idle + (P_max − P_idle)·u from load sweeps."""


@calibrate.command()
@click.option("--node", required=True, help="Node name (names the calibration file's node).")
@click.option(
    "--meter",
    "meter_url",
    type=METER_URL,
    required=True,
    help="Meter URL (snmp://, snmpv3://, serial://).",
)
@click.option(
    "--outlet", type=click.IntRange(min=1), required=True, help="The node's outlet (1-based)."
)
@click.option("--ssh", help="USER@HOST[:PORT] to sweep a remote node (default: this machine).")
@click.option("--identity", type=_INPUT, help="SSH private key (default: ~/.ssh keys, agent).")
@click.option("--known-hosts", type=_FILE, help="known_hosts file (default ~/.ssh/known_hosts).")
@click.option(
    "--driver", type=DRIVER, help="Meter driver, skipping auto-detection (e.g. apc_rpdu2)."
)
@click.option("--reference", type=_INPUT, help="Calibration file of the speed reference node.")
@click.option(
    "--reference-bogo-ops-s",
    type=FiniteFloatRange(min=0, min_open=True),
    help="Speed reference as bogo-ops/s at 100 % load.",
)
@_plan_options
@click.option(
    "--out", type=_FILE, required=True, help="Calibration file to write (calibration/NAME.json)."
)
def sweep(
    node: str,
    meter_url: str,
    outlet: int,
    ssh: str | None,
    identity: Path | None,
    known_hosts: Path | None,
    driver: str | None,
    reference: Path | None,
    reference_bogo_ops_s: float | None,
    levels: tuple[int, ...],
    settle_s: float,
    measure_s: float,
    sample_s: float,
    allow_contention: bool,
    accept_unknown_host: bool,
    out: Path,
) -> None:
    """Sweep one node from active idle to full load with stress-ng, fit it, write the file.

    stress-ng is stopped on every exit path (Ctrl-C, SSH drop, meter failure); measured levels
    of a sweep that stops early are kept in NAME.partial.json.
    """
    plan = _sweep_plan(levels, settle_s, measure_s, sample_s, allow_contention)
    speed_ref = SpeedReferenceSpec()
    if reference is not None:
        speed_ref = SpeedReferenceSpec.from_file(reference)
    elif reference_bogo_ops_s is not None:
        speed_ref = SpeedReferenceSpec(f"{reference_bogo_ops_s:g} bogo-ops/s", reference_bogo_ops_s)
    with progress_bar(node) as progress:
        record = sweep_node(
            node,
            meter_url=meter_url,
            outlet=outlet,
            out=out,
            ssh=ssh,
            ssh_options=SshOptions(identity, known_hosts, accept_unknown_host),
            plan=plan,
            driver=driver,
            progress=progress,
        )
    calibration = fit_and_save(record, out, speed_ref)
    console = Console()
    console.print(calibrations_table([calibration]))
    console.print(calibration.fit.linear_reason)
    console.print(calibration.wake_power_note)
    for line in contention_notes([calibration]):
        console.print(line, style="bold red")
    console.print(f"written: {out}")


@calibrate.command()
@click.argument("file", type=_INPUT)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--floor-w",
    type=FiniteFloatRange(min=0),
    help="Meter floor (W): refuse readings at or below it.",
)
def fit(file: Path, as_json: bool, floor_w: float | None) -> None:
    """Fit the line to FILE, a CSV with columns `utilisation` (0–1) and `power_w`.

    `utilization` is accepted too; names in any letter case, spaces after commas and Excel's
    "CSV UTF-8" are fine. Other columns are ignored. Rows are numbered as a spreadsheet shows
    them (header = row 1). Refused, naming the row: a row with more fields than the header, no
    data rows, power falling with load, and points exactly on a line (no scatter to size the
    95 % intervals with).
    """
    result = fit_csv(file, floor_w)
    if as_json:
        click.echo(json.dumps(result.to_json()))
    else:
        Console().print(fit_report(result))


@calibrate.command()
@click.argument("files", type=_INPUT, nargs=-1, required=True)
@click.option(
    "--plot",
    type=OUTPUT_FILE,
    help="Also draw power vs utilisation with line and band (PNG; the folder must exist).",
)
def show(files: tuple[Path, ...], plot: Path | None) -> None:
    """Print a table of calibration FILES (P_idle, P_max with 95 % CIs, speed, R², linear_ok)."""
    calibrations = [load_calibration(path) for path in files]
    console = Console()
    console.print(calibrations_table(calibrations))
    for line in contention_notes(calibrations):
        console.print(line, style="bold red")
    measured = [cal for cal in calibrations if cal.power_states is not None]
    if measured:
        _print_power_states(console, measured)
    if plot is not None:
        click.echo(f"plot: {plot_calibrations(calibrations, plot)}")


def _print_power_states(console: Console, calibrations: list[Calibration]) -> None:
    """The power-states table, then the measurement's notes under it."""
    console.print(power_states_table(calibrations))
    for line in power_state_notes(calibrations):
        console.print(f"  note: {line}", markup=False)


@calibrate.command()
@click.option("--inventory", type=_INPUT, required=True, help="YAML: node → ssh target → outlet.")
@_plan_options
def fleet(
    inventory: Path,
    levels: tuple[int, ...],
    settle_s: float,
    measure_s: float,
    sample_s: float,
    allow_contention: bool,
    accept_unknown_host: bool,
) -> None:
    """Sweep every node of the inventory one after another, then print one summary.

    Exit status 1 when any node failed (the summary says which and why).
    """
    plan = _sweep_plan(levels, settle_s, measure_s, sample_s, allow_contention)
    outcomes = run_fleet(
        Inventory.load(inventory),
        plan=plan,
        accept_unknown_host=accept_unknown_host,
        progress=progress_bar,
    )
    Console().print(fleet_table(outcomes))
    failed = [o.node for o in outcomes if o.error is not None]
    if failed:
        raise SweepError(f"{len(failed)} of {len(outcomes)} node(s) failed: {', '.join(failed)}")


def _seconds(flag: str, default: float, text: str, *, zero_ok: bool = False):  # type: ignore[no-untyped-def]
    """A seconds option: > 0 (or >= 0 with ``zero_ok``), its default shown."""
    kind = click.FloatRange(min=0, min_open=not zero_ok)
    return click.option(flag, type=kind, default=default, show_default=True, help=text)


@calibrate.command("power-states")
@click.argument("node")
@click.option(
    "--inventory",
    "inventory_path",
    type=_FILE,
    default=Path("/etc/eams/power.yaml"),
    show_default=True,
    envvar="EAMS_POWER_INVENTORY",
    help="Power inventory YAML (method, MAC, outlet, SSH target, roles of each node).",
)
@click.option(
    "--calibration",
    type=_INPUT,
    required=True,
    help="The node's calibration file (its line, from `eams calibrate sweep`) to add them to.",
)
@click.option("--out", type=_FILE, help="Write here instead of updating --calibration.")
@click.option(
    "--repeats",
    type=click.IntRange(min=3),
    default=3,
    show_default=True,
    help="Repeats of every transition (at least 3).",
)
@_seconds("--sample-s", 0.1, "Pause between meter reads and probes.", zero_ok=True)
@_seconds("--settle-s", 3.0, "A sleep level counts once steady this long; also the rest between.")
@_seconds("--measure-s", 5.0, "P_off and P_suspend are averaged over this long.")
@_seconds("--timeout-s", 300.0, "Bound on each transition.")
@_seconds(
    "--boot-off-s", 2.0, "How long the outlet stays off before a boot from off.", zero_ok=True
)
@_seconds(
    "--meter-lag-s",
    1.0,
    "How old a meter reading may be (a PDU refreshes outlet power about once a second).",
    zero_ok=True,
)
@_seconds("--meter-timeout-s", 2.0, "SNMP timeout of each request to the PDU (one retry).")
@click.option(
    "--force",
    is_flag=True,
    help="Measure although the node runs pods or the Kubernetes API cannot say (never the k3s "
    "server or the PDU owner).",
)
@click.option("--reason", default="power-state calibration", help="Why, for the log lines.")
@click.option("--dry-run", is_flag=True, help="Check and print what each repeat would do.")
def power_states(
    node: str,
    inventory_path: Path,
    calibration: Path,
    out: Path | None,
    repeats: int,
    sample_s: float,
    settle_s: float,
    measure_s: float,
    timeout_s: float,
    boot_off_s: float,
    meter_lag_s: float,
    meter_timeout_s: float,
    force: bool,
    reason: str,
    dry_run: bool,
) -> None:
    """Measure NODE's P_off, P_suspend and the time and energy of a suspend, a wake, a shutdown
    and a boot, each repeated with its spread, into its calibration file (schema 2).

    The node must be running, drained, cordoned and tainted; it is left running.
    """
    from eams.actuators.actions import PowerActions
    from eams.actuators.inventory import load_inventory
    from eams.actuators.transitions import echo_transitions
    from eams.calibrate.powerstates.measure import MeasurePlan
    from eams.calibrate.powerstates.run import measure_node, plan_power_states

    inventory = load_inventory(inventory_path)
    actions = PowerActions(
        inventory, why=reason, force=force, dry_run=dry_run, meter_timeout_s=meter_timeout_s
    )
    if dry_run:
        load_calibration(calibration, expect_node=node)
        for line in plan_power_states(node, inventory, actions):
            click.echo(line)
        return
    echo_transitions(click.echo)
    plan = MeasurePlan(
        repeats=repeats,
        sample_s=sample_s,
        settle_s=settle_s,
        measure_s=measure_s,
        timeout_s=timeout_s,
        boot_off_s=boot_off_s,
        lag_s=meter_lag_s,
    )
    updated, path = measure_node(node, inventory, actions, calibration, plan=plan, out=out)
    _print_power_states(Console(), [updated])
    click.echo(f"written: {path}")

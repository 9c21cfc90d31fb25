"""``eams power``: wake, suspend and power off one node, safely; run the power manager. This
module only wires (STYLE.md §14): the actions, their safety rules and their log line are
:mod:`eams.actuators`; the manager is :mod:`.service`."""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path

import click

from eams.actuators.actions import PowerActions
from eams.actuators.inventory import load_inventory
from eams.actuators.methods import METHODS
from eams.actuators.transitions import Transition, echo_transitions
from eams.cli import FiniteFloatRange, configure_logging, log_level_option
from eams.meter.errors import BadMacAddress
from eams.meter.wol import DEFAULT_ADDRESS, DEFAULT_PORT, format_mac, parse_nic_mac
from eams.scheduler.power.errors import ManagerConfigError

DEFAULT_INVENTORY = Path("/etc/eams/power.yaml")
"""Where ansible installs the power inventory (``ansible/README.md``)."""

_inventory = click.option(
    "--inventory",
    "inventory_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_INVENTORY,
    show_default=True,
    envvar="EAMS_POWER_INVENTORY",
    help="Power inventory YAML: each node's method, MAC, outlet, SSH target and roles.",
)
_dry_run = click.option(
    "--dry-run", is_flag=True, help="Check and print what would happen; do nothing."
)
_reason = click.option(
    "--reason",
    default="by hand (no --reason given)",
    help="Why, for the transition's log line (who is the login name).",
)
_wait = click.option(
    "--wait-s",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds an outlet's state may take to read back as asked.",
)
_force = click.option(
    "--force",
    is_flag=True,
    help="Act although the node runs pods or the Kubernetes API cannot say (never overrides "
    "the k3s server or the PDU owner).",
)
_node = click.argument("node")


def _mac(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return format_mac(parse_nic_mac(value))
    except BadMacAddress as exc:
        raise click.BadParameter(str(exc)) from None


def _address(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A dotted quad must be an IPv4 address; anything else is taken as a host name."""
    if value is None or not all(part.isdigit() for part in value.split(".")):
        return value
    try:
        return str(ipaddress.IPv4Address(value))
    except ipaddress.AddressValueError as exc:
        raise click.BadParameter(f"{value!r} is not an IPv4 address: {exc}") from None


def _show(transition: Transition) -> None:
    if transition.result == "dry_run":
        click.echo(f"{transition.node}: {transition.to} would:")
        for step in transition.steps:
            click.echo(f"  {step}")


@click.group()
def power() -> None:
    """Wake, suspend and power off nodes (Wake-on-LAN, SSH, switched PDU outlets), by hand or
    by the power manager (manage).

    Every action prints one `power transition:` line (who, what, why, the steps, the result).
    Anything that stops a node is refused unless it is cordoned, tainted and drained (from the
    Kubernetes API), and never done to the k3s server or the PDU's owner.
    """
    echo_transitions(click.echo)


@power.command()
@click.argument("node", required=False)
@click.option(
    "--mac",
    callback=_mac,
    help="Wake this MAC instead of an inventory node (aa:bb:cc:dd:ee:ff; malformed: exit 2).",
)
@click.option(
    "--address",
    callback=_address,
    help=f"With --mac: broadcast or unicast address of the magic packet [{DEFAULT_ADDRESS}].",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    help=f"With --mac: UDP port of the magic packet [{DEFAULT_PORT}].",
)
@_inventory
@_wait
@_reason
@_dry_run
def wake(
    node: str | None,
    mac: str | None,
    address: str | None,
    port: int | None,
    inventory_path: Path,
    wait_s: float,
    reason: str,
    dry_run: bool,
) -> None:
    """Wake NODE (magic packet, or its outlet on and read back), or the MAC given by --mac."""
    if (node is None) == (mac is None):
        raise click.UsageError("give either NODE or --mac MAC")
    if mac is None and (address is not None or port is not None):
        raise click.UsageError(
            "--address and --port go with --mac (a node's come from the inventory)"
        )
    if mac is not None:
        actions = PowerActions(None, why=reason, dry_run=dry_run)
        _show(actions.wake_mac(mac, address=address, port=port))
        return
    assert node is not None
    inventory = load_inventory(inventory_path)
    actions = PowerActions(inventory, why=reason, dry_run=dry_run, switch_wait_s=wait_s)
    _show(actions.wake(node))


def _stop_command(verb: str, doc: str) -> click.Command:
    """``eams power suspend`` / ``poweroff``: the same options, a different action."""

    def command(
        node: str, inventory_path: Path, force: bool, wait_s: float, reason: str, dry_run: bool
    ) -> None:
        inventory = load_inventory(inventory_path)
        actions = PowerActions(
            inventory, why=reason, force=force, dry_run=dry_run, switch_wait_s=wait_s
        )
        _show(getattr(actions, verb)(node))

    command.__doc__ = doc
    for option in (_dry_run, _reason, _wait, _force, _inventory, _node):
        command = option(command)
    return power.command(verb)(command)


_stop_command(
    "suspend",
    "Put NODE into its sleep state: "
    + "; ".join(f"{m.sleeps_by} (method {name})" for name, m in METHODS.items())
    + ".",
)
_stop_command(
    "poweroff",
    """Power NODE off: `systemctl poweroff` over SSH, then (method outlet) its outlet off once
    it has shut down (the inventory's grace_s at most).""",
)


@power.command("check-inventory")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def check_inventory(file: Path) -> None:
    """Validate a power inventory FILE and print one line per node (ansible validates the
    rendered file with this)."""
    inventory = load_inventory(file)
    for name, entry in sorted(inventory.nodes.items()):
        roles = ", ".join(entry.never_sleeps()) or "may sleep"
        outlet = "—" if entry.outlet is None else str(entry.outlet)
        click.echo(
            f"{name}: method {entry.method}, mac {entry.mac or '—'}, outlet {outlet}, {roles}"
        )


@power.command()
@_inventory
@click.option(
    "--calibrations",
    "calibrations_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the nodes' calibration files (NAME.json; power states from schema 2).",
)
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Kubeconfig of the cluster [the inventory's, else in-cluster, else $KUBECONFIG].",
)
@click.option(
    "--in-cluster",
    is_flag=True,
    help="Ignore the inventory's kubeconfig: use the pod's service account (the Deployment in "
    "deploy/k3s/power-manager), else $KUBECONFIG.",
)
@click.option(
    "--mode",
    type=click.Choice(["shadow", "active"]),
    default="shadow",
    show_default=True,
    help="shadow: decide, log and record only; active: cordon, taint and switch nodes.",
)
@click.option(
    "--interval-s",
    type=FiniteFloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="Seconds between ticks (sooner when the policy names an instant).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML with the policy's and the manager's settings (policy:, manager:).",
)
@click.option(
    "--record",
    "record_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the decision record (power*.jsonl, rotated; read by eams explain).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    help="Serve Prometheus metrics on this port (/metrics).",
)
@log_level_option()
def manage(
    inventory_path: Path,
    calibrations_dir: Path,
    kubeconfig: Path | None,
    in_cluster: bool,
    mode: str,
    interval_s: float,
    config_path: Path | None,
    record_dir: Path | None,
    metrics_port: int | None,
    log_level: str,
) -> None:
    """Run the power manager: sleep empty nodes and wake nodes for pending pods, until
    SIGTERM or Ctrl-C.

    Every decision is one log line with its reason, a metric and a decision record; in active
    mode also the node's eams.io/power-state and eams.io/power-reason annotations. It never
    drains a node and never sleeps the k3s server or the PDU owner.
    """
    from eams.scheduler.power import service

    if in_cluster and kubeconfig is not None:
        raise click.UsageError("give --kubeconfig or --in-cluster, not both")
    if config_path is not None and not config_path.is_file():
        # checked here, not by click.Path(exists=True): the Deployment's arguments name the
        # mounted ConfigMap's path, and tests parse them where it is not mounted
        raise click.BadParameter(f"{config_path} is not a file", param_hint="'--config'")
    configure_logging(log_level, "%(asctime)s %(levelname)s %(message)s")
    power_log = logging.getLogger("eams.power")  # a service: every line timed, on stderr
    for handler in list(power_log.handlers):
        power_log.removeHandler(handler)  # the by-hand commands' echo to stdout
    power_log.propagate = True
    power_log.setLevel(logging.NOTSET)  # --log-level decides
    built = service.build(
        inventory_path,
        calibrations_dir,
        kubeconfig=kubeconfig,
        in_cluster=in_cluster,
        mode="active" if mode == "active" else "shadow",
        config_path=config_path,
        record_dir=record_dir,
    )
    try:
        service.serve(built, interval_s, metrics_port)
    except OSError as exc:
        raise ManagerConfigError(f"--metrics-port {metrics_port}: {exc.strerror or exc}") from exc

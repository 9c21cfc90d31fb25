"""``eams meter simulate``: serve a simulated APC rPDU2 PDU on loopback until stopped."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
from typing import Any

import click

from eams.meter.simulator.agent import PduSimulator
from eams.meter.simulator.control import ControlServer
from eams.meter.simulator.curves import LinearCurve, MeasuredCurve, load_specpower
from eams.meter.simulator.errors import SimulatorError
from eams.meter.simulator.load import HostCpuLoad
from eams.meter.simulator.node import NodePower
from eams.meter.simulator.outlets import PowerCurve, VirtualOutlet
from eams.meter.url import AUTH_KEY_ENV, PRIV_KEY_ENV

_MODBUS_MODELS = {1: "sdm120", 3: "sdm630"}


def _parse_curve(text: str) -> LinearCurve:
    kind, _, rest = text.partition(":")
    idle, _, peak = rest.partition(":")
    expected = f"{text!r}: expected linear:P_IDLE_W:P_MAX_W, finite watts with 0 <= idle <= max"
    if kind != "linear":
        raise click.BadParameter(f"{expected} (unknown curve kind {kind!r})", param_hint="--curve")
    try:
        return LinearCurve(float(idle), float(peak))
    except ValueError:
        raise click.BadParameter(expected, param_hint="--curve") from None


def _parse_node_power(items: tuple[str, ...]) -> NodePower:
    fields = {f.name for f in dataclasses.fields(NodePower)}
    values: dict[str, float] = {}
    for item in items:
        key, _, text = item.partition("=")
        try:
            if key not in fields:
                raise ValueError(f"unknown parameter {key!r}; known: {', '.join(sorted(fields))}")
            values[key] = float(text)
        except ValueError as exc:
            raise click.BadParameter(f"{item!r}: {exc}", param_hint="--node-power") from None
    try:
        return NodePower(**values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--node-power") from None


@click.command()
@click.option(
    "--outlets",
    "n_outlets",
    type=click.IntRange(1, 64),
    default=6,
    show_default=True,
    help="Number of outlets (one virtual node each).",
)
@click.option(
    "--curve",
    default="linear:60:120",
    show_default=True,
    help="Power curve of every outlet without a SPECpower row: linear:P_IDLE_W:P_MAX_W (the "
    "default idles above the 50 W under which the APC driver flags an outlet below floor).",
)
@click.option(
    "--specpower-row",
    "specpower_rows",
    type=click.IntRange(0),
    multiple=True,
    help="0-based row of the SPECpower extract; repeat to give outlets 1, 2, … "
    "their own measured curves (the rest use --curve).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    help="UDP port of the SNMP agent (0 = a free port; the URL shows it).",
)
@click.option(
    "--community", default="public", show_default=True, help="SNMP v2c community that reads."
)
@click.option(
    "--write-community",
    default="private",
    show_default=True,
    help="SNMP v2c community that also writes (switches outlets).",
)
@click.option(
    "--reboot-off-s",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    help="How long an outlet reboot holds the power off (s).",
)
@click.option(
    "--wol-port",
    type=click.IntRange(0, 65535),
    default=0,
    help="UDP port where the nodes listen for Wake-on-LAN magic packets (0 = a free port).",
)
@click.option(
    "--node-power",
    "node_power",
    multiple=True,
    metavar="KEY=VALUE",
    help="A hidden power-state parameter of every node (NodePower: boot_s, boot_power_w, "
    "off_w, suspend_w, wake_s, wake_power_w, suspend_s, shutdown_s); repeatable.",
)
@click.option(
    "--control-port",
    type=click.IntRange(0, 65535),
    default=0,
    help="TCP port of the load-control HTTP endpoint (0 = a free port).",
)
@click.option(
    "--host-cpu-outlet",
    "host_cpu_outlets",
    type=click.IntRange(1),
    multiple=True,
    help="Drive this outlet from this machine's CPU utilisation (repeatable).",
)
@click.option(
    "--modbus-device",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also serve an Eastron meter (Modbus-RTU) on this serial device, e.g. one end of a "
    "socat pty pair.",
)
@click.option(
    "--modbus-outlet",
    "modbus_outlets",
    type=click.IntRange(1),
    multiple=True,
    help="Outlet(s) the Modbus meter measures: once for an SDM120, three times for an SDM630 "
    "(default: outlet 1).",
)
@click.option(
    "--v3-user",
    default=None,
    metavar="NAME",
    help="Also accept this SNMPv3 authPriv user (SHA/AES), keys from EAMS_SNMP_AUTH_KEY and "
    "EAMS_SNMP_PRIV_KEY (the reader's variables); its URL is printed third.",
)
def simulate(
    n_outlets: int,
    curve: str,
    specpower_rows: tuple[int, ...],
    host: str,
    port: int,
    community: str,
    write_community: str,
    reboot_off_s: float,
    wol_port: int,
    node_power: tuple[str, ...],
    control_port: int,
    host_cpu_outlets: tuple[int, ...],
    modbus_device: str | None,
    modbus_outlets: tuple[int, ...],
    v3_user: str | None,
) -> None:
    """Serve a simulated APC rPDU2 Metered-by-Outlet PDU over SNMP until Ctrl-C or SIGTERM.

    Each outlet feeds one virtual node whose power follows its load (0–1) through its power
    curve (``--curve``, or a measured SPECpower_ssj2008 curve with ``--specpower-row``). The
    first line printed is the meter URL (``snmp://COMMUNITY@HOST:PORT``) for
    ``eams meter read``; the second is the control endpoint. Change a load while it runs with

    \b
        curl -X PUT -d '{"utilisation": 0.8}' http://127.0.0.1:CONTROL_PORT/outlets/2/load

    suspend or power off a node's OS with ``PUT /outlets/N/node`` and
    ``{"action": "suspend"}`` / ``{"action": "soft_off"}``, and read every outlet's ground
    truth (W, A, Wh, outlet and node state, MAC) with ``GET /outlets``. Outlets switch over
    SNMP with the write community (``eams meter switch``); a switched-on node boots for
    ``boot_s`` before it follows its load. Nodes wake on magic packets sent to the
    Wake-on-LAN port. The last two lines printed are ``write: snmp://WRITE_COMMUNITY@...``
    and ``wol: HOST:PORT``.

    With ``--modbus-device``, the same virtual nodes also feed an Eastron SDM120 (one
    ``--modbus-outlet``) or SDM630 (three) served on that serial device; read the other end of
    its pty pair with ``serial://OTHER_END?protocol=sdm120``.

    With ``--v3-user NAME`` it also answers SNMPv3 authPriv (SHA/AES) for NAME, with the keys
    in ``EAMS_SNMP_AUTH_KEY`` / ``EAMS_SNMP_PRIV_KEY``; the third line is then
    ``v3: snmpv3://NAME@HOST:PORT?auth=SHA&priv=AES``.

    Errors: a bad curve or outlet number exits 2; a port in use, a missing SPECpower file or v3
    keys missing or under 8 characters exit 1 with one line on stderr.
    """
    default_curve = _parse_curve(curve)
    curves: list[PowerCurve] = [default_curve] * n_outlets
    if specpower_rows:
        table = load_specpower()
        for outlet, row in enumerate(specpower_rows[:n_outlets]):
            if row >= len(table):
                raise click.BadParameter(
                    f"row {row}: the SPECpower extract has rows 0..{len(table) - 1}",
                    param_hint="--specpower-row",
                )
            curves[outlet] = MeasuredCurve.from_specpower(table[row])
    modbus_outlets = modbus_outlets or (1,)
    if modbus_device and len(modbus_outlets) not in _MODBUS_MODELS:
        raise click.BadParameter(
            "give one (SDM120) or three (SDM630) outlets", param_hint="--modbus-outlet"
        )
    for outlet in (*host_cpu_outlets, *modbus_outlets):
        if outlet > n_outlets:
            raise click.BadParameter(
                f"outlet {outlet} > --outlets {n_outlets}",
                param_hint="--host-cpu-outlet/--modbus-outlet",
            )
    power = _parse_node_power(node_power)
    outlets = [VirtualOutlet(f"node{n}", c, power) for n, c in enumerate(curves, start=1)]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    v3: dict[str, Any] = {}
    if v3_user:
        keys = [os.environ.get(env, "") for env in (AUTH_KEY_ENV, PRIV_KEY_ENV)]
        if min(map(len, keys)) < 8:  # RFC 3414 §11.2: at least 8 characters
            raise SimulatorError(
                f"--v3-user needs {AUTH_KEY_ENV} and {PRIV_KEY_ENV} set to keys of at least "
                "8 characters"
            )
        v3 = {"v3_user": v3_user, "v3_auth_key": keys[0], "v3_priv_key": keys[1]}
    simulator = PduSimulator(
        outlets,
        host=host,
        port=port,
        community=community,
        write_community=write_community,
        reboot_off_s=reboot_off_s,
        wol_port=wol_port,
        **v3,
    )
    with simulator as sim:
        for outlet in host_cpu_outlets:
            sim.set_load_source(outlet, HostCpuLoad())
        with contextlib.ExitStack() as stack:
            control = stack.enter_context(ControlServer(sim, host=host, port=control_port))
            click.echo(sim.url)
            click.echo(f"control: {control.url}/outlets")
            if sim.v3_url:
                click.echo(f"v3: {sim.v3_url}")
            if modbus_device:
                from eams.meter.simulator.modbus import ModbusMeterSimulator  # pymodbus.server

                model = _MODBUS_MODELS[len(modbus_outlets)]
                stack.enter_context(
                    ModbusMeterSimulator(sim, modbus_outlets, modbus_device, model=model)
                )
                click.echo(f"modbus: {model} on {modbus_device}")
            click.echo(f"write: {sim.write_url}")
            click.echo(f"wol: {host}:{sim.wol_port}")
            stop.wait()

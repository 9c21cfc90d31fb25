"""``eams meter``: read, check, switch and simulate PDUs."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from eams.cli import ValueType
from eams.meter.check import check_reading
from eams.meter.errors import NotConfirmed
from eams.meter.open import open_meter
from eams.meter.reading import Reading
from eams.meter.url import parse_meter_url

if TYPE_CHECKING:
    from eams.meter.snmp.switch import SwitchResult


def _family(name: str) -> object:
    from eams.meter.snmp.registry import family  # reads profiles.yaml: only with --driver

    return family(name)


METER_URL = ValueType(parse_meter_url, "URL", keep_text=True)
"""A meter URL checked when the command line is read (a bad one is a usage error)."""
DRIVER = ValueType(_family, "NAME", keep_text=True)
"""An SNMP family name of ``meter/snmp/profiles.yaml``, checked the same way."""

_url = click.argument("url", type=METER_URL)
_driver = click.option(
    "--driver",
    default=None,
    type=DRIVER,
    help="SNMP family from profiles.yaml (skips detection).",
)
_timeout = click.option(
    "--timeout-s",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds to wait for one answer.",
)
_retries = click.option(
    "--retries",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="Retries after the first try.",
)


@click.group()
def meter() -> None:
    """Read per-outlet power from metered PDUs (SNMP) and serial meters; switch outlets."""


async def _read_once(url: str, **kwargs: Any) -> tuple[Reading, list[str]]:
    m = open_meter(url, **kwargs)
    try:
        reading = await m.read()
        return reading, list(getattr(m, "last_problems", []))
    finally:
        await m.close()


def _read_and_warn(url: str, **kwargs: Any) -> Reading:
    reading, problems = asyncio.run(_read_once(url, **kwargs))
    for problem in problems:
        click.echo(f"eams: warning: {problem}", err=True)
    return reading


def _fmt(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(reading: Reading) -> Table:
    table = Table(
        title=f"{reading.meter}  driver={reading.driver}  read_at={reading.to_json()['read_at']}",
        title_justify="left",
    )
    headers = ("outlet", "name", "state", "power W", "current A", "voltage V", "energy Wh", "")
    for header in headers:
        table.add_column(header, justify="left" if header in ("name", "state", "") else "right")
    for o in reading.outlets:
        table.add_row(
            str(o.outlet),
            o.name or "",
            o.state or "—",
            _fmt(o.power_w, 1),
            _fmt(o.current_a, 3),
            _fmt(o.voltage_v, 1),
            _fmt(o.energy_wh, 0),
            "below floor" if o.below_floor else "",
        )
    table.add_section()
    total_w, total_wh = _fmt(reading.total_power_w, 1), _fmt(reading.total_energy_wh, 0)
    table.add_row("total", "", "", total_w, "", "", total_wh, "")
    accuracy = "—" if reading.accuracy_pct is None else f"±{reading.accuracy_pct:g} %"
    floor = "—" if reading.floor_w is None else f"{reading.floor_w:g} W"
    table.caption = f"accuracy {accuracy}, outlet floor {floor}; — = not published or failed"
    return table


@meter.command("read")
@_url
@_driver
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@_timeout
@_retries
def read_command(
    url: str, driver: str | None, as_json: bool, timeout_s: float, retries: int
) -> None:
    """Read every outlet of the meter at URL once.

    URL is snmp://[COMMUNITY@]HOST[:PORT], snmpv3://USER@HOST[:PORT]?auth=SHA&priv=AES (keys in
    EAMS_SNMP_AUTH_KEY / EAMS_SNMP_PRIV_KEY) or serial://DEVICE?protocol=sdm120|sdm630|wattsup.
    Values the device does not publish, or that failed, are null / "—", never 0.
    """
    reading = _read_and_warn(url, driver=driver, timeout_s=timeout_s, retries=retries)
    if as_json:
        click.echo(json.dumps(reading.to_json()))
    else:
        Console().print(_table(reading))


@meter.command("check")
@_url
@_driver
@_timeout
@_retries
def check_command(url: str, driver: str | None, timeout_s: float, retries: int) -> None:
    """Compare the sum of outlet power with the device total against the stated accuracy.

    Exits 0 when they agree within the allowed band, 1 when they do not (or the device does
    not publish both, or some outlet's power failed to read). Values that failed to decode are
    named on stderr.
    """
    reading = _read_and_warn(url, driver=driver, timeout_s=timeout_s, retries=retries)
    result = check_reading(reading)
    click.echo(result.summary())
    if not result.ok:
        raise SystemExit(1)


async def _switch_once(url: str, outlet: int, action: str, **kwargs: Any) -> SwitchResult:
    from eams.meter.snmp.switch import switch_outlet  # pysnmp: only when switching

    open_kwargs = {k: kwargs.pop(k) for k in ("driver", "timeout_s", "retries")}
    m = open_meter(url, **open_kwargs)
    try:
        return await switch_outlet(m, outlet, action, **kwargs)
    finally:
        await m.close()


@meter.command("switch")
@_url
@click.option(
    "--outlet",
    type=click.IntRange(min=1),
    required=True,
    help="1-based outlet number, as `eams meter read` shows it.",
)
@click.argument("action", type=click.Choice(["on", "off", "reboot"]))
@click.option(
    "--yes", is_flag=True, help="Confirm: this cuts or restores the power of what the outlet feeds."
)
@click.option("--dry-run", is_flag=True, help="Print what would be set, and set nothing.")
@click.option(
    "--wait-s",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds the state may take to read back as asked (each phase of a reboot).",
)
@_driver
@_timeout
@_retries
def switch_command(
    url: str,
    outlet: int,
    action: str,
    yes: bool,
    dry_run: bool,
    wait_s: float,
    driver: str | None,
    timeout_s: float,
    retries: int,
) -> None:
    """Switch outlet N of the PDU at URL on, off or reboot it, and read its state back.

    URL must carry credentials that may write: snmp://WRITE_COMMUNITY@HOST[:PORT] or
    snmpv3://USER@HOST[:PORT]?auth=SHA&priv=AES (keys in EAMS_SNMP_AUTH_KEY /
    EAMS_SNMP_PRIV_KEY). The OIDs and values set are the family's (meter/snmp/profiles.yaml).
    Without --yes nothing is sent; --dry-run reads the PDU and prints what would be set. The
    switch succeeds only when the outlet's state reads back as asked within --wait-s (a reboot:
    off, then on); otherwise it is an error.
    """
    if not (yes or dry_run):
        raise NotConfirmed(
            f"not switching outlet {outlet} {action}: it cuts or restores the power of whatever "
            "the outlet feeds; add --yes to do it (--dry-run shows what would be set)"
        )
    result = asyncio.run(
        _switch_once(
            url,
            outlet,
            action,
            wait_s=wait_s,
            dry_run=dry_run,
            driver=driver,
            timeout_s=timeout_s,
            retries=retries,
        )
    )
    plan = result.plan
    if not result.sent:
        for line in plan.describe():
            click.echo(line)
        click.echo("dry run: nothing was set")
        return
    label = f' "{plan.name}"' if plan.name else ""
    click.echo(
        f"{plan.meter} ({plan.driver}) outlet {plan.outlet}{label}: {plan.action} done; state "
        f"read back: {result.state} after {result.elapsed_s:.1f} s ({plan.state_oid})"
    )


from eams.meter.simulator.cli import simulate  # noqa: E402

meter.add_command(simulate)

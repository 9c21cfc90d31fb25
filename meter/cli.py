"""``eams meter``: read, check and simulate metered PDUs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from eams.meter.check import check_reading
from eams.meter.open import open_meter
from eams.meter.reading import Reading

_url = click.argument("url")
_driver = click.option(
    "--driver",
    default=None,
    metavar="NAME",
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
    """Read per-outlet power from metered PDUs (SNMP) and serial meters."""


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
        title=f"{reading.meter}  driver={reading.driver}  read_at={reading.read_at.isoformat()}",
        title_justify="left",
    )
    for header in ("outlet", "name", "power W", "current A", "voltage V", "energy Wh", ""):
        table.add_column(header, justify="left" if header in ("name", "") else "right")
    for o in reading.outlets:
        table.add_row(
            str(o.outlet),
            o.name or "",
            _fmt(o.power_w, 1),
            _fmt(o.current_a, 3),
            _fmt(o.voltage_v, 1),
            _fmt(o.energy_wh, 0),
            "below floor" if o.below_floor else "",
        )
    table.add_section()
    table.add_row(
        "total", "", _fmt(reading.total_power_w, 1), "", "", _fmt(reading.total_energy_wh, 0), ""
    )
    accuracy = "—" if reading.accuracy_pct is None else f"±{reading.accuracy_pct:g} %"
    floor = "—" if reading.floor_w is None else f"{reading.floor_w:g} W"
    table.caption = f"accuracy {accuracy}, outlet floor {floor}; — = not published or failed"
    return table


@meter.command("read")
@_url
@_driver
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (the issue-2 contract)."
)
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


from eams.meter.simulator.cli import simulate  # noqa: E402

meter.add_command(simulate)

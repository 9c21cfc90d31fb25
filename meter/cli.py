"""``eams meter``: read, check and simulate metered PDUs."""

import click


@click.group()
def meter() -> None:
    """Read per-outlet power from metered PDUs (SNMP) and serial meters."""


from eams.meter.simulator.cli import simulate  # noqa: E402

meter.add_command(simulate)

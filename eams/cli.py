"""The ``eams`` command: one click group per component; this module only wires them."""

import sys

import click

from eams import __version__
from eams.agent.cli import agent
from eams.calibrate.cli import calibrate
from eams.calibrate.wallpower.cli import wallpower
from eams.demo import demo
from eams.errors import EamsError
from eams.meter.cli import meter
from eams.scheduler.cli import bench, extender


@click.group()
@click.version_option(__version__, prog_name="eams")
def cli() -> None:
    """EAMS: metered power, per-node power models and energy-aware pod placement."""


for group in (meter, calibrate, agent, extender, bench, wallpower, demo):
    cli.add_command(group)


def main() -> None:
    """Console entry point: run :func:`cli`, turning an :class:`EamsError` into one stderr line.

    Exit status 1 on an :class:`EamsError` (no traceback), 2 on a usage error (click).
    """
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except EamsError as exc:
        click.echo(f"eams: error: {exc}", err=True)
        sys.exit(1)

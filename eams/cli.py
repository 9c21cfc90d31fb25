"""The ``eams`` command: one click group per component; this module only wires them.

Groups are imported when they are called, not when ``eams`` starts, so ``eams agent run`` loads
the agent and not the scheduler, scipy or matplotlib.
"""

import importlib
import sys

import click

from eams import __version__
from eams.errors import EamsError

COMMANDS = {
    "meter": "eams.meter.cli:meter",
    "calibrate": "eams.calibrate.cli:calibrate",
    "agent": "eams.agent.cli:agent",
    "extender": "eams.scheduler.cli:extender",
    "bench": "eams.scheduler.cli:bench",
    "power": "eams.scheduler.power.cli:power",
    "wallpower": "eams.calibrate.wallpower.cli:wallpower",
    "demo": "eams.demo.cli:demo",
}
"""Command name → ``module:attribute`` of its click command or group."""


class _LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use (click's documented pattern
    for large command-line applications)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command


@click.group(cls=_LazyGroup)
@click.version_option(__version__, prog_name="eams")
def cli() -> None:
    """EAMS: metered power, per-node power models and energy-aware pod placement."""


def run_cli(command: click.Command, prog_name: str | None = None) -> None:
    """Run ``command`` as a program; an :class:`EamsError` becomes one stderr line.

    Exit status 0 on success, 1 on an :class:`EamsError` (``eams: error: …``, no traceback),
    2 on a usage error (click), 130 when interrupted.
    """
    try:
        command(prog_name=prog_name, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except EamsError as exc:
        click.echo(f"eams: error: {exc}", err=True)
        sys.exit(1)


def main() -> None:
    """Console entry point of ``eams`` (see :func:`run_cli` for exit statuses)."""
    run_cli(cli, "eams")

"""``python -m eams.agent``: the agent's commands (``run``, ``check-config``) alone.

The ``eams`` command imports every component's group (the scheduler, calibrate with scipy and
matplotlib, ...), about 180 MB resident; this entry point loads only what the agent uses, so
the daemon stays small (figures: ``benchmarks/agent_bench.py``). The systemd unit uses it.
Errors are reported as by ``eams``: an :class:`~eams.errors.EamsError` is one stderr line and
exit status 1.
"""

import sys

import click

from eams.agent.cli import agent
from eams.errors import EamsError


def main() -> None:
    """Run the ``agent`` group; an :class:`EamsError` becomes one stderr line, exit 1."""
    try:
        agent(prog_name="python -m eams.agent", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except EamsError as exc:
        click.echo(f"eams: error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()

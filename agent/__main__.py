"""``python -m eams.agent``: the agent's commands (``run``, ``check-config``) alone.

The ``eams`` command imports every component's group (the scheduler, calibrate with scipy and
matplotlib, ...), about 180 MB resident; this entry point loads only what the agent uses, so
the daemon stays small (figures: ``benchmarks/agent_bench.py``). The systemd unit uses it.
Errors are reported as by ``eams``: an :class:`~eams.errors.EamsError` is one stderr line and
exit status 1.
"""

from eams.agent.cli import agent
from eams.cli import run_cli


def main() -> None:
    """Run the ``agent`` group (exit statuses as :func:`eams.cli.run_cli`)."""
    run_cli(agent, "python -m eams.agent")


if __name__ == "__main__":
    main()

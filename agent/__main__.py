"""``python -m eams.agent``: the agent's commands (``run``, ``check-config``) alone.

The ``eams`` command imports every component's group (the scheduler, calibrate with scipy and
matplotlib, ...), about 180 MB resident; this entry point loads only what the agent uses, so
the daemon stays small (figures: ``benchmarks/agent_bench.py``). The systemd unit uses it.
Errors are reported as by ``eams``: an :class:`~eams.errors.EamsError` is one stderr line and
exit status 1.

Run as a program, it routes SIGTERM and SIGINT to the stop request (:mod:`eams.agent.stop`)
before it imports the rest of the agent, so a stop during start-up ends in exit 0, not in
Python's default actions (killed by SIGTERM; a ``KeyboardInterrupt`` traceback for SIGINT).
"""

from eams.agent import stop


def main() -> None:
    """Run the ``agent`` group (exit statuses as :func:`eams.cli.run_cli`)."""
    from eams.agent.cli import agent  # the heavy imports: after stop.install() below
    from eams.cli import run_cli

    run_cli(agent, "python -m eams.agent")


if __name__ == "__main__":
    stop.install()
    main()

"""The runner contract: where a sweep's commands run, and the long-running load it can stop.

A :class:`Runner` runs short commands (``getconf``, ``cat /proc/stat``, ``stress-ng
--version``) and starts one long one, a :class:`Job` (the stress-ng load), which it can always
stop. Stopping is best-effort by design and never raises: a sweep stops its load on every exit
path, and stress-ng's own ``--timeout`` ends it even if this process is killed outright.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

STOP_GRACE_S = 5.0
"""How long a stopped stress-ng may take to print its metrics and exit before SIGKILL."""


class Job(Protocol):
    """A started long-running command (the stress-ng load)."""

    def running(self) -> bool:
        """True while the command has not exited; SweepError if that cannot be known (lost
        connection)."""
        ...

    def stop(self) -> str:
        """Stop the command (SIGINT, then SIGKILL after :data:`STOP_GRACE_S`) and return its
        combined output. Idempotent; never raises."""
        ...


class Runner(Protocol):
    """Where commands run: ``target`` names it in messages (``local``, ``ssh://root@h:22``)."""

    target: str

    def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> str:
        """Run a command to completion and return its stdout.

        Raises
        ------
        SweepError
            Naming the target and command: not found, non-zero exit, timeout, lost connection.
        """
        ...

    def has_program(self, program: str) -> bool:
        """True when ``program`` is on the node's PATH."""
        ...

    def start(self, argv: Sequence[str]) -> Job:
        """Start a long-running command; see :class:`Job`."""
        ...

    def close(self) -> None:
        """Release the connection (idempotent)."""
        ...

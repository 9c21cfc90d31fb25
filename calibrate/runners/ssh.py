"""Run the sweep's commands on a remote node over SSH, the load on a pty.

The connection is the one SSH transport, :class:`eams.ssh.SshClient` (key authentication, host
keys verified against known_hosts); this module adds what a sweep needs of it — the
:class:`~.base.Runner` contract, a long-running command on a pty that can be stopped — and says
every failure as the sweep's :class:`~eams.calibrate.errors.SweepError` (the message unchanged).
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Iterator, Sequence

import paramiko

from eams.calibrate.errors import SweepError
from eams.calibrate.runners.base import STOP_GRACE_S
from eams.ssh import CONNECTION_LOST, SshClient, SshError


@contextlib.contextmanager
def sweep_errors() -> Iterator[None]:
    """Raise an :class:`~eams.ssh.SshError` as a :class:`SweepError` with the same message."""
    try:
        yield
    except SshError as exc:
        raise SweepError(str(exc)) from exc


class SshJob:
    """A command started over SSH on a pseudo-terminal.

    The pty matters for the bad exit paths: when the connection drops, sshd closes it and the
    kernel sends SIGHUP to the command, which stress-ng treats like SIGINT and stops.
    """

    def __init__(self, runner: SshRunner, channel: paramiko.Channel, pid: int) -> None:
        self._runner, self._channel, self.pid = runner, channel, pid
        self._output: str | None = None

    def running(self) -> bool:
        """True while the remote command has not exited.

        Raises
        ------
        SweepError
            If the SSH connection is lost: whether the command still runs is then unknown.
        """
        if not self._runner.connected:
            raise SweepError(f"{self._runner.target}: {CONNECTION_LOST}")
        return not self._channel.exit_status_ready()

    def _read_all(self) -> str:
        chunks = []
        self._channel.settimeout(STOP_GRACE_S)
        try:
            while chunk := self._channel.recv(65536):
                chunks.append(chunk)
        except (TimeoutError, OSError, paramiko.SSHException):
            pass
        return b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")

    def stop(self) -> str:
        """``kill -INT`` the remote command, ``kill -KILL`` after the grace time, and close
        the channel (hanging up its pty); returns the output. Never raises."""
        if self._output is not None:
            return self._output
        for sig in ("INT", "KILL"):
            if not self._runner.connected or self._channel.exit_status_ready():
                break
            # If this fails the process is gone, or the connection is: the pty hang-up stops it.
            with contextlib.suppress(SweepError):
                self._runner.run(["kill", f"-{sig}", str(self.pid)], timeout_s=STOP_GRACE_S)
            deadline = time.monotonic() + STOP_GRACE_S
            while not self._channel.exit_status_ready() and time.monotonic() < deadline:
                time.sleep(0.05)
        self._output = self._read_all()
        self._channel.close()
        return self._output


class SshRunner:
    """Runs on a remote node over an open SSH connection (:class:`eams.ssh.SshClient`, opened
    inside :func:`sweep_errors` so that a refused one is a :class:`SweepError` too)."""

    def __init__(self, client: SshClient) -> None:
        self.target = client.target
        self._ssh = client

    @property
    def connected(self) -> bool:
        """True while the SSH transport is up."""
        return self._ssh.connected

    def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> str:
        """Run to completion; see :meth:`.base.Runner.run`."""
        with sweep_errors():
            return self._ssh.run(argv, timeout_s)

    def has_program(self, program: str) -> bool:
        """True when ``command -v PROGRAM`` finds it in the remote login shell."""
        try:
            self.run(["sh", "-c", f"command -v {shlex.quote(program)}"])
        except SweepError as exc:
            if CONNECTION_LOST in str(exc):
                raise
            return False
        return True

    def start(self, argv: Sequence[str]) -> SshJob:
        """Start ``argv`` on a pty; the shell prints its PID, then ``exec``s the command."""
        with sweep_errors():
            channel = self._ssh.exec(f"echo $$; exec {shlex.join(argv)}", 10.0, pty=True)
        line = b""
        try:
            while not line.endswith(b"\n"):
                chunk = channel.recv(1)
                if not chunk:
                    break
                line += chunk
        except (TimeoutError, OSError, paramiko.SSHException) as exc:
            channel.close()
            raise SweepError(f"{self.target}: could not start {argv[0]}: {exc}") from exc
        if not line.strip().isdigit():
            channel.close()
            raise SweepError(f"{self.target}: could not start {argv[0]}: {line!r}")
        return SshJob(self, channel, int(line))

    def close(self) -> None:
        """Close the SSH connection."""
        self._ssh.close()

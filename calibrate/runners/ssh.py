"""Run the sweep's commands on a remote node over SSH (paramiko), the load on a pty.

Key authentication only (no password, no sudo), and the node's host key must already be in
known_hosts; an unknown key is refused unless the operator explicitly accepts it (then it is
saved, as OpenSSH's ``StrictHostKeyChecking=accept-new`` does); a changed key is always refused.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko

from eams.calibrate.errors import SweepError
from eams.calibrate.runners.base import STOP_GRACE_S


@dataclass(frozen=True, slots=True)
class SshTarget:
    """``USER@HOST[:PORT]`` parsed (IPv6 as ``USER@[::1]:PORT``)."""

    user: str
    host: str
    port: int = 22

    @classmethod
    def parse(cls, text: str) -> SshTarget:
        """Parse ``USER@HOST[:PORT]``.

        Raises
        ------
        SweepError
            If the user or host is missing or the port is not 1–65535.
        """
        match = re.fullmatch(r"([^@\s]+)@(\[[^\]]+\]|[^:@\s]+)(?::(\d+))?", text.strip())
        if not match:
            raise SweepError(f"ssh target {text!r}: expected USER@HOST[:PORT]")
        port = int(match.group(3) or 22)
        if not 0 < port < 65536:
            raise SweepError(f"ssh target {text!r}: port {port} is outside 1-65535")
        return cls(match.group(1), match.group(2).strip("[]"), port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ssh://{self.user}@{host}:{self.port}"


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
            raise SweepError(f"{self._runner.target}: SSH connection lost")
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
    """Runs on a remote node over SSH (paramiko), with key authentication only.

    Parameters
    ----------
    target : SshTarget
    identity : path, optional
        Private key file; default: the user's keys in ``~/.ssh`` and an agent.
    known_hosts : path, optional
        Known-hosts file; default ``~/.ssh/known_hosts``.
    accept_unknown_host : bool
        Accept (and save to ``known_hosts``) a host key not yet known. A key that differs from
        a known one is refused regardless.
    timeout_s : float
        Connect and authentication timeout (s).

    Raises
    ------
    SweepError
        Naming the target: unknown or changed host key, key refused, connection refused or
        timed out.
    """

    def __init__(
        self,
        target: SshTarget,
        *,
        identity: str | Path | None = None,
        known_hosts: str | Path | None = None,
        accept_unknown_host: bool = False,
        timeout_s: float = 10.0,
    ) -> None:
        self.target = str(target)
        known = Path(known_hosts) if known_hosts else Path.home() / ".ssh" / "known_hosts"
        self._client = paramiko.SSHClient()
        if known.is_file():
            self._client.load_host_keys(str(known))
        policy = paramiko.AutoAddPolicy() if accept_unknown_host else paramiko.RejectPolicy()
        self._client.set_missing_host_key_policy(policy)
        try:
            self._client.connect(
                target.host,
                port=target.port,
                username=target.user,
                key_filename=str(identity) if identity else None,
                look_for_keys=identity is None,
                allow_agent=identity is None,
                timeout=timeout_s,
                banner_timeout=timeout_s,
                auth_timeout=timeout_s,
            )
        except paramiko.BadHostKeyException as exc:
            raise SweepError(
                f"{self.target}: host key differs from the one in {known}: refused (if the node "
                "was reinstalled, remove its old key from known_hosts)"
            ) from exc
        except paramiko.AuthenticationException as exc:
            raise SweepError(f"{self.target}: key authentication refused: {exc}") from exc
        except paramiko.SSHException as exc:
            if "known_hosts" in str(exc):
                raise SweepError(
                    f"{self.target}: host key is not in {known}: refused; check the node's key "
                    "and add it (ssh-keyscan), or pass --accept-unknown-host"
                ) from exc
            raise SweepError(f"{self.target}: SSH failed: {exc}") from exc
        except (OSError, EOFError) as exc:
            raise SweepError(f"{self.target}: cannot connect: {exc}") from exc
        if accept_unknown_host:
            try:
                known.parent.mkdir(parents=True, exist_ok=True)
                self._client.save_host_keys(str(known))
            except OSError as exc:
                raise SweepError(f"{self.target}: cannot save the host key to {known}") from exc

    @property
    def connected(self) -> bool:
        """True while the SSH transport is up."""
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    def _exec(self, command: str, timeout_s: float, pty: bool) -> paramiko.Channel:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise SweepError(f"{self.target}: SSH connection lost")
        try:
            channel = transport.open_session(timeout=timeout_s)
            if pty:
                channel.get_pty()
            channel.settimeout(timeout_s)
            channel.exec_command(command)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SweepError(f"{self.target}: SSH connection lost: {exc}") from exc
        return channel

    def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> str:
        """Run to completion; see :meth:`.base.Runner.run`."""
        command = shlex.join(argv)
        channel = self._exec(command, timeout_s, pty=False)
        try:
            stdout = channel.makefile("rb").read().decode(errors="replace")
            stderr = channel.makefile_stderr("rb").read().decode(errors="replace")
            status = channel.recv_exit_status()
        except TimeoutError:
            raise SweepError(
                f"{self.target}: {command!r} timed out after {timeout_s:g} s"
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SweepError(f"{self.target}: SSH connection lost running {command!r}") from exc
        finally:
            channel.close()
        if status == 127:
            raise SweepError(f"{self.target}: {argv[0]} is not installed (PATH)")
        if status != 0:
            raise SweepError(
                f"{self.target}: {command!r} failed (exit {status}): {stderr.strip()[:200]}"
            )
        return stdout

    def has_program(self, program: str) -> bool:
        """True when ``command -v PROGRAM`` finds it in the remote login shell."""
        try:
            self.run(["sh", "-c", f"command -v {shlex.quote(program)}"])
        except SweepError as exc:
            if "SSH connection lost" in str(exc):
                raise
            return False
        return True

    def start(self, argv: Sequence[str]) -> SshJob:
        """Start ``argv`` on a pty; the shell prints its PID, then ``exec``s the command."""
        channel = self._exec(f"echo $$; exec {shlex.join(argv)}", 10.0, pty=True)
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
        self._client.close()

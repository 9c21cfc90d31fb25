"""Run a command on a node over SSH (paramiko): the one SSH transport of EAMS.

Key authentication only (no password, no sudo), and the node's host key must already be in
known_hosts; an unknown key is refused unless the operator explicitly accepts it (then it is
saved, as OpenSSH's ``StrictHostKeyChecking=accept-new`` does); a changed key is always refused.
Its users: the calibration sweep's runner (:mod:`eams.calibrate.runners.ssh`, which adds the
long-running load on a pty) and the power-state actuators (``systemctl`` over SSH).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko

from eams.errors import EamsError

CONNECTION_LOST = "SSH connection lost"
"""Every error of a connection that dropped says this (a caller may tell it apart)."""


class SshError(EamsError):
    """An SSH target is malformed, or connecting, authenticating or running failed; the message
    names the target (and the command)."""


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
        SshError
            If the user or host is missing or the port is not 1–65535.
        """
        match = re.fullmatch(r"([^@\s]+)@(\[[^\]]+\]|[^:@\s]+)(?::(\d+))?", text.strip())
        if not match:
            raise SshError(f"ssh target {text!r}: expected USER@HOST[:PORT]")
        port = int(match.group(3) or 22)
        if not 0 < port < 65536:
            raise SshError(f"ssh target {text!r}: port {port} is outside 1-65535")
        return cls(match.group(1), match.group(2).strip("[]"), port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ssh://{self.user}@{host}:{self.port}"


class SshClient:
    """A connection to a node over SSH (paramiko), with key authentication only.

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
    SshError
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
            raise SshError(
                f"{self.target}: host key differs from the one in {known}: refused (if the node "
                "was reinstalled, remove its old key from known_hosts)"
            ) from exc
        except paramiko.AuthenticationException as exc:
            raise SshError(f"{self.target}: key authentication refused: {exc}") from exc
        except paramiko.SSHException as exc:
            if "known_hosts" in str(exc):
                raise SshError(
                    f"{self.target}: host key is not in {known}: refused; check the node's key "
                    "and add it (ssh-keyscan), or pass --accept-unknown-host"
                ) from exc
            raise SshError(f"{self.target}: SSH failed: {exc}") from exc
        except (OSError, EOFError) as exc:
            raise SshError(f"{self.target}: cannot connect: {exc}") from exc
        if accept_unknown_host:
            try:
                known.parent.mkdir(parents=True, exist_ok=True)
                self._client.save_host_keys(str(known))
            except OSError as exc:
                raise SshError(f"{self.target}: cannot save the host key to {known}") from exc

    @property
    def connected(self) -> bool:
        """True while the SSH transport is up."""
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    def exec(self, command: str, timeout_s: float, *, pty: bool = False) -> paramiko.Channel:
        """Start the shell ``command`` on a new channel (on a pseudo-terminal when ``pty``).

        Raises
        ------
        SshError
            The connection is lost (the message says :data:`CONNECTION_LOST`).
        """
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise SshError(f"{self.target}: {CONNECTION_LOST}")
        try:
            channel = transport.open_session(timeout=timeout_s)
            if pty:
                channel.get_pty()
            channel.settimeout(timeout_s)
            channel.exec_command(command)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SshError(f"{self.target}: {CONNECTION_LOST}: {exc}") from exc
        return channel

    def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> str:
        """Run ``argv`` to completion and return its stdout.

        Raises
        ------
        SshError
            Naming the target and command: not installed (exit 127), a non-zero exit (with
            stderr), a timeout, or the connection lost (``SSH connection lost running …``).
        """
        command = shlex.join(argv)
        channel = self.exec(command, timeout_s)
        try:
            stdout = channel.makefile("rb").read().decode(errors="replace")
            stderr = channel.makefile_stderr("rb").read().decode(errors="replace")
            status = channel.recv_exit_status()
        except TimeoutError:
            raise SshError(f"{self.target}: {command!r} timed out after {timeout_s:g} s") from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise SshError(f"{self.target}: {CONNECTION_LOST} running {command!r}") from exc
        finally:
            channel.close()
        if status == 127:
            raise SshError(f"{self.target}: {argv[0]} is not installed (PATH)")
        if status != 0:
            raise SshError(
                f"{self.target}: {command!r} failed (exit {status}): {stderr.strip()[:200]}"
            )
        return stdout

    def close(self) -> None:
        """Close the SSH connection."""
        self._client.close()

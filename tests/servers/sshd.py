"""Launch OpenSSH's sshd on a free loopback TCP port, with its own host key and one client key.

Everything lives in a temporary directory (ENVIRONMENT.md: ``Port``, ``ListenAddress``,
``HostKey``, ``PidFile``, ``AuthorizedKeysFile`` there, ``PermitRootLogin prohibit-password``,
``PasswordAuthentication no``, ``StrictModes no``, ``UsePAM no``, ``Subsystem sftp
internal-sftp``). The client key is authorised for the current user (root here). sshd runs in
the foreground (``-D``) so stopping the launcher stops it; it is stopped on exit.

Example::

    with sshd() as server:
        client.connect(server.host, server.port, server.user, key_filename=str(server.client_key))
"""

from __future__ import annotations

import contextlib
import getpass
import shlex
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
SSH_KEYGEN = "ssh-keygen"


@dataclass(frozen=True)
class SshServer:
    """A running sshd.

    Attributes
    ----------
    host, port : str, int
        Where it listens (127.0.0.1, a free port).
    user : str
        The user the client key logs in as.
    client_key : Path
        The authorised private key (ed25519, no passphrase).
    known_hosts : Path
        A known_hosts file holding this server's host key (``[127.0.0.1]:PORT ssh-ed25519 …``).
    host_key_line : str
        That known_hosts line.
    log : Path
        sshd's log (``-E``).
    """

    host: str
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    host_key_line: str
    log: Path

    @property
    def target(self) -> str:
        """``USER@HOST:PORT`` for ``eams calibrate sweep --ssh``."""
        return f"{self.user}@{self.host}:{self.port}"


def _free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _banner(port: int) -> bool:
    """True once sshd accepts a connection and sends its ``SSH-2.0`` banner."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            return sock.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def _keygen(path: Path) -> str:
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", "eams-test", "-f", str(path)],
        check=True,
    )
    return path.with_suffix(".pub").read_text().strip()


@contextlib.contextmanager
def sshd(
    *, env: Mapping[str, str] | None = None, start_timeout_s: float = 15.0
) -> Iterator[SshServer]:
    """Run sshd on 127.0.0.1 for the current user, key authentication only.

    Parameters
    ----------
    env : mapping, optional
        Environment variables the client's sessions get (through ``environment="…"`` in
        authorized_keys and ``PermitUserEnvironment``), e.g. a ``PATH`` without a program.
    start_timeout_s : float
        How long to wait for the banner.

    Yields
    ------
    SshServer

    Raises
    ------
    RuntimeError
        When sshd exits early or does not answer in time (its log is in the message).
    """
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation dir
    with tempfile.TemporaryDirectory(prefix="eams-sshd-") as tmp:
        root = Path(tmp)
        host_pub = _keygen(root / "host_ed25519")
        client_pub = _keygen(root / "client_ed25519")
        options = ",".join(f'environment="{key}={value}"' for key, value in (env or {}).items())
        (root / "authorized_keys").write_text(f"{options} {client_pub}\n".lstrip())
        port = _free_tcp_port()
        config = root / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {root / 'host_ed25519'}",
                    f"PidFile {root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {root / 'authorized_keys'}",
                    "PermitRootLogin prohibit-password",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    f"PermitUserEnvironment {'yes' if env else 'no'}",
                    "StrictModes no",
                    "UsePAM no",
                    "Subsystem sftp internal-sftp",
                    "",
                ]
            )
        )
        key_type, key_b64 = host_pub.split()[:2]
        host_line = f"[127.0.0.1]:{port} {key_type} {key_b64}"
        known_hosts = root / "known_hosts"
        known_hosts.write_text(host_line + "\n")
        log = root / "sshd.log"
        args = [str(SSHD), "-D", "-f", str(config), "-E", str(log)]
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + start_timeout_s
            while not _banner(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    text = log.read_text() if log.exists() else ""
                    raise RuntimeError(
                        f"sshd ({shlex.join(args)}) did not answer on 127.0.0.1:{port}: "
                        f"{text[-2000:]}"
                    )
                time.sleep(0.05)
            yield SshServer(
                "127.0.0.1",
                port,
                getpass.getuser(),
                root / "client_ed25519",
                known_hosts,
                host_line,
                log,
            )
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

"""Launch snmpsim 1.2 on a free loopback UDP port, serving ``.snmprec`` recordings.

Each recording answers to the v2c community equal to its file base name (snmpsim's rule). With
``v3_user`` set, the agent also accepts that SNMPv3 authPriv user; snmpsim picks the recording
of a v3 request by its context name (the file base name again), and refuses the empty context,
so v3 URLs name it: ``snmpv3://USER@HOST:PORT?context=NAME``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_BIN = Path(sys.executable).parent / "snmpsim-command-responder"


@dataclass(frozen=True)
class SnmpSim:
    """A running snmpsim: where it listens and what it serves."""

    host: str
    port: int
    data_dir: Path

    def url(self, community: str) -> str:
        """The ``snmp://`` URL for one recording (community = file base name)."""
        return f"snmp://{community}@{self.host}:{self.port}"


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int, community: str) -> bool:
    """True once snmpsim answers a v2c GET of sysObjectID.0 (hand-built BER, no pysnmp)."""
    oid = bytes([0x06, 0x08, 0x2B, 6, 1, 2, 1, 1, 2, 0])
    varbind = bytes([0x30, len(oid) + 2]) + oid + bytes([0x05, 0x00])
    varbinds = bytes([0x30, len(varbind)]) + varbind
    pdu_body = bytes([0x02, 0x01, 0x01, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00]) + varbinds
    pdu = bytes([0xA0, len(pdu_body)]) + pdu_body
    comm = community.encode()
    body = bytes([0x02, 0x01, 0x01, 0x04, len(comm)]) + comm + pdu
    message = bytes([0x30, len(body)]) + body
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.3)
        try:
            sock.sendto(message, ("127.0.0.1", port))
            sock.recvfrom(4096)
        except OSError:
            return False
    return True


@contextlib.contextmanager
def snmpsim(
    recordings: Sequence[Path],
    *,
    v3_user: str | None = None,
    v3_auth_key: str | None = None,
    v3_priv_key: str | None = None,
    v3_auth_proto: str = "SHA",
    v3_priv_proto: str = "AES",
    start_timeout_s: float = 60.0,
) -> Iterator[SnmpSim]:
    """Serve ``recordings`` (``.snmprec`` files) with snmpsim on 127.0.0.1.

    Parameters
    ----------
    recordings : sequence of Path
        Files to serve; each is copied into a temporary data dir under its own name (snmpsim
        resolves symlinks and would name the community after the link's target path).
    v3_user, v3_auth_key, v3_priv_key, v3_auth_proto, v3_priv_proto
        An SNMPv3 authPriv user to accept as well (snmpsim ``--v3-*`` options).
    start_timeout_s : float
        How long to poll for the first answer before giving up.

    Yields
    ------
    SnmpSim

    Raises
    ------
    RuntimeError
        When snmpsim exits early or does not answer in time (its log is in the message).
    """
    if not recordings:
        raise ValueError("snmpsim needs at least one recording")
    with tempfile.TemporaryDirectory(prefix="eams-snmpsim-") as tmp:
        root = Path(tmp)
        data, cache = root / "data", root / "cache"
        data.mkdir()
        cache.mkdir()
        for path in recordings:
            shutil.copyfile(path, data / path.name)
        port = _free_udp_port()
        args = [
            str(_BIN),
            f"--data-dir={data}",
            f"--cache-dir={cache}",
            f"--agent-udpv4-endpoint=127.0.0.1:{port}",
            "--logging-method=stderr",  # into the log file: the startup error, if any
            "--log-level=error",
        ]
        if v3_user:
            args += [
                f"--v3-user={v3_user}",
                f"--v3-auth-key={v3_auth_key}",
                f"--v3-auth-proto={v3_auth_proto}",
                f"--v3-priv-key={v3_priv_key}",
                f"--v3-priv-proto={v3_priv_proto}",
            ]
        log = root / "snmpsim.log"
        env = {**os.environ, "SNMPSIM_ALLOW_ROOT": "true"}
        with log.open("wb") as log_file:
            proc = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT, env=env)
        try:
            probe = recordings[0].stem
            deadline = time.monotonic() + start_timeout_s
            while not _answers(port, probe):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"snmpsim on 127.0.0.1:{port} did not answer: {log.read_text()[-2000:]}"
                    )
                time.sleep(0.2)
            yield SnmpSim("127.0.0.1", port, data)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            shutil.rmtree(cache, ignore_errors=True)

"""A linked pair of pseudo-terminals from socat: two serial devices with stable names.

``socat pty,raw,echo=0,link=DIR/ttyA pty,raw,echo=0,link=DIR/ttyB`` copies every byte written
to one end to the other, like a null-modem cable. A peer (a pymodbus server, a replay of
recorded frames) opens ``ttyA``; the code under test opens ``ttyB``.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT_S = 5.0


@contextmanager
def socat_pty_pair(directory: Path) -> Iterator[tuple[Path, Path]]:
    """Start socat, wait until both links exist, yield ``(ttyA, ttyB)``, then stop socat.

    Raises
    ------
    FileNotFoundError
        If ``socat`` is not installed (callers skip on it).
    RuntimeError
        If the links do not appear within ``START_TIMEOUT_S`` (socat's stderr is included).
    """
    socat = shutil.which("socat")
    if socat is None:
        raise FileNotFoundError("socat is not installed (Debian package socat)")
    tty_a, tty_b = directory / "ttyA", directory / "ttyB"
    process = subprocess.Popen(
        [socat, f"pty,raw,echo=0,link={tty_a}", f"pty,raw,echo=0,link={tty_b}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (tty_a.exists() and tty_b.exists()):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"socat pty pair did not start: {process.stderr.read()!r}")
            time.sleep(0.02)
        yield tty_a, tty_b
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stderr.close()

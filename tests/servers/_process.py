"""A server subprocess on loopback that tests start, wait for, kill, restart and stop."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import httpx
import pytest

S = TypeVar("S", bound="ServerProcess")


class ServerProcess:
    """Run ``argv`` with output to ``log_path``; ready when GET ``ready_url`` answers 2xx.

    Subclasses set ``argv``, ``ready_url`` and ``log_path``, and override :meth:`answers` when
    readiness is not a plain GET (TLS with a CA, a token, no port at all). Usable as a context
    manager; :meth:`stop` is idempotent, so fixtures can always call it in their finalizer.
    """

    argv: list[str]
    ready_url: str
    log_path: Path
    start_timeout_s = 30.0

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] | None = None  # the process's environment; None: ours

    def start(self) -> None:
        """Start the server and wait until it answers.

        Raises
        ------
        RuntimeError
            It exited or did not answer within ``start_timeout_s``; names the log file and
            quotes its last lines.
        """
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env
            )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.argv[0]} exited ({self.process.returncode}); see {self.log_path}"
                    f"{self.log_tail()}"
                )
            if self.answers():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(
            f"{self.argv[0]} did not answer {self.ready_url}; see {self.log_path}{self.log_tail()}"
        )

    def answers(self) -> bool:
        """True once the server serves: GET ``ready_url`` answers 2xx."""
        try:
            return httpx.get(self.ready_url, timeout=1.0).is_success
        except httpx.TransportError:
            return False  # not listening yet

    def log_tail(self, lines: int = 30) -> str:
        """The log's last ``lines`` lines, quoted after a newline ("" when there is no log)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        tail = "\n".join(text.splitlines()[-lines:])
        return f"\n--- last lines of {self.log_path.name} ---\n{tail}" if tail else ""

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown) and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; idempotent."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@contextmanager
def fresh(make: Callable[[Path], S], root: Path, binary: str | None, package: str) -> Iterator[S]:
    """A fresh server with its files in ``root`` (created), started and, whatever the test
    did, stopped; the test is skipped when ``binary`` is not installed (Debian ``package``)."""
    if binary is None:
        pytest.skip(f"{package} is not installed (Debian package {package})")
    root.mkdir()
    server = make(root)
    with server:
        yield server

"""Run the sweep's commands on this machine (subprocess), the load in its own session."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence

from eams.calibrate.errors import SweepError
from eams.calibrate.runners.base import STOP_GRACE_S


class LocalJob:
    """A command started in its own session, so a Ctrl-C at the terminal reaches only us and
    we decide how it stops, and the whole process group (stress-ng's workers) can be signalled.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None) -> None:
        self._proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
        self.pid = self._proc.pid
        self._output: str | None = None

    def running(self) -> bool:
        """True while the command has not exited."""
        return self._proc.poll() is None

    def stop(self) -> str:
        """SIGINT to the process group, SIGKILL after the grace time; returns the output."""
        if self._output is not None:
            return self._output
        for sig in (signal.SIGINT, signal.SIGKILL):
            if self._proc.poll() is not None:
                break
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                break
            try:
                self._proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # any worker left behind by a dead parent
        self._proc.wait()
        assert self._proc.stdout is not None
        self._output = self._proc.stdout.read()
        self._proc.stdout.close()
        return self._output


class LocalRunner:
    """Runs on this machine.

    Parameters
    ----------
    env : mapping, optional
        Environment for the commands (default: ours); its ``PATH`` is where programs are found.
    """

    target = "local"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = env

    def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> str:
        """Run to completion; see :meth:`.base.Runner.run`."""
        command = shlex.join(argv)
        try:
            done = subprocess.run(
                list(argv),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=None if self._env is None else dict(self._env),
                check=False,
            )
        except FileNotFoundError:
            raise SweepError(f"{self.target}: {argv[0]} is not installed (PATH)") from None
        except subprocess.TimeoutExpired:
            raise SweepError(
                f"{self.target}: {command!r} timed out after {timeout_s:g} s"
            ) from None
        if done.returncode != 0:
            raise SweepError(
                f"{self.target}: {command!r} failed (exit {done.returncode}): "
                f"{done.stderr.strip()[:200]}"
            )
        return done.stdout

    def has_program(self, program: str) -> bool:
        """True when ``program`` is on this runner's PATH."""
        path = (self._env if self._env is not None else os.environ).get("PATH", os.defpath)
        return shutil.which(program, path=path) is not None

    def start(self, argv: Sequence[str]) -> LocalJob:
        """Start ``argv`` in its own session."""
        return LocalJob(argv, self._env)

    def close(self) -> None:
        """Nothing to release."""

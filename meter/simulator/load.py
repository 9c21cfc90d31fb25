"""Load sources that drive a virtual outlet: anything callable returning a utilisation."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from eams.procstat import PROC_STAT, CpuTimes, utilisation_between

LoadSource = Callable[[], float | None]
"""A zero-argument callable returning utilisation in [0, 1], or ``None`` when unknown (the
outlet then keeps its previous load)."""


class HostCpuLoad:
    """This machine's CPU utilisation since the previous call, from ``/proc/stat``.

    Parameters
    ----------
    path : Path, optional
        The ``/proc/stat`` file to read (a fixture in tests).

    Notes
    -----
    The first call measures from construction time. Returns ``None`` when no tick elapsed
    between calls (see :func:`eams.procstat.utilisation_between`). Thread-safe.

    Raises
    ------
    eams.errors.ProcStatError
        If the file cannot be read or parsed (on construction or on a call).
    """

    def __init__(self, path: Path = PROC_STAT) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._previous = CpuTimes.read(path)

    def __call__(self) -> float | None:
        """Utilisation (fraction in [0, 1]) since the previous call, or ``None``."""
        now = CpuTimes.read(self._path)
        with self._lock:
            start, self._previous = self._previous, now
        return utilisation_between(start, now)

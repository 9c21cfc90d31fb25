"""CPU utilisation from ``/proc/stat`` deltas, locally or from text read on a remote node, and
one process's (or thread's) CPU time from ``/proc/PID/stat``.

Source: proc(5), "/proc/stat": the ``cpu`` line gives cumulative time in USER_HZ units spent in
user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice. Busy time excludes
idle and iowait; guest and guest_nice are already counted in user and nice, so they are not
added again. *Steal* is time a hypervisor ran another guest while this one had work to run: it
is counted busy (the CPU was not ours to use) and kept apart so that a calibration can tell a
contended virtual machine (:func:`steal_between`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from eams.errors import ProcStatError

PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """Cumulative CPU time of all CPUs, in USER_HZ ticks.

    Attributes
    ----------
    busy_ticks, total_ticks : int
        Ticks spent busy (user + nice + system + irq + softirq + steal) and in total
        (busy + idle + iowait).
    steal_ticks : int
        Of the busy ticks, those stolen by the hypervisor (0 where unknown).
    """

    busy_ticks: int
    total_ticks: int
    steal_ticks: int = 0

    @classmethod
    def parse(cls, text: str, source: str = "/proc/stat") -> CpuTimes:
        """Parse the aggregate ``cpu`` line of a ``/proc/stat`` text.

        Raises
        ------
        ProcStatError
            If there is no aggregate ``cpu`` line or it has fewer than 8 numeric columns;
            the message names ``source``.
        """
        for line in text.splitlines():
            columns = line.split()
            if columns and columns[0] == "cpu":
                try:
                    user, nice, system, idle, iowait, irq, softirq, steal = map(int, columns[1:9])
                except ValueError:
                    raise ProcStatError(f"{source}: malformed cpu line {line!r}") from None
                busy = user + nice + system + irq + softirq + steal
                return cls(busy_ticks=busy, total_ticks=busy + idle + iowait, steal_ticks=steal)
        raise ProcStatError(f"{source}: no aggregate 'cpu' line")

    @classmethod
    def read(cls, path: Path = PROC_STAT) -> CpuTimes:
        """Read and parse this machine's ``/proc/stat`` (or ``path``, for tests)."""
        try:
            text = path.read_text()
        except OSError as exc:
            raise ProcStatError(f"{path}: {exc.strerror or exc}") from exc
        return cls.parse(text, str(path))


def utilisation_between(start: CpuTimes, end: CpuTimes) -> float | None:
    """Fraction of CPU time busy between two snapshots, in [0, 1].

    Returns ``None`` (not 0) when no time elapsed or the counters went backwards (a reboot, a
    wrapped counter): the utilisation over that interval is unknown.
    """
    elapsed = end.total_ticks - start.total_ticks
    busy = end.busy_ticks - start.busy_ticks
    if elapsed <= 0 or busy < 0:
        return None
    return min(1.0, busy / elapsed)


def steal_between(start: CpuTimes, end: CpuTimes) -> float | None:
    """Fraction of CPU time stolen by the hypervisor between two snapshots, in [0, 1].

    Returns ``None`` (not 0) when no time elapsed or a counter went backwards.
    """
    elapsed = end.total_ticks - start.total_ticks
    stolen = end.steal_ticks - start.steal_ticks
    if elapsed <= 0 or stolen < 0:
        return None
    return min(1.0, stolen / elapsed)


def process_cpu_s(pid: int | str, task: int | None = None) -> float:
    """User + system CPU time (s) of process ``pid`` (or ``"self"``), or of its thread ``task``.

    Source: proc(5), "/proc/PID/stat": fields 14 and 15 (``utime``, ``stime``) in clock ticks
    (``SC_CLK_TCK``, 100 a second here: a 10 ms resolution). The command name (field 2) may
    hold spaces and parentheses, so the fields are counted from its closing ``)``.

    Raises
    ------
    OSError
        No such process (or thread), or ``/proc`` unreadable.
    """
    path = f"/proc/{pid}/stat" if task is None else f"/proc/{pid}/task/{task}/stat"
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


_CLK_TCK = os.sysconf("SC_CLK_TCK")

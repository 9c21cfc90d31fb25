"""Errors of the benchmark harness::

    eams.scheduler.errors.SchedulerError
    └── BenchError
        ├── TraceError        a workload trace is unusable (names the file, row and column)
        ├── ManifestError     an invalid sweep manifest (names the field, e.g. unknown scheduler)
        ├── LoadError         an offered load ρ cannot be reached with this workload and cluster
        ├── ClusterError      the simulated cluster cannot be built (no server matches the filter)
        ├── SweepError        a sweep cannot run or resume (no Dask scheduler at the address,
        │                     OUT/cells.jsonl written for another manifest)
        └── ExtenderCallError an extender call kube-scheduler would count as failed (kube_wire.py)

Each message names what was wrong and where, so that the CLI can print it as one line.
"""

from eams.scheduler.errors import SchedulerError


class BenchError(SchedulerError):
    """Base class of the harness's deliberate errors."""


class TraceError(BenchError, ValueError):
    """A trace file is missing, lacks a column, or has a bad row (named by its line number)."""


class ManifestError(BenchError, ValueError):
    """A sweep manifest does not validate; the message names the offending field."""


class LoadError(BenchError, ValueError):
    """The requested offered load ρ cannot be reached with the given workload and cluster."""


class ClusterError(BenchError, ValueError):
    """The simulated cluster cannot be built from the requested servers and parameters."""


class SweepError(BenchError):
    """A sweep cannot run or resume: the engine is missing or its scheduler cannot be reached,
    or the output folder's ``cells.jsonl`` is not this manifest's."""


class ExtenderCallError(BenchError):
    """An extender call kube-scheduler would count as failed: transport, timeout, a status
    other than 200, an answer Go cannot decode, or a non-empty ``Error``."""

"""The root of every error EAMS raises on purpose.

Each component has its own ``errors.py`` whose classes derive from :class:`EamsError`::

    EamsError
    ├── eams.meter.errors.MeterError
    ├── eams.calibrate.errors.CalibrationError
    ├── eams.agent.errors.AgentError
    ├── eams.scheduler.errors.SchedulerError
    ├── eams.demo.errors.DemoError
    └── ProcStatError              /proc/stat missing or malformed (names the source and line)

The CLI catches :class:`EamsError` at its edge and prints one line on stderr, no traceback,
exit status 1. Anything else escaping is a bug.
"""


class EamsError(Exception):
    """Base class of all deliberate EAMS errors; the message is meant for an operator."""


class ProcStatError(EamsError):
    """``/proc/stat`` (local or fetched from a node) is missing or malformed; names the source."""

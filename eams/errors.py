"""The root of every error EAMS raises on purpose.

Each component has its own ``errors.py`` whose classes derive from :class:`EamsError`::

    EamsError
    ├── eams.meter.errors.MeterError
    ├── eams.calibrate.errors.CalibrationError
    ├── eams.actuators.errors.PowerStateError
    ├── eams.agent.errors.AgentError
    ├── eams.scheduler.errors.SchedulerError
    ├── eams.demo.errors.DemoError
    ├── eams.kube.errors.KubeError  the Kubernetes layer: a malformed object, no configuration
    ├── eams.ssh.SshError          an SSH target malformed, a connection or command failed
    ├── ProcStatError              /proc/stat missing or malformed (names the source and line)
    └── TelemetryError             a telemetry sample breaks its contract (names the key)

The CLI catches :class:`EamsError` at its edge and prints one line on stderr, no traceback,
exit status 1. Anything else escaping is a bug.
"""


class EamsError(Exception):
    """Base class of all deliberate EAMS errors; the message is meant for an operator."""


class ProcStatError(EamsError):
    """``/proc/stat`` (local or fetched from a node) is missing or malformed; names the source."""


class TelemetryError(EamsError, ValueError):
    """A telemetry sample breaks the contract of :mod:`eams.telemetry`.

    Attributes
    ----------
    key : str or None
        The key at fault (``"power_cap_w"``), or ``None`` when the record as a whole is (not an
        object; ``source`` without ``power_w`` or the reverse).
    detail : str
        What is wrong, phrased to follow the key (``"1.5 is outside [0, 1]"``), so each reader
        can say where: ``samples[3].utilisation: 1.5 is outside [0, 1]``.
    """

    def __init__(self, message: str, *, key: str | None, detail: str) -> None:
        super().__init__(message)
        self.key = key
        self.detail = detail

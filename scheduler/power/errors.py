"""Errors of the power manager::

EamsError
└── SchedulerError
    └── PowerManagerError        the power manager could not see or change the cluster
        ├── ManagerConfigError   its configuration is malformed (names the field); also a
        │                        ``ValueError``
        └── KubeApiError         the Kubernetes API did not answer, refused, or answered
                                 something else (names the request and the server)

The power-state actions' errors (:mod:`eams.actuators.errors`) reach the manager as
the :class:`~eams.actuators.transitions.Transition` of the action, not as errors.
"""

from eams.scheduler.errors import SchedulerError


class PowerManagerError(SchedulerError):
    """Base class of every power-manager failure."""


class ManagerConfigError(PowerManagerError, ValueError):
    """The manager's configuration (file or option) is malformed; the message names the field."""


class KubeApiError(PowerManagerError):
    """A Kubernetes API request failed; ``status`` is the HTTP status when there was one.

    Attributes
    ----------
    status : int or None
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

"""Errors of the power-state actuators (also raised by the power-state measurement)::

EamsError
└── PowerStateError            a power action or power-state measurement failed (names the node)
    ├── InventoryError     the power inventory is malformed or lacks the node (names field)
    ├── PowerRefused       a safety rule refused the action before anything was done (says
    │   │                  which rule and why, and whether ``--force`` overrides it)
    │   └── ClusterUnreachable  the Kubernetes API could not say what runs on the node
    └── PowerActionFailed  the action was attempted and failed (SSH, Wake-on-LAN, outlet,
                           a read-back); says what was done and the state it left

The meter's own errors (``UnknownOutlet``, ``WriteRefused``, ``SwitchUnsupported``,
``ReadBackDiffers``, ``BadMacAddress``...) reach callers as :class:`PowerActionFailed` raised
from them, with the node named; the SSH transport's :class:`~eams.ssh.SshError` likewise.
"""

from eams.errors import EamsError


class PowerStateError(EamsError):
    """Base class of every power-action and power-state failure."""


class InventoryError(PowerStateError, ValueError):
    """The power inventory is malformed, or has no such node; the message names the field."""


class PowerRefused(PowerStateError):
    """A safety rule refused the action; nothing was done.

    Attributes
    ----------
    forceable : bool
        True when ``--force`` overrides this rule (pods on the node, an unreachable API);
        False for the rules that nothing overrides (the PDU owner, the k3s server).
    """

    def __init__(self, message: str, *, forceable: bool) -> None:
        super().__init__(message)
        self.forceable = forceable


class ClusterUnreachable(PowerRefused):
    """The Kubernetes API could not be reached or answered wrongly: what runs on the node is
    unknown, so switching it off is refused (``--force`` overrides)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, forceable=True)


class PowerActionFailed(PowerStateError):
    """The action was attempted and did not complete; the message says where it stopped."""

"""Errors of the agent package::

    EamsError
    └── AgentError
        ├── ConfigError     the YAML file is unreadable or invalid; lists every bad field by its
        │                   path (``sinks[1].url``), or names the calibration file of another node
        └── SinkError       one write to a sink failed; ``retryable`` says whether the same batch
                            may succeed later (connection refused, 5xx, 429) or never will (400:
                            the server rejects the points), ``retry_after_s`` echoes the server's
                            ``Retry-After`` when it sent one

A :class:`SinkError` never escapes the agent: the sink's channel spools the batch (retryable)
or drops and counts it (not retryable). Spool trouble (a full disk) is counted, not raised.
"""

from __future__ import annotations

from eams.errors import EamsError


class AgentError(EamsError):
    """Base class of every agent failure."""


class ConfigError(AgentError, ValueError):
    """The agent configuration is invalid; the message lists each bad field with its path."""


class SinkError(AgentError):
    """A write to a sink failed.

    Parameters
    ----------
    message : str
        What failed, naming the sink and its URL or path.
    retryable : bool
        True when the same batch may succeed later (server down, 5xx, 429, timeouts).
    retry_after_s : float or None
        The server's ``Retry-After`` hint (s), when given.
    """

    def __init__(self, message: str, *, retryable: bool, retry_after_s: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s

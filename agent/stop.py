"""The agent's stop request: SIGTERM and SIGINT set one event, from as early as possible.

Before a handler is installed, the default SIGTERM action kills the process at once (a shell
shows status 143 = 128 + 15; systemd.service(5) counts it a clean stop) and Python's SIGINT
handler raises ``KeyboardInterrupt`` wherever the main thread is, a traceback in the middle of
an import. ``python -m eams.agent`` therefore calls
:func:`install` before it imports the rest of the agent (click, pydantic, prometheus_client,
httpx: about 0.3 s, more on a loaded machine), and ``run`` calls it again (idempotent) for the
``eams agent run`` path. A stop requested while the agent starts is honoured as soon as it can
be: ``run`` exits 0 without starting, or the tick loop ends at once and everything is flushed.
Only the interpreter's own start-up, before any agent code runs, is left to the default action.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

#: Set by SIGTERM or SIGINT once :func:`install` ran; never cleared (one agent per process).
_REQUESTED = threading.Event()


def install() -> threading.Event:
    """Route SIGTERM and SIGINT to the stop request; idempotent. Main thread only.

    Returns
    -------
    threading.Event
        Set when either signal arrives (also if it arrived before this call, after an
        earlier one).
    """
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _request)
    return _REQUESTED


def _request(signum: int, frame: FrameType | None) -> None:
    _REQUESTED.set()

"""Errors of the demo::

EamsError
└── DemoError   the demo cannot run as asked: its output folder cannot be written, or one of
                its services (the extender, an agent) did not start; names what and where

Errors of the components the demo drives (a sweep's ``SweepError``, a meter's ``MeterError``,
the wall-power check's ``WallPowerError``) reach the CLI unchanged; the CLI prints any of them
as one ``eams: error: …`` line, exit status 1, after everything the demo started is stopped.
"""

from eams.errors import EamsError


class DemoError(EamsError):
    """The demo cannot run as asked; the message names what failed and where."""

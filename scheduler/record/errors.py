"""Errors of the decision record::

    eams.scheduler.errors.SchedulerError
    └── RecordError
        ├── RecordConfigError   a writer setting is unusable, or the record folder cannot be
        │                       opened or is already written by another process (names it)
        ├── RecordReadError     a record path is missing or unreadable, or an extender did not
        │                       serve the record (names the path or URL)
        └── NoDecision          nothing on record for the pod or node asked about

The writer never raises once started: a full queue, a full disk or a failed write drops records
and counts them (``eams_record_dropped_total{reason}``).
"""

from eams.scheduler.errors import SchedulerError


class RecordError(SchedulerError):
    """Base class of the decision record's deliberate errors."""


class RecordConfigError(RecordError, ValueError):
    """A writer setting is out of range or the record folder cannot be used; names which."""


class RecordReadError(RecordError):
    """A record file, folder or extender endpoint cannot be read; names the path or URL."""


class NoDecision(RecordError):
    """The record holds nothing about the pod or node asked about; names it and where."""

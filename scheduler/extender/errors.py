"""Errors of the kube-scheduler extender::

    eams.scheduler.errors.SchedulerError
    └── ExtenderError
        ├── BadRequest          a request kube-scheduler or an agent sent is unusable → HTTP 400
        ├── PayloadTooLarge     the body exceeds ``Settings.max_body_bytes`` → HTTP 413
        ├── StepAside           active but blind to the nodes → HTTP 503, kube-scheduler falls back
        └── ExtenderConfigError a bad setting or calibration folder (names the setting)

Every message names what was wrong and where (a JSON path such as
``Pod.spec.containers[0].resources.requests.cpu`` or ``samples[3].node``). A bad quantity in a
pod or node comes from the Kubernetes layer as ``eams.kube.errors.BadObject`` and is translated
at the extender's calls of it (:func:`bad_request`).
"""

from collections.abc import Iterator
from contextlib import contextmanager

from eams.kube.errors import BadObject
from eams.scheduler.errors import SchedulerError


class ExtenderError(SchedulerError):
    """Base class of the extender's deliberate errors."""


class BadRequest(ExtenderError):
    """The request body is malformed or has a wrong type; answered with HTTP 400."""


class PayloadTooLarge(ExtenderError):
    """The request body is larger than the configured limit; answered with HTTP 413."""


class StepAside(ExtenderError):
    """Active mode cannot judge the nodes (watch down, none known); answered with HTTP 503 so
    kube-scheduler's ignorable fallback takes over (issue 15)."""


class ExtenderConfigError(ExtenderError):
    """A setting or the calibration folder is unusable; names the setting or file."""


@contextmanager
def bad_request() -> Iterator[None]:
    """Translate the Kubernetes layer's :class:`~eams.kube.errors.BadObject` (a bad quantity
    or field in a pod or node the extender was sent) into :class:`BadRequest`, the message —
    which names the field's JSON path — unchanged."""
    try:
        yield
    except BadObject as exc:
        raise BadRequest(str(exc)) from exc

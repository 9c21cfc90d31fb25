"""Errors of the Kubernetes layer::

    EamsError
    └── KubeError
        ├── BadObject           an object (or a field of it) is not what the API publishes: a
        │   │                   quantity breaking the grammar, a negative request, a wrong type;
        │   │                   names the field's JSON path; also a ``ValueError``
        │   └── BadQuantity     the field is a resource quantity
        ├── KubeConfigError     no client configuration could be loaded (names where it looked)
        └── ApiUnreachable      the API did not answer, refused (the HTTP status), or answered
                                something else than the kind asked for (names the server)

Callers translate at their edge: the extender answers a :class:`BadObject` in a request with
HTTP 400 (``eams.scheduler.extender.errors.BadRequest``, the message unchanged), the power-state
safety check reports a :class:`KubeConfigError` or an :class:`ApiUnreachable` as
``ClusterUnreachable`` (a refusal), the power manager an :class:`ApiUnreachable` as its
``KubeApiError``.
"""

from eams.errors import EamsError


class KubeError(EamsError):
    """Base class of the Kubernetes layer's deliberate errors."""


class BadObject(KubeError, ValueError):
    """An object or one of its fields is malformed; the message starts with ``field: ``.

    Attributes
    ----------
    field : str
        JSON path of the field at fault (``Pod.spec.containers[0].resources.requests.cpu``).
    """

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field


class BadQuantity(BadObject):
    """A resource quantity breaks apimachinery's grammar, or is negative where an amount is."""


class KubeConfigError(KubeError):
    """No Kubernetes client configuration: the kubeconfig is missing, not YAML or without a
    current context, and no in-cluster account either."""


class ApiUnreachable(KubeError):
    """The Kubernetes API did not answer, refused the request, or answered something that is
    not what was asked for; the message names the server and the request."""

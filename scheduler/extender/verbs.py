"""The two calls on kube-scheduler's critical path, ``/filter`` and ``/prioritize``: bytes in,
status and bytes out, with no web framework and no model validation on the way.

kube-scheduler schedules one pod at a time and makes these calls inside that pod's cycle
(reference §2.7), so their cost is the scheduler's throughput. With ``nodeCacheCapable: true``
a request is ``{"Pod": <v1.Pod>, "Nodes": null, "NodeNames": [...]}``; of the pod only
``metadata.name``, ``namespace`` and ``uid`` are needed when the pod watch already announced
it, so the body is decoded with msgspec into just those fields and the names (unknown keys are
skipped without being built). A pod the watch has not announced yet is then validated on its
own (pydantic ``PodObject``); anything else — full ``Nodes`` payloads, anything msgspec
refuses — takes the validated path (``schemas.parse_args``, pydantic), which also writes the
400 that names every bad key. Answers:

* 200 with ``ExtenderFilterResult`` (every key present) or the bare ``HostPriorityList``:
  only the nodes scoring 10 (``encode_deciding``), or every candidate with
  ``--prioritize-answer all`` (``HostPriorityEncoder``);
* 400 ``{"Error": "<json path>: <what>"}`` for a bad request, 413 for a body over the limit;
* 503 ``{"Error": "eams: stepping aside: <why>"}`` when active but blind (``StepAside``):
  kube-scheduler counts the call as failed, so with ``ignorable: true`` every node passes the
  filter and the extender's scores are left out — the default placement;
* an unexpected fault fails open: 200 with every input node passing, or ``[]`` (no opinion).
"""

from __future__ import annotations

import logging

import msgspec
from pydantic import ValidationError

from eams.kube.pods import pod_key
from eams.scheduler.extender.errors import BadRequest, StepAside
from eams.scheduler.extender.metrics import ExtenderMetrics
from eams.scheduler.extender.schemas import (
    ExtenderArgs,
    ExtenderFilterResult,
    HostPriorityEncoder,
    PodObject,
    encode_deciding,
    parse_args,
)
from eams.scheduler.extender.service import Extender
from eams.validation import describe_validation_error

log = logging.getLogger(__name__)

JSON = b"application/json"
_NULL = msgspec.Raw(b"null")


class _Meta(msgspec.Struct):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None


class _PodRef(msgspec.Struct):
    metadata: _Meta | None = None


class _Envelope(msgspec.Struct):
    """``ExtenderArgs`` as far as the names-only path reads it (upstream key names)."""

    Pod: msgspec.Raw = _NULL
    Nodes: msgspec.Raw = _NULL
    NodeNames: msgspec.Raw = _NULL


_decode = msgspec.json.Decoder(_Envelope).decode
_decode_pod = msgspec.json.Decoder(_PodRef).decode
_decode_names = msgspec.json.Decoder(list[str]).decode


class NameLists:
    """``NodeNames`` of the last request, decoded once while its bytes repeat.

    kube-scheduler sends the same candidate list pod after pod: comparing the raw bytes (one
    ``memcmp``) replaces decoding 1,000 strings, comparing them with the last list and
    de-duplicating them, and the list handed out is the same object every time, so each
    cache below it (columns, candidate set, answer pieces) holds by identity.
    """

    def __init__(self) -> None:
        self._raw: msgspec.Raw | None = None
        self._names: list[str] = []

    def __call__(self, raw: msgspec.Raw) -> list[str]:
        """Every name of ``raw`` once, in order (kube-scheduler adds up a host listed twice).

        Raises
        ------
        msgspec.DecodeError, msgspec.ValidationError
            Not a JSON list of strings.
        """
        if raw != self._raw:
            self._names = list(dict.fromkeys(_decode_names(raw)))
            self._raw = raw
        return self._names


_encode = msgspec.json.Encoder().encode


class _Request(msgspec.Struct):
    key: str
    uid: str | None
    names: list[str]
    pod: bytes  # the pod's JSON, read whole only when the watch has not announced it

    def args(self) -> ExtenderArgs:
        """The request as ``ExtenderArgs``, the pod validated (``NodeNames`` already are).

        Raises
        ------
        BadRequest
            The pod breaks the model (every bad key named).
        """
        try:
            pod = PodObject.model_validate_json(self.pod)
        except ValidationError as exc:
            raise BadRequest(describe_validation_error(exc, root="Pod")) from None
        return ExtenderArgs.model_construct(Pod=pod, Nodes=None, NodeNames=self.names)


def _names_only(body: bytes, name_lists: NameLists) -> _Request | None:
    """The names-only request (pod key, uid, ``NodeNames`` each once), ``None`` for any other
    shape."""
    try:
        envelope = _decode(body)
        if envelope.Pod == _NULL or envelope.NodeNames == _NULL or envelope.Nodes != _NULL:
            return None
        meta = _decode_pod(envelope.Pod).metadata
        if meta is None or not meta.name:
            return None
        names = name_lists(envelope.NodeNames)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    key = pod_key(meta.namespace, meta.name, meta.uid)
    return _Request(key, meta.uid or None, names, bytes(envelope.Pod))


def _filter_answer(kept: list[str], failed: dict[str, str]) -> bytes:
    """The names-only ``ExtenderFilterResult`` (every key present)."""
    return _encode(
        {
            "Nodes": None,
            "NodeNames": kept,
            "FailedNodes": dict(sorted(failed.items())),
            "FailedAndUnresolvableNodes": {},
            "Error": "",
        }
    )


def _error(status: int, message: str) -> tuple[int, bytes]:
    return status, _encode({"Error": message})


class Verbs:
    """Answers the two verbs for one :class:`~.service.Extender`.

    Parameters
    ----------
    extender : Extender
    metrics : ExtenderMetrics
    """

    def __init__(self, extender: Extender, metrics: ExtenderMetrics) -> None:
        self.extender = extender
        self.metrics = metrics
        self.encode_priorities = (
            encode_deciding
            if extender.settings.prioritize_answer == "deciding"
            else HostPriorityEncoder().encode
        )
        self.name_lists = NameLists()
        self._passing: tuple[list[str] | None, bytes] = (None, b"")

    def answer(self, path: str, body: bytes) -> tuple[int, bytes]:
        """Status and JSON body of ``POST path`` (``/filter`` or ``/prioritize``)."""
        verb = self.filter if path == "/filter" else self.prioritize
        try:
            return 200, verb(body)
        except BadRequest as exc:
            self.metrics.errors.labels(path, "bad_request").inc()
            return _error(400, str(exc))
        except StepAside as exc:
            self.metrics.stepped_aside.labels(path).inc()
            return _error(503, f"eams: stepping aside: {exc}")

    def filter(self, body: bytes) -> bytes:
        """``/filter``: the names-only path, else the validated one.

        Raises
        ------
        BadRequest, StepAside
        """
        fast = _names_only(body, self.name_lists)
        try:
            answer = (
                None if fast is None else self.extender.filter_names(fast.key, fast.uid, fast.names)
            )
            if answer is not None:
                kept, failed = answer
                if not failed:  # every node passes (the usual answer): prepared once per list
                    if kept is not self._passing[0]:
                        self._passing = (kept, _filter_answer(kept, {}))
                    return self._passing[1]
                return _filter_answer(kept, failed)
            args = fast.args() if fast is not None else parse_args(body)
            return self.extender.filter(args).model_dump_json().encode()
        except (BadRequest, StepAside):
            raise
        except Exception:
            args = parse_args(body)
            passing = ExtenderFilterResult(
                Nodes=args.Nodes,
                NodeNames=args.NodeNames,
                FailedNodes={},
                FailedAndUnresolvableNodes={},
            )
            log.exception("/filter failed; every input node passes (fail open)")
            self.metrics.errors.labels("/filter", "internal").inc()
            self.metrics.fallbacks.labels("internal").inc()
            return passing.model_dump_json().encode()

    def prioritize(self, body: bytes) -> bytes:
        """``/prioritize``: from the pod's clearing row when the pod is known by key, else the
        validated path.

        Raises
        ------
        BadRequest, StepAside
        """
        fast = _names_only(body, self.name_lists)
        try:
            if fast is not None:
                scores = self.extender.prioritize_names(fast.key, fast.uid, fast.names)
                if scores is not None:
                    return self.encode_priorities(fast.names, scores)
            names, scores = self.extender.prioritize(
                fast.args() if fast is not None else parse_args(body)
            )
            return self.encode_priorities(names, scores)
        except (BadRequest, StepAside):
            raise
        except Exception:
            log.exception("/prioritize failed; answering no opinion")
            self.metrics.errors.labels("/prioritize", "internal").inc()
            self.metrics.fallbacks.labels("internal").inc()
            return b"[]"

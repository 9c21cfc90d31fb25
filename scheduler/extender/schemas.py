"""The kube-scheduler extender v1 wire types, with the upstream Go field names.

Source: kubernetes/kube-scheduler ``extender/v1/types.go`` (TYPES) and its ``types_test.go``
(the pinned JSON), summarised in ``../shared/reference/extender-protocol.md`` §1. The Go structs
carry no ``json`` tags and no ``omitempty``, so keys are the capitalised field names and an unset
pointer, map or slice travels as ``null``; the embedded ``v1.Pod``/``v1.NodeList`` use the normal
lowerCamelCase API keys. Unknown keys are ignored everywhere (Go's decoder does the same).

Node objects inside ``Nodes.items`` are kept as the raw JSON objects, because in
``nodeCacheCapable: false`` mode the filter answer must echo them unchanged (reference §8.5).
The embedded pod is the Kubernetes layer's :class:`eams.kube.pods.PodObject` (the fields EAMS
reads; everything else in the pod is ignored).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictInt, TypeAdapter, ValidationError
from pydantic_core import from_json, to_json

from eams.kube.pods import PodObject
from eams.scheduler.extender.errors import BadRequest
from eams.scheduler.extender.rows import MAX_SCORE
from eams.validation import describe_validation_error


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class NodeList(_Wire):
    """``v1.NodeList``: ``items`` are the node objects exactly as received."""

    metadata: dict[str, Any] | None = None
    items: list[dict[str, Any]] | None = None


class ExtenderArgs(_Wire):
    """Body of the filter and prioritize POSTs (TYPES ``ExtenderArgs``).

    Exactly one of ``Nodes`` (``nodeCacheCapable: false``) and ``NodeNames``
    (``nodeCacheCapable: true``) is non-null in what kube-scheduler sends.
    """

    Pod: PodObject | None = None
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None


class ExtenderFilterResult(_Wire):
    """Answer of filter (TYPES ``ExtenderFilterResult``); every key is always emitted.

    ``NodeNames: null`` together with ``Nodes: null`` means *no node passes* (reference §2.3),
    so the app fills the field matching the request's mode and never drops it.
    """

    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] | None = None
    FailedAndUnresolvableNodes: dict[str, str] | None = None
    Error: str = ""


class HostPriority(_Wire):
    """One entry of the prioritize answer; ``Score`` is a JSON integer 0–10 (TYPES)."""

    Host: str
    Score: StrictInt


HostPriorityList = TypeAdapter(list[HostPriority])
"""The prioritize answer is a bare JSON array of :class:`HostPriority` (TYPES)."""


# The two bytes of a score 0–10 in the answer: JSON allows whitespace before a value, so
# " 7" and "10" make every entry the same width and a score is written in place.
_TENS = np.frombuffer(b"          1", dtype=np.uint8)
_ONES = np.frombuffer(b"01234567890", dtype=np.uint8)


class HostPriorityEncoder:
    """Writes the prioritize answer ``[{"Host": …, "Score": …}, …]`` without building dicts.

    At 1,000 candidates a list of dicts costs more than the scoring; kube-scheduler sends the
    same candidate list again and again, so the answer's bytes for the last list are kept with
    two bytes of room for each score (``"Score": 7`` or ``"Score":10``: JSON allows the space),
    and an answer is those bytes with the scores written at their offsets by two numpy gathers.
    """

    def __init__(self) -> None:
        self._names: list[str] | None = None
        self._given: list[str] | None = None
        self._template = np.zeros(0, dtype=np.uint8)
        self._at = np.zeros(0, dtype=np.int64)  # offset of each entry's first score byte

    def encode(self, names: list[str], scores: Sequence[int] | np.ndarray) -> bytes:
        """JSON bytes of the bare ``HostPriorityList``; ``scores`` are ints in 0–10, one per
        name (an array or a list).

        Raises
        ------
        IndexError
            A score above 10.
        """
        if not names:
            return b"[]"
        if names is not self._given and names != self._names:
            self._names = list(names)
            heads = [b'{"Host":' + to_json(n) + b',"Score":' for n in names]
            lengths = np.array([len(h) for h in heads], dtype=np.int64)
            starts = 1 + np.concatenate(([0], np.cumsum(lengths + 4)[:-1]))  # head, 2, "}", ","
            self._at = starts + lengths
            body = b"".join(h + b"  }," for h in heads)
            self._template = np.frombuffer(b"[" + body[:-1] + b"]", dtype=np.uint8).copy()
        self._given = names  # the same list object next time is not compared
        at, answer = self._at, self._template
        s = np.asarray(scores, dtype=np.intp)
        answer[at] = _TENS[s]
        answer[at + 1] = _ONES[s]
        return answer.tobytes()


def encode_deciding(names: Sequence[str], scores: Sequence[int] | np.ndarray) -> bytes:
    """JSON bytes of the bare ``HostPriorityList`` holding only the entries that can decide:
    the nodes scoring :data:`~.rows.MAX_SCORE` (10), in request order; ``[]`` when none does.

    Why the others can be left out (issue 32): kube-scheduler adds an extender's score to a
    node's total only for the hosts its answer lists (``prioritizeNodes`` in
    ``pkg/scheduler/schedule_one.go``, 1.36: ``if score, ok := allNodeExtendersScores[name]``),
    so a node left out gets what a 0 gets. A node scoring 10 leads every node scoring at most 9
    by ``weight`` × 10 points or more — 1,300 with the shipped weight 130, more than the in-tree
    plugins' largest total (1,200 in 1.36; ``deploy/k3s/scheduler-config.yaml``) — so the
    scores 1–9 never change which node is bound: the cleared node (the only 10 of a cleared
    row) is bound whenever kube-scheduler's filters let it, as with the full answer. Encoding,
    sending and decoding 1,000 entries a pod cost kube-scheduler's serial loop ~1.5 ms a pod
    (a null extender answering one entry against one answering 1,000, issue 32).

    Parameters
    ----------
    names : sequence of str
        The candidates, each once.
    scores : (len(names),) ints in 0–10
        An array or a list.
    """
    top = np.flatnonzero(np.asarray(scores) == MAX_SCORE).tolist()
    return b"[" + b",".join(b'{"Host":' + to_json(names[i]) + b',"Score":10}' for i in top) + b"]"


class ExtenderBindingArgs(_Wire):
    """Body of the bind POST (TYPES); EAMS configures no ``bindVerb``, kept for the contract."""

    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(_Wire):
    """Answer of bind (TYPES): non-empty ``Error`` means the bind failed."""

    Error: str = ""


class MetaPod(_Wire):
    """A pod named by UID only (TYPES ``MetaPod``)."""

    UID: str


class MetaVictims(_Wire):
    """Victims on one node in UID form (TYPES ``MetaVictims``)."""

    Pods: list[MetaPod] | None = None
    NumPDBViolations: StrictInt = 0


class Victims(_Wire):
    """Victims on one node as full pods (TYPES ``Victims``)."""

    Pods: list[dict[str, Any]] | None = None
    NumPDBViolations: StrictInt = 0


class ExtenderPreemptionArgs(_Wire):
    """Body of the preempt POST (TYPES); EAMS configures no ``preemptVerb``."""

    Pod: PodObject | None = None
    NodeNameToVictims: dict[str, Victims] | None = None
    NodeNameToMetaVictims: dict[str, MetaVictims] | None = None


class ExtenderPreemptionResult(_Wire):
    """Answer of preempt (TYPES): always the UID form."""

    NodeNameToMetaVictims: dict[str, MetaVictims] | None = None


def parse_args(body: bytes) -> ExtenderArgs:
    """Decode an ``ExtenderArgs`` body strictly where a wrong answer would hurt.

    Raises
    ------
    BadRequest
        Malformed JSON, a wrong type (naming the key path), a missing or null ``Pod``, or both
        ``Nodes`` and ``NodeNames`` null.
    """
    try:
        data = from_json(body)
    except ValueError as exc:
        raise BadRequest(f"body: malformed JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadRequest(f"body: must be a JSON object (ExtenderArgs), got {type(data).__name__}")
    try:
        args = ExtenderArgs.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(describe_validation_error(exc, top="body")) from None
    if args.Pod is None:
        raise BadRequest("Pod: missing or null; kube-scheduler always sends the pod")
    if args.Nodes is None and args.NodeNames is None:
        raise BadRequest("Nodes, NodeNames: both null; one must list the candidate nodes")
    if args.Nodes is not None and args.Nodes.items is None:
        raise BadRequest("Nodes.items: must be a list of node objects")
    return args

"""The market's wake request: what the extender writes on an asleep node and the power manager
reads (node annotation :data:`eams.kube.names.WAKE_REQUEST_ANNOTATION`).

The value is JSON, ``{"pods": ["<namespace>/<name>", ...], "at_s": <epoch s>}``: the pending
pods the market cleared onto the node (their bids there, wake energy and wait priced in, beat
every awake node's; ``eams.scheduler.extender.wakes``) and when the first of them was.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

from eams.kube.errors import BadObject
from eams.kube.names import WAKE_REQUEST_ANNOTATION


@dataclass(frozen=True)
class WakeRequest:
    """Wake ``node`` for ``pods`` (``namespace/name`` keys), asked first at ``at_s`` (epoch s).
    No pods: the request is over (every pod it held was bound, withdrawn or cleared again),
    and the annotation goes."""

    node: str
    pods: tuple[str, ...]
    at_s: float

    def annotation(self) -> str | None:
        """The annotation's value (module docstring); ``None`` when the request is over (a
        JSON merge patch with ``null`` removes the annotation)."""
        if not self.pods:
            return None
        return json.dumps({"pods": list(self.pods), "at_s": self.at_s}, separators=(",", ":"))


def parse_wake_request(node: str, text: str) -> WakeRequest:
    """The request an annotation value ``text`` on ``node`` carries.

    Raises
    ------
    BadObject
        Not JSON, or ``pods`` is not a non-empty list of ``namespace/name`` strings, or
        ``at_s`` is not a finite number (names the node and the field).
    """
    where = f"node {node!r} annotation {WAKE_REQUEST_ANNOTATION}"
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise BadObject(where, f"not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise BadObject(where, f"expected a JSON object, got {type(value).__name__}")
    pods, at_s = value.get("pods"), value.get("at_s")
    if not (
        isinstance(pods, list)
        and pods
        and all(isinstance(p, str) and p.count("/") == 1 for p in pods)
    ):
        rule = "must be a non-empty list of 'namespace/name'"
        raise BadObject(f"{where}.pods", f"{rule}, got {pods!r}")
    if isinstance(at_s, bool) or not isinstance(at_s, int | float) or not math.isfinite(at_s):
        raise BadObject(f"{where}.at_s", f"must be a finite number (epoch s), got {at_s!r}")
    return WakeRequest(node, tuple(pods), float(at_s))


def pods_to_nodes(requests: Iterable[WakeRequest]) -> dict[str, str]:
    """Pod key → the node whose request names it; a pod named on two nodes goes to the later
    request (``at_s``, then the node's name): the market moved it there after the first."""
    ordered = sorted(requests, key=lambda r: (r.at_s, r.node))
    return {pod: r.node for r in ordered for pod in r.pods}

"""The decision written onto the pod: ``eams.io/*`` annotations as a JSON merge patch.

After kube-scheduler binds a decided pod, in both modes, the extender sends
``PATCH /api/v1/namespaces/{namespace}/pods/{name}`` with ``Content-Type:
application/merge-patch+json`` (RFC 7386; the API server's ``MergePatchType``) and the body
:func:`annotation_patch` builds, so ``kubectl get pod -o yaml`` answers "why here?" without our
tools (as KubeAttention writes its shadow recommendation after binding). Every value is a string
(annotations are ``map[string]string``); a key whose value is not known is sent as ``null``,
which RFC 7386 defines as "remove", so a re-decided pod keeps no stale value.
"""

from __future__ import annotations

from typing import Final

from eams.kube.names import (
    BID,
    CERTIFICATE,
    CLEARED_NODE,
    CLEARING_ID,
    CLEARING_PRICE,
    DECIDED_AT,
    METHOD,
    MODE,
)
from eams.scheduler.record.schema import Placement, rfc3339

KEYS: Final = (
    CLEARED_NODE,
    CLEARING_PRICE,
    BID,
    MODE,
    CLEARING_ID,
    METHOD,
    CERTIFICATE,
    DECIDED_AT,
)


def annotation_patch(decision: Placement) -> dict[str, dict[str, dict[str, str | None]]]:
    """The merge-patch body that writes ``decision`` onto its pod.

    ``{"metadata": {"annotations": {"eams.io/cleared-node": "mini-2", ...}}}``: the cleared node
    (``null`` when the clearing left the pod unassigned), its clearing price and the pod's bid
    (``repr`` of the float: it reads back exactly), the mode, the clearing id, the method, the
    certificate (``j_epsilon=0.0012``, ``gap_bound=…``, ``exact=0``) and the decision time
    (RFC 3339, UTC, µs).

    Returns
    -------
    dict
        JSON-ready; encode it with any JSON encoder.
    """
    cert = decision.certificate
    annotations: dict[str, str | None] = {
        CLEARED_NODE: decision.cleared_node,
        CLEARING_PRICE: _number(decision.price),
        BID: _number(decision.bid),
        MODE: decision.mode,
        CLEARING_ID: decision.clearing_id,
        METHOD: decision.method,
        CERTIFICATE: f"{cert.kind}={cert.bound!r}",
        DECIDED_AT: rfc3339(decision.at_s),
    }
    return {"metadata": {"annotations": annotations}}


def _number(value: float | None) -> str | None:
    return repr(value) if value is not None else None

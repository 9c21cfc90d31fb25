"""Taints and tolerations: kube-scheduler's TaintToleration rule, once.

A toleration tolerates a taint (k8s.io/api ``core/v1/toleration.go`` ``ToleratesTaint``) when

* its ``effect`` is empty or equal to the taint's;
* its ``key`` is equal to the taint's, or empty with operator ``Exists`` (every key);
* operator ``Exists`` (any value), or ``Equal`` — also an empty operator — with an equal value;
  any other operator tolerates nothing.

An empty key with ``Equal`` is refused by API validation ("operator must be Exists when key is
empty"), so no pod in a cluster carries one; the bench's hand-made pods can, and it tolerates
nothing here. The TaintToleration *filter* (``tainttoleration/taint_toleration.go``) looks only
at the ``NoSchedule`` and ``NoExecute`` taints (:data:`~eams.kube.names.FILTERING_EFFECTS`) and
passes a node when each of them is tolerated by some toleration of the pod (component-helpers
``scheduling/corev1`` ``FindMatchingUntoleratedTaint``).

The bench's emulated kube-scheduler, its policies' static masks, the power manager's "where could
this pending pod run once the node is awake" and the demo's cluster all filter through
:func:`untolerated`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from eams.kube.names import FILTERING_EFFECTS, NO_SCHEDULE

Effect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]
Operator = Literal["Equal", "Exists"]


@dataclass(frozen=True)
class Taint:
    """A node taint ``key=value:effect``."""

    key: str
    value: str = ""
    effect: Effect = "NoSchedule"

    @classmethod
    def from_json(cls, taint: dict[str, Any]) -> Taint:
        """A ``v1.Taint`` as JSON (a missing effect read as ``NoSchedule``, a missing value
        as ``""``)."""
        return cls(
            taint.get("key") or "", taint.get("value") or "", taint.get("effect") or NO_SCHEDULE
        )

    def __str__(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    """A pod toleration; ``operator`` ``Equal`` (the default) or ``Exists``; an empty effect
    matches every effect."""

    key: str = ""
    operator: Operator = "Equal"
    value: str = ""
    effect: str = ""

    @classmethod
    def from_json(cls, toleration: dict[str, Any]) -> Toleration:
        """A ``v1.Toleration`` as JSON (an empty operator read as ``Equal``)."""
        return cls(
            toleration.get("key") or "",
            toleration.get("operator") or "Equal",
            toleration.get("value") or "",
            toleration.get("effect") or "",
        )

    def tolerates(self, taint: Taint) -> bool:
        """Whether this toleration matches ``taint`` (module docstring)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key:
            if self.key != taint.key:
                return False
        elif self.operator != "Exists":
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and self.value == taint.value


def untolerated(
    tolerations: Iterable[Toleration],
    taints: Iterable[Taint],
    *,
    ignore: Collection[str] = (),
) -> Taint | None:
    """The first ``NoSchedule``/``NoExecute`` taint no toleration tolerates (kube-scheduler's
    TaintToleration filter), ``None`` when the node passes; taints whose key is in ``ignore``
    are left out."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint.effect not in FILTERING_EFFECTS or taint.key in ignore:
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def node_taints(node: dict[str, Any]) -> list[dict[str, Any]]:
    """``spec.taints`` of a ``v1.Node`` as JSON (empty when absent or malformed)."""
    spec = node.get("spec")
    found = spec.get("taints") if isinstance(spec, dict) else None
    return [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []


def has_taint(node: dict[str, Any], key: str) -> bool:
    """Whether the node carries a taint with ``key`` (any value and effect)."""
    return any(t.get("key") == key for t in node_taints(node))


def pod_tolerations(pod: dict[str, Any]) -> tuple[Toleration, ...]:
    """``spec.tolerations`` of a ``v1.Pod`` as JSON."""
    return tuple(Toleration.from_json(t) for t in (pod.get("spec") or {}).get("tolerations") or ())

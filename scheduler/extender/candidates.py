"""Candidate nodes: kube-scheduler's lists, derived once per list instead of once per request,
and, for a pod kube-scheduler has not seen (a gated one, ``gates.py``), the nodes its static
filters would pass.

kube-scheduler sends the same ``NodeNames`` pod after pod, and the verbs hand out one list
object while its bytes repeat (``verbs.NameLists``). Everything derived from a list — its
names each once, its set, the candidates the node cache does not know — is kept here while
the same object comes in, so a request at 1,000 nodes costs an identity check, not three
passes over 1,000 names; the sets handed out are themselves one object per list, which keeps
the market's candidate masks (``Market._among``) valid by identity too.
"""

from __future__ import annotations

from collections.abc import Iterable

from eams.kube.admission import admits_now
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.pending import PendingPod


class CandidateLists:
    """Identity caches over the last candidate list (one entry each: kube-scheduler's list
    changes only when nodes come, go or are filtered differently).

    Parameters
    ----------
    nodes : NodeCache
        Which nodes are known (:meth:`unknown`).
    """

    def __init__(self, nodes: NodeCache) -> None:
        self.nodes = nodes
        self._unique: tuple[list[str], list[str]] | None = None
        self._set: tuple[list[str], frozenset[str]] | None = None
        self._unknown: tuple[frozenset[str], int, set[str]] | None = None

    def unique(self, names: list[str]) -> list[str]:
        """``names`` each once, in order (kube-scheduler adds up the scores of a host listed
        twice); the same list object while the same ``names`` object comes in."""
        if self._unique is None or self._unique[0] is not names:
            self._unique = (names, list(dict.fromkeys(names)))
        return self._unique[1]

    def as_set(self, names: list[str]) -> frozenset[str]:
        """``frozenset(names)``, the same object while the same ``names`` object comes in."""
        if self._set is None or self._set[0] is not names:
            self._set = (names, frozenset(names))
        return self._set[1]

    def unknown(self, pods: Iterable[PendingPod]) -> set[str]:
        """Candidate nodes of ``pods`` that the node cache does not know (they enter a
        clearing unvalued): each candidate set is compared with the cache once per change of
        the known nodes (``NodeCache.version``)."""
        unknown: set[str] = set()
        for pod in pods:
            if pod.candidates:
                last = self._unknown
                if last is None or last[0] is not pod.candidates or last[1] != self.nodes.version:
                    missing = set(pod.candidates - self.nodes.known())
                    last = self._unknown = (pod.candidates, self.nodes.version, missing)
                unknown |= last[2]
        return unknown


class StaticCandidates:
    """The awake nodes kube-scheduler's static filters pass for a pod's ``nodeSelector`` and
    tolerations (:func:`eams.kube.admission.admits_now`), one frozenset object per pair while
    no node's labels, taints or cordon change (``NodeCache.rules_version``), so the market's
    candidate masks hold by identity and a clearing at 1,000 nodes does not walk them per pod.

    Parameters
    ----------
    nodes : NodeCache
    """

    MAX_KEPT = 256  # distinct (selector, tolerations) pairs kept; beyond, the cache starts again

    def __init__(self, nodes: NodeCache) -> None:
        self.nodes = nodes
        self._kept: dict[tuple[object, object], frozenset[str]] = {}
        self._version = -1

    def of(self, pod: PendingPod) -> frozenset[str]:
        """Names of the known nodes that admit ``pod`` now (an asleep node's taint keeps it
        out)."""
        if self._version != self.nodes.rules_version or len(self._kept) >= self.MAX_KEPT:
            self._kept.clear()
            self._version = self.nodes.rules_version
        key = (pod.node_selector, pod.tolerations)
        found = self._kept.get(key)
        if found is None:
            selector = dict(pod.node_selector)
            found = frozenset(
                name
                for name in self.nodes.names()
                if (node := self.nodes.node(name)) is not None
                and admits_now(node, selector, pod.tolerations)
            )
            self._kept[key] = found
        return found

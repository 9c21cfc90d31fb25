"""The Kubernetes API calls of the power manager: list and watch nodes, pods and node Leases,
read and patch a node.

A :class:`~eams.kube.nodeview.Cluster` (the same credentials, timeout and error
wording as the power-state actions' safety check, whose ``node`` view it also serves) with:

* ``GET /api/v1/nodes``, ``GET /api/v1/pods`` (every namespace: bound and pending pods) and
  ``GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases`` (each kubelet renews
  its node's Lease every ~10 s, the heartbeat that says the kubelet is alive; Kubernetes docs:
  Nodes, heartbeats), listed then watched (:mod:`.kube_cache`);
* ``PATCH /api/v1/nodes/NAME`` with ``Content-Type: application/merge-patch+json`` (RFC 7386,
  what ``kubectl patch --type merge`` sends), the Kubernetes layer's
  :class:`~eams.kube.patch.NodeApi`: the marker's taint patches carry
  ``metadata.resourceVersion`` and are read and sent again on 409 Conflict
  (:mod:`eams.kube.patch`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from eams.kube.errors import ApiUnreachable
from eams.kube.names import MERGE_PATCH, NODE_LEASE_NAMESPACE
from eams.kube.nodeview import Cluster
from eams.scheduler.power.errors import KubeApiError


class KubeClient(Cluster):
    """The manager's API client (module docstring); parameters as
    :class:`~eams.kube.nodeview.Cluster`. Every call raises
    :class:`KubeApiError` naming the request and the server, with the HTTP status when the API
    answered one."""

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return self._get(what, call, *args, **kwargs)
        except ApiUnreachable as exc:
            status = getattr(exc.__cause__, "status", None)
            raise KubeApiError(str(exc), status if isinstance(status, int) else None) from exc

    def list_calls(self) -> dict[str, Callable[..., Any]]:
        """The kubernetes client's list functions of the nodes, the pods (every namespace) and
        the node Leases, by those names; list-then-watch calls them (``watch=True`` to watch)."""
        from kubernetes import client

        leases = client.CoordinationV1Api(self._core.api_client)
        return {
            "nodes": self._core.list_node,
            "pods": self._core.list_pod_for_all_namespaces,
            "node leases": functools.partial(leases.list_namespaced_lease, NODE_LEASE_NAMESPACE),
        }

    def read_node(self, name: str) -> dict[str, Any]:
        """The ``v1.Node`` ``name`` (JSON)."""
        return self._call(f"node {name}", self._core.read_node, name)

    def patch_node(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Apply the JSON merge patch ``patch`` to node ``name``; the node as patched.

        Raises
        ------
        KubeApiError
            ``status`` 409 when ``patch`` carries a ``metadata.resourceVersion`` that is no
            longer the node's.
        """
        return self._call(
            f"a patch of node {name}",
            self._core.patch_node,
            name,
            patch,
            _content_type=MERGE_PATCH,
        )

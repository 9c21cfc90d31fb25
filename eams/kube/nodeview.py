"""What the Kubernetes API says about one node: cordon, taints, pods, Ready (what the power-state
safety check reads before a node sleeps, and the power manager's client builds on).

The kubernetes Python client reads ``GET /api/v1/nodes/NAME`` (a ``v1.Node``) and ``GET
/api/v1/pods?fieldSelector=spec.nodeName=NAME`` (a ``v1.PodList``), as ``kubectl drain`` does
before it evicts. The JSON is read as published (``_preload_content=False``), so only the fields
named here matter: ``spec.unschedulable``, ``spec.taints[].effect``, ``status.conditions[]``
(type Ready), and per pod ``metadata.ownerReferences[].kind``, the mirror-pod annotation and
``status.phase`` (:func:`eams.kube.pods.pod_ref`, whose :attr:`~eams.kube.pods.PodRef.is_workload`
is the rule for a pod that keeps its node awake). Credentials:
:func:`eams.kube.client.load_configuration` (the given kubeconfig, else ``$KUBECONFIG`` /
``~/.kube/config``, else the in-cluster service account).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eams.kube.client import core_api, load_configuration
from eams.kube.errors import ApiUnreachable
from eams.kube.names import FILTERING_EFFECTS
from eams.kube.nodes import ready_condition
from eams.kube.pods import PodRef, pod_ref
from eams.kube.taints import Taint, node_taints


@dataclass(frozen=True, slots=True)
class NodeView:
    """A node as the API server sees it.

    Attributes
    ----------
    name : str
    unschedulable : bool
        Cordoned (``spec.unschedulable``).
    taints : tuple of str
        ``key=value:effect`` of each taint.
    ready : bool or None
        The Ready condition (``None``: not reported).
    pods : tuple of PodRef
        Every pod bound to the node.
    """

    name: str
    unschedulable: bool
    taints: tuple[str, ...]
    ready: bool | None
    pods: tuple[PodRef, ...]

    @property
    def tainted(self) -> bool:
        """True when a NoSchedule or NoExecute taint keeps new pods off."""
        return any(taint.rsplit(":", 1)[-1] in FILTERING_EFFECTS for taint in self.taints)

    @property
    def workload_pods(self) -> tuple[PodRef, ...]:
        """The pods that sleeping the node would stop (:attr:`PodRef.is_workload`)."""
        return tuple(pod for pod in self.pods if pod.is_workload)


def parse_node(node: dict[str, Any], pods: dict[str, Any]) -> NodeView:
    """Build a :class:`NodeView` from a ``v1.Node`` and a ``v1.PodList`` as JSON.

    Raises
    ------
    ApiUnreachable
        If either document is not of its kind (the API answered something else).
    """
    if node.get("kind") not in (None, "Node") or not isinstance(node.get("metadata"), dict):
        raise ApiUnreachable(f"the API answered a {node.get('kind')!r}, not a Node")
    if pods.get("kind") not in (None, "PodList") or not isinstance(pods.get("items"), list):
        raise ApiUnreachable(f"the API answered a {pods.get('kind')!r}, not a PodList")
    return NodeView(
        name=node["metadata"].get("name", "?"),
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
        taints=tuple(str(Taint.from_json(t)) for t in node_taints(node)),
        ready=ready_condition(node),
        pods=tuple(pod_ref(pod) for pod in pods["items"]),
    )


class Cluster:
    """A client of the Kubernetes API for node views (kubernetes Python client).

    Parameters
    ----------
    kubeconfig : path, optional
        A kubeconfig file; default: ``$KUBECONFIG`` / ``~/.kube/config``, else the in-cluster
        account (:func:`eams.kube.client.load_configuration`).
    timeout_s : float
        Bound on each request (s); connection errors are not retried.

    Raises
    ------
    KubeConfigError
        If no configuration can be loaded (missing, not YAML, or without a current context).
    """

    def __init__(self, kubeconfig: str | Path | None = None, *, timeout_s: float = 5.0) -> None:
        configuration = load_configuration(kubeconfig)
        configuration.retries = 0
        self.server = configuration.host
        self._core = core_api(configuration)
        self._timeout_s = timeout_s

    def _get(self, what: str, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        try:
            response = call(
                *args, _preload_content=False, _request_timeout=self._timeout_s, **kwargs
            )
            data = json.loads(response.data)
        except ApiException as exc:
            raise ApiUnreachable(
                f"the Kubernetes API at {self.server} refused {what}: {exc.status} {exc.reason}"
            ) from exc
        except (OSError, ValueError) as exc:  # urllib3 errors are OSErrors; JSON is ValueError
            reason = str(exc).split(": ")[-1][:160]
            raise ApiUnreachable(
                f"the Kubernetes API at {self.server} did not answer {what}: {reason}"
            ) from exc
        except Exception as exc:  # urllib3 MaxRetryError and kin are not OSErrors
            raise ApiUnreachable(
                f"the Kubernetes API at {self.server} did not answer {what}: "
                f"{type(exc).__name__}: {str(exc)[:160]}"
            ) from exc
        if not isinstance(data, dict):
            raise ApiUnreachable(f"the Kubernetes API at {self.server}: {what} is not JSON")
        return data

    def node(self, name: str) -> NodeView:
        """The node ``name``, its cordon, taints, Ready condition and pods.

        Raises
        ------
        ApiUnreachable
            The API did not answer, refused (401/403, 404 for a node it does not know), or
            answered something that is not a Node / PodList.
        """
        node = self._get(f"node {name}", self._core.read_node, name)
        pods = self._get(
            f"the pods of {name}",
            self._core.list_pod_for_all_namespaces,
            field_selector=f"spec.nodeName={name}",
        )
        return parse_node(node, pods)

    def ready(self, name: str) -> bool | None:
        """The node's Ready condition (``None``: not reported). Raises ApiUnreachable."""
        return parse_node(
            self._get(f"node {name}", self._core.read_node, name), {"items": []}
        ).ready

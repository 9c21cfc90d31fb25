"""What the Kubernetes API says about a node before it sleeps: cordon, taints, pods, Ready.

The kubernetes Python client reads ``GET /api/v1/nodes/NAME`` (a ``v1.Node``) and ``GET
/api/v1/pods?fieldSelector=spec.nodeName=NAME`` (a ``v1.PodList``), as ``kubectl drain`` does
before it evicts. The JSON is read as published (``_preload_content=False``), so only the fields
named here matter: ``spec.unschedulable``, ``spec.taints[].effect``, ``status.conditions[]``
(type Ready), and per pod ``metadata.ownerReferences[].kind``, the mirror-pod annotation and
``status.phase``. Credentials: the given kubeconfig, else the in-cluster service account, else
``$KUBECONFIG`` / ``~/.kube/config``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from eams.calibrate.powerstates.errors import ClusterUnreachable

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
"""A static pod's mirror on the API server carries this annotation; kubelet, not the API, runs
it (``kubectl drain`` skips it too)."""
SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
"""Taint effects that keep new pods off a node (kubernetes.io/docs: taint-and-toleration)."""
FINISHED_PHASES = ("Succeeded", "Failed")
"""Pod phases that hold no running container."""


@dataclass(frozen=True, slots=True)
class PodRef:
    """One pod bound to the node: ``namespace/name``, its controller's kind, phase, mirror."""

    namespace: str
    name: str
    owner_kind: str | None
    phase: str | None
    mirror: bool

    @property
    def is_workload(self) -> bool:
        """True for a pod that sleeping the node would stop: running or pending, not owned by
        a DaemonSet (those run on every node and come back with it), not a static pod's mirror."""
        return (
            self.owner_kind != "DaemonSet" and not self.mirror and self.phase not in FINISHED_PHASES
        )

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


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
        return any(taint.rsplit(":", 1)[-1] in SCHEDULING_EFFECTS for taint in self.taints)

    @property
    def workload_pods(self) -> tuple[PodRef, ...]:
        """The pods that sleeping the node would stop (:attr:`PodRef.is_workload`)."""
        return tuple(pod for pod in self.pods if pod.is_workload)


def parse_node(node: dict[str, Any], pods: dict[str, Any]) -> NodeView:
    """Build a :class:`NodeView` from a ``v1.Node`` and a ``v1.PodList`` as JSON.

    Raises
    ------
    ClusterUnreachable
        If either document is not of its kind (the API answered something else).
    """
    if node.get("kind") not in (None, "Node") or not isinstance(node.get("metadata"), dict):
        raise ClusterUnreachable(f"the API answered a {node.get('kind')!r}, not a Node")
    if pods.get("kind") not in (None, "PodList") or not isinstance(pods.get("items"), list):
        raise ClusterUnreachable(f"the API answered a {pods.get('kind')!r}, not a PodList")
    spec, status = node.get("spec") or {}, node.get("status") or {}
    taints = tuple(
        f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
        for t in spec.get("taints") or []
    )
    ready = None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
    refs = []
    for pod in pods["items"]:
        meta = pod.get("metadata") or {}
        owners = meta.get("ownerReferences") or []
        controller = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
        refs.append(
            PodRef(
                namespace=meta.get("namespace") or "default",
                name=meta.get("name") or "?",
                owner_kind=controller.get("kind"),
                phase=(pod.get("status") or {}).get("phase"),
                mirror=MIRROR_ANNOTATION in (meta.get("annotations") or {}),
            )
        )
    return NodeView(
        name=node["metadata"].get("name", "?"),
        unschedulable=bool(spec.get("unschedulable")),
        taints=taints,
        ready=ready,
        pods=tuple(refs),
    )


class Cluster:
    """A client of the Kubernetes API for node views (kubernetes Python client).

    Parameters
    ----------
    kubeconfig : path, optional
        A kubeconfig file; default: the in-cluster account, else ``$KUBECONFIG`` /
        ``~/.kube/config``.
    timeout_s : float
        Bound on each request (s); connection errors are not retried.

    Raises
    ------
    ClusterUnreachable
        If no configuration can be loaded (missing, not YAML, or without a current context).
    """

    def __init__(self, kubeconfig: str | Path | None = None, *, timeout_s: float = 5.0) -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        try:
            if kubeconfig is not None:
                config.load_kube_config(str(kubeconfig), client_configuration=configuration)
            else:
                try:
                    config.load_incluster_config(client_configuration=configuration)
                except config.ConfigException:
                    config.load_kube_config(client_configuration=configuration)
        except (config.ConfigException, OSError, yaml.YAMLError) as exc:
            where = kubeconfig or "in-cluster, $KUBECONFIG or ~/.kube/config"
            reason = " ".join(str(exc).split())  # a YAML error spans lines; the CLI prints one
            raise ClusterUnreachable(f"no Kubernetes API configured ({where}): {reason}") from exc
        configuration.retries = 0
        self.server = configuration.host
        self._core = client.CoreV1Api(client.ApiClient(configuration))
        self._timeout_s = timeout_s

    def _get(self, what: str, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException

        try:
            response = call(
                *args, _preload_content=False, _request_timeout=self._timeout_s, **kwargs
            )
            data = json.loads(response.data)
        except ApiException as exc:
            raise ClusterUnreachable(
                f"the Kubernetes API at {self.server} refused {what}: {exc.status} {exc.reason}"
            ) from exc
        except (OSError, ValueError) as exc:  # urllib3 errors are OSErrors; JSON is ValueError
            reason = str(exc).split(": ")[-1][:160]
            raise ClusterUnreachable(
                f"the Kubernetes API at {self.server} did not answer {what}: {reason}"
            ) from exc
        except Exception as exc:  # urllib3 MaxRetryError and kin are not OSErrors
            raise ClusterUnreachable(
                f"the Kubernetes API at {self.server} did not answer {what}: "
                f"{type(exc).__name__}: {str(exc)[:160]}"
            ) from exc
        if not isinstance(data, dict):
            raise ClusterUnreachable(f"the Kubernetes API at {self.server}: {what} is not JSON")
        return data

    def node(self, name: str) -> NodeView:
        """The node ``name``, its cordon, taints, Ready condition and pods.

        Raises
        ------
        ClusterUnreachable
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
        """The node's Ready condition (``None``: not reported). Raises ClusterUnreachable."""
        return parse_node(
            self._get(f"node {name}", self._core.read_node, name), {"items": []}
        ).ready

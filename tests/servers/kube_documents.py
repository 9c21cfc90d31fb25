"""Published Kubernetes documents (a ``v1.Node``, a ``v1.PodList`` from a real cluster, or a
test's own) made objects of the real API server (``kube_control_plane``), so a test that reads
the reference data's node and pods exercises the real server's answers instead of a stand-in.

What the API server lets a client write is kept: a Node's labels, annotations, taints, cordon
and (through ``/status``) its capacity, allocatable and conditions; a Pod's labels,
annotations, owner references, containers (name, image, resources), init containers, node
selector, tolerations, ``nodeName`` and (through ``/status``) its phase and conditions. The
rest (uids, resourceVersions, timestamps, volumes, service accounts) is the server's to make.

Pods keep their own namespace (``default`` when the document names none), as ``kubectl get pods
-A`` lists them and as the safety rule names them (``nginx/nginx-ingress-default-backend``):
the reference data's namespaces (``nginx``, ``metallb-system``, ...) are created when missing
and left in place (deleting a namespace needs the namespace controller, which runs only with a
controller-manager). :func:`clear` deletes the pods of every namespace that has some.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx

from tests.servers.kube_node import NOT_READY, remove_taint

MERGE = {"Content-Type": "application/merge-patch+json"}
NAMESPACE = "default"
"""The namespace of a pod whose document names none."""
_POD_SPEC_KEEP = ("nodeName", "nodeSelector", "tolerations", "schedulerName", "schedulingGates")
_CONTAINER_KEEP = ("name", "image", "resources", "restartPolicy")


def _meta(doc: dict[str, Any], *keep: str) -> dict[str, Any]:
    meta = doc.get("metadata") or {}
    return {k: meta[k] for k in ("name", *keep) if meta.get(k) is not None}


def create_node(admin: httpx.Client, doc: dict[str, Any]) -> dict[str, Any]:
    """Create the Node ``doc`` describes, its status as published, without the ``not-ready``
    taint admission adds (no node-lifecycle controller runs to lift it); the Node as stored.

    Raises
    ------
    httpx.HTTPStatusError
        The API server refused a write.
    """
    spec = doc.get("spec") or {}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": _meta(doc, "labels", "annotations"),
            "spec": {k: spec[k] for k in ("taints", "unschedulable") if k in spec}}  # fmt: skip
    admin.post("/api/v1/nodes", json=node).raise_for_status()
    name = node["metadata"]["name"]
    status = {k: v for k, v in (doc.get("status") or {}).items()
              if k in ("capacity", "allocatable", "conditions")}  # fmt: skip
    if status:
        admin.patch(f"/api/v1/nodes/{name}/status", json={"status": status},
                    headers=MERGE).raise_for_status()  # fmt: skip
    if not any(t.get("key") == NOT_READY for t in spec.get("taints") or []):
        remove_taint(admin, name, NOT_READY)
    answer = admin.get(f"/api/v1/nodes/{name}")
    answer.raise_for_status()
    return dict(answer.json())


def ensure_namespace(admin: httpx.Client, name: str) -> None:
    """Create the namespace ``name`` unless it exists (a 409 is its being there).

    Raises
    ------
    httpx.HTTPStatusError
        The API server refused otherwise.
    """
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    answer = admin.post("/api/v1/namespaces", json=namespace)
    if answer.status_code != 409:
        answer.raise_for_status()


def create_pod(admin: httpx.Client, doc: dict[str, Any]) -> None:
    """Create the Pod ``doc`` describes in its own namespace (made when missing; module
    docstring), then its published phase and conditions.

    Raises
    ------
    httpx.HTTPStatusError
        The API server refused a write.
    """
    spec = doc.get("spec") or {}

    def containers(key: str) -> list[dict[str, Any]]:
        return [{k: c[k] for k in _CONTAINER_KEEP if k in c} | {"image": c.get("image", "pause")}
                for c in spec.get(key) or []]  # fmt: skip

    namespace = (doc.get("metadata") or {}).get("namespace") or NAMESPACE
    if namespace != NAMESPACE:
        ensure_namespace(admin, namespace)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {**_meta(doc, "labels", "annotations", "ownerReferences"),
                        "namespace": namespace},
           "spec": {**{k: spec[k] for k in _POD_SPEC_KEEP if k in spec},
                    "containers": containers("containers"),
                    **({"initContainers": containers("initContainers")}
                       if spec.get("initContainers") else {})}}  # fmt: skip
    base = f"/api/v1/namespaces/{namespace}/pods"
    answer = admin.post(base, json=pod)
    if answer.is_error:  # the server's reason names the field it refused
        raise httpx.HTTPStatusError(
            f"{answer.status_code} creating pod {pod['metadata']['name']}: {answer.text[:500]}",
            request=answer.request, response=answer,
        )  # fmt: skip
    status = {k: v for k, v in (doc.get("status") or {}).items() if k in ("phase", "conditions")}
    if status:
        admin.patch(f"{base}/{pod['metadata']['name']}/status", json={"status": status},
                    headers=MERGE).raise_for_status()  # fmt: skip


def load(
    admin: httpx.Client,
    nodes: Iterable[dict[str, Any]] = (),
    pods: Iterable[dict[str, Any]] = (),
) -> None:
    """Create ``nodes``, then ``pods`` (:func:`create_node`, :func:`create_pod`)."""
    for node in nodes:
        create_node(admin, node)
    for pod in pods:
        create_pod(admin, pod)


def clear(admin: httpx.Client, nodes: Iterable[str]) -> None:
    """Delete every pod of every namespace that has some (at once: nothing runs them), then
    the nodes ``nodes``.

    Raises
    ------
    httpx.HTTPStatusError
        The API server refused to list the pods.
    """
    listed = admin.get("/api/v1/pods")
    listed.raise_for_status()
    namespaces = {pod["metadata"]["namespace"] for pod in listed.json()["items"]}
    for namespace in sorted(namespaces | {NAMESPACE}):
        admin.delete(f"/api/v1/namespaces/{namespace}/pods", params={"gracePeriodSeconds": 0})
    for name in nodes:
        admin.delete(f"/api/v1/nodes/{name}")


def node(admin: httpx.Client, name: str) -> dict[str, Any]:
    """The Node ``name`` as the API server has it now."""
    answer = admin.get(f"/api/v1/nodes/{name}")
    answer.raise_for_status()
    return dict(answer.json())

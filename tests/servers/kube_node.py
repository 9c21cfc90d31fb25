"""A node without a kubelet: what a kubelet tells the API about its node, and nothing else.

No kubelet or container runtime runs here (``../shared/k8s/README.md``), so a test makes its
nodes API objects and keeps them alive itself, as KWOK does. :class:`NodeEmulator`:

- ``up()`` creates the Node (labels ``kubernetes.io/hostname``, ``kubernetes.io/os``,
  ``kubernetes.io/arch`` plus the caller's), posts its status with
  ``PATCH /api/v1/nodes/NAME/status`` (capacity and allocatable: cpu, memory, pods; ``Ready=True``
  and the three pressure conditions ``False``, as a kubelet does), creates its Lease
  ``kube-node-lease/NAME`` (owned by the Node, so deleting the Node deletes it) and starts a
  thread that, every ``period_s``, renews the Lease and refreshes the conditions'
  ``lastHeartbeatTime``;
- ``sleep()`` makes it silent (the thread keeps running but posts nothing), as a suspended
  machine is: a controller-manager then marks it ``Unknown`` after its grace period (without
  one, a test that needs it ``Unknown`` calls :func:`mark_unknown`);
- ``wake()`` posts Ready again with a fresh heartbeat (a new ``lastTransitionTime``) at once and
  resumes the beats;
- ``stop()`` ends the thread and, by default, deletes the Node (and so its Lease): a stopped
  node left behind would count as a not-ready node of the zone for the controller-manager.

Errors of the background beats are kept in ``errors`` (a test can assert it is empty) instead
of killing the thread. Admission puts ``node.kubernetes.io/not-ready:NoSchedule`` on every
new Node; a controller-manager lifts it once the node is Ready, and without one a test calls
:func:`remove_taint`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.servers.kube_control_plane import ControlPlane

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
_PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure")


def _now(micro: bool = False) -> str:
    """Now in RFC 3339, UTC: seconds (``metav1.Time``) or microseconds (``MicroTime``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


class NodeEmulator:
    """One emulated node (see the module).

    Parameters
    ----------
    client : httpx.Client
        An apiserver client allowed to create and patch nodes and leases (``base_url`` set;
        :meth:`ControlPlane.client`). Shared with the beat thread (httpcore locks its
        connection pool).
    name : str
        The Node's name (and its Lease's).
    cpu, memory, pods : str
        Capacity and allocatable, as Kubernetes quantities.
    labels : dict of str to str, optional
        Added to the kubelet's default labels.
    period_s : float
        Seconds between beats (a kubelet renews every 10 s); well under the
        controller-manager's grace period.

    Attributes
    ----------
    errors : list of Exception
        What the background beats raised, in order.
    beats : int
        Beats posted so far (``up``, each renewal, ``wake``).
    ticks : int
        Periods the thread has woken up for, beating or silent (a test waits on it to know
        that a sleeping node had its chances to beat and kept silent).
    """

    def __init__(
        self,
        client: httpx.Client,
        name: str,
        cpu: str = "4",
        memory: str = "8Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        period_s: float = 2.0,
    ):
        self.client = client
        self.name = name
        self.resources = {"cpu": cpu, "memory": memory, "pods": pods}
        self.labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", **(labels or {})}  # fmt: skip
        self.period_s = period_s
        self.errors: list[Exception] = []
        self.beats = 0
        self.ticks = 0
        self._awake = False
        self._since = _now()  # Ready's lastTransitionTime
        self._lock = threading.Lock()  # a beat is never half-posted when sleep() returns
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def up(self) -> NodeEmulator:
        """Create the Node and its Lease, post Ready, start beating; returns ``self``.

        Raises
        ------
        httpx.HTTPStatusError
            The apiserver refused (e.g. 409: a node of that name exists).
        """
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": self.name, "labels": self.labels}}  # fmt: skip
        created = self.client.post("/api/v1/nodes", json=node)
        created.raise_for_status()
        owner = {"apiVersion": "v1", "kind": "Node", "name": self.name,
                 "uid": created.json()["metadata"]["uid"]}  # fmt: skip
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": self.name, "ownerReferences": [owner]},
                 "spec": {"holderIdentity": self.name, "leaseDurationSeconds": 40,
                          "renewTime": _now(micro=True)}}  # fmt: skip
        self.client.post(_LEASES, json=lease).raise_for_status()
        with self._lock:
            self._since = _now()
            self._awake = True
            self._beat()
        self._thread = threading.Thread(target=self._run, name=f"node-{self.name}", daemon=True)
        self._thread.start()
        return self

    def sleep(self) -> None:
        """Go silent: no Lease renewal, no heartbeat, until :meth:`wake`."""
        with self._lock:
            self._awake = False

    def wake(self) -> None:
        """Post Ready with a fresh heartbeat now and resume the beats."""
        with self._lock:
            self._since = _now()
            self._awake = True
            self._beat()

    def stop(self, delete: bool = True) -> None:
        """End the beats and, with ``delete``, delete the Node (its Lease goes with it, and
        is deleted here too in case no garbage collector runs); idempotent."""
        with self._lock:
            self._awake = False
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        if delete:
            self.client.delete(f"/api/v1/nodes/{self.name}")
            self.client.delete(f"{_LEASES}/{self.name}")

    def node(self) -> dict[str, Any]:
        """The Node as the apiserver has it now."""
        answer = self.client.get(f"/api/v1/nodes/{self.name}")
        answer.raise_for_status()
        return dict(answer.json())

    def _run(self) -> None:
        while not self._stopping.wait(self.period_s):
            with self._lock:
                self.ticks += 1
                if not self._awake:
                    continue
                try:
                    self._beat()
                except httpx.HTTPError as error:
                    self.errors.append(error)

    def _beat(self) -> None:
        """Renew the Lease and post the status with a fresh heartbeat (caller holds the lock)."""
        renewed = self.client.patch(
            f"{_LEASES}/{self.name}",
            json={"spec": {"holderIdentity": self.name, "renewTime": _now(micro=True)}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        renewed.raise_for_status()
        beat = _now()
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status (emulated)",
                 "lastHeartbeatTime": beat, "lastTransitionTime": self._since}  # fmt: skip
        pressures = [{"type": kind, "status": "False", "reason": f"KubeletHasNo{kind}",
                      "message": f"kubelet has no {kind} (emulated)",
                      "lastHeartbeatTime": beat, "lastTransitionTime": self._since}
                     for kind in _PRESSURES]  # fmt: skip
        status = {"status": {"capacity": self.resources, "allocatable": self.resources,
                             "conditions": [ready, *pressures]}}  # fmt: skip
        posted = self.client.patch(
            f"/api/v1/nodes/{self.name}/status",
            json=status,
            headers={"Content-Type": "application/strategic-merge-patch+json"},
        )
        posted.raise_for_status()
        self.beats += 1


def remove_taint(client: httpx.Client, node: str, key: str = NOT_READY) -> bool:
    """Remove every taint ``key`` of ``node`` (what the node-lifecycle controller does for
    ``not-ready`` when no controller-manager runs); returns whether one was there.

    A JSON merge patch replaces ``spec.taints`` whole, so it carries the resourceVersion it
    was computed from and is retried on a 409 (another writer changed the node meanwhile).

    Raises
    ------
    httpx.HTTPStatusError
        The apiserver refused, or five attempts conflicted.
    """
    for _ in range(5):
        current = client.get(f"/api/v1/nodes/{node}")
        current.raise_for_status()
        doc = current.json()
        taints = doc["spec"].get("taints") or []
        kept = [t for t in taints if t["key"] != key]
        if len(kept) == len(taints):
            return False
        patch = {"metadata": {"resourceVersion": doc["metadata"]["resourceVersion"]},
                 "spec": {"taints": kept or None}}  # fmt: skip
        answer = client.patch(f"/api/v1/nodes/{node}", json=patch,
                              headers={"Content-Type": "application/merge-patch+json"})  # fmt: skip
        if answer.status_code != 409:
            answer.raise_for_status()
            return True
    answer.raise_for_status()
    return True


def mark_unknown(client: httpx.Client, node: str) -> None:
    """Set ``node``'s Ready and pressure conditions ``Unknown`` as the node-lifecycle controller
    does once a node stopped posting status for its grace period (reason ``NodeStatusUnknown``,
    "Kubelet stopped posting node status.", the last heartbeat kept, the transition now), for a
    test that runs no controller-manager. Its ``unreachable`` taints are not added.

    Raises
    ------
    httpx.HTTPStatusError
        The apiserver refused.
    """
    now = _now()
    unknown = [{"type": kind, "status": "Unknown", "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.", "lastTransitionTime": now}
               for kind in ("Ready", *_PRESSURES)]  # fmt: skip
    client.patch(
        f"/api/v1/nodes/{node}/status",
        json={"status": {"conditions": unknown}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    ).raise_for_status()


def condition(node: dict[str, Any], kind: str = "Ready") -> dict[str, Any] | None:
    """Condition ``kind`` of a Node document, or None when it has none."""
    found = [c for c in node.get("status", {}).get("conditions") or [] if c["type"] == kind]
    return found[0] if found else None


def taints(node: dict[str, Any]) -> set[tuple[str, str]]:
    """A Node document's taints as ``(key, effect)`` pairs."""
    return {(t["key"], t["effect"]) for t in node.get("spec", {}).get("taints") or []}


@pytest.fixture
def emulated_nodes(control_plane: ControlPlane) -> Iterator[Callable[..., NodeEmulator]]:
    """``up(name, **kwargs) -> NodeEmulator``: a node emulated up on the module's control plane
    (acting as admin; ``kwargs`` as :class:`NodeEmulator`'s); every one is stopped and deleted
    after the test."""
    made: list[NodeEmulator] = []
    with control_plane.client() as admin:

        def up(name: str, **kwargs: Any) -> NodeEmulator:
            node = NodeEmulator(admin, name, **kwargs)
            made.append(node)
            return node.up()

        yield up
        for node in made:
            node.stop()

"""The live power manager's world on the real control plane (``../shared/k8s``).

kube-apiserver with the shipped RBAC: the manager runs as the ``eams-power-manager`` service
account, so a verb its ClusterRole lacks fails the test. The nodes are API objects kept alive
by emulated kubelets (:class:`~tests.servers.kube_node.NodeEmulator`: Lease and Ready
heartbeats) that follow the PDU simulator's virtual machines: a kubelet beats while its machine
runs, unless the test holds it dead (a machine and agent that came back, a kubelet that did
not). ``systemctl`` runs over a real sshd (a stand-in script: a CI machine cannot suspend) and
the agents are stand-ins answering while their machine runs — the parts a CI machine cannot be.

Nodes: ``duckboat-01`` (:data:`A`, outlet 1, 4 cores) and, on request, ``duckboat-02``
(:data:`B`, outlet 2) may sleep; the k3s server ``mini1`` (1 core) is full with one workload pod
and never sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from eams.kube.names import ASLEEP_TAINT, NO_SCHEDULE
from eams.meter.simulator import PduSimulator
from eams.scheduler.power.manager import PowerManager
from eams.scheduler.power.policy_fleet import ASLEEP
from tests.actuators.conftest import AgentStandIn, inventory_data
from tests.power.live import Clock, Records, build, calibrate
from tests.servers import kube_documents as documents
from tests.servers.kube_control_plane import ControlPlane, eventually
from tests.servers.kube_node import NOT_READY, NodeEmulator, remove_taint

A, B, SERVER = "duckboat-01", "duckboat-02", "mini1"
OUTLETS = {A: 1, B: 2}
MANAGER_ACCOUNT = "kube-system/eams-power-manager"
MERGE = {"Content-Type": "application/merge-patch+json"}


@dataclass
class Kubelet:
    """A node's kubelet: beats while the simulator's machine on ``outlet`` runs and
    ``alive``."""

    sim: PduSimulator
    outlet: int
    node: NodeEmulator
    alive: bool = True
    beating: bool = True

    def follow(self) -> None:
        should = self.alive and self.sim.state(self.outlet).node == "running"
        if should and not self.beating:
            self.node.wake()
        elif not should and self.beating:
            self.node.sleep()
        self.beating = should


@dataclass
class World:
    """The manager, its clock (real time plus a skew the test advances), the kubelets, an
    admin client and the decision records."""

    manager: PowerManager
    clock: Clock
    kubelets: dict[str, Kubelet]
    admin: httpx.Client
    records: Records
    sim: PduSimulator
    inventory: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        """Stop the manager's watches."""
        self.manager.observer.cache.close()  # type: ignore[attr-defined]

    def step(self) -> None:
        """One manager tick; then the kubelets follow their machines."""
        self.manager.step(self.clock())
        for kubelet in self.kubelets.values():
            kubelet.follow()

    def tick_until(
        self, done: Callable[[], bool], what: str, timeout_s: float = 40.0,
        each: Callable[[], None] | None = None,
    ) -> None:  # fmt: skip
        """Tick every 0.2 s until ``done()``; fail naming ``what`` after ``timeout_s`` of real
        time."""
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
            self.step()
            if each is not None:
                each()
            time.sleep(0.2)

    def node(self, name: str = A) -> dict[str, Any]:
        answer = self.admin.get(f"/api/v1/nodes/{name}")
        answer.raise_for_status()
        return dict(answer.json())

    def taint_keys(self, name: str = A) -> set[str]:
        return {t["key"] for t in self.node(name)["spec"].get("taints") or []}

    def annotations(self, name: str = A) -> dict[str, str]:
        return dict(self.node(name)["metadata"].get("annotations") or {})

    def machine(self, name: str = A) -> str:
        """The simulator's state of ``name``'s machine (``running``, ``suspended``, …)."""
        return str(self.sim.state(OUTLETS[name]).node)

    def pending_pod(self, name: str, cpu: str, **spec: Any) -> None:
        """A pod for a scheduler that does not run here: it stays Pending (and the manager's
        watch has seen it)."""
        create_pod(self.admin, name, None, cpu, schedulerName="eams-scheduler", **spec)
        self.watched_pods(lambda keys: f"default/{name}" in keys)

    def watched_pods(self, done: Callable[[list[str]], bool]) -> None:
        """Wait until ``done(keys)`` holds for the pods the manager's watch has."""

        def seen() -> bool | None:
            _, pods, _ = self.manager.observer.cache.snapshot()  # type: ignore[attr-defined]
            return done([p.key for p in pods]) or None

        eventually(seen, 10.0, "the pods, as the manager's watch sees them")

    def mark_asleep(self, name: str) -> None:
        """``name`` as an earlier run of the manager left it: machine suspended, kubelet
        silent, cordoned and tainted ``eams.io/asleep`` — and seen so by the manager's watch."""
        outlet = OUTLETS[name]
        self.sim.suspend(outlet)
        eventually(lambda: self.sim.state(outlet).node == "suspended" or None, 10.0, "suspended")
        self.kubelets[name].follow()
        taint = {"key": ASLEEP_TAINT, "effect": NO_SCHEDULE}
        change = {"spec": {"unschedulable": True, "taints": [taint]}}
        self.admin.patch(f"/api/v1/nodes/{name}", json=change, headers=MERGE).raise_for_status()
        self.watched_node(name, lambda n: bool(n["spec"].get("unschedulable")), "marked")

    def watched_node(self, name: str, check: Callable[[dict[str, Any]], bool], what: str) -> None:
        """Wait until ``check(node)`` holds for node ``name`` as the manager's watch has it."""

        def seen() -> bool | None:
            nodes, _, _ = self.manager.observer.cache.snapshot()  # type: ignore[attr-defined]
            return any(n["metadata"]["name"] == name and check(n) for n in nodes) or None

        eventually(seen, 10.0, f"{name} {what}, as the manager's watch sees it")

    def annotate(self, name: str, annotations: dict[str, str | None]) -> None:
        """Merge ``annotations`` into node ``name`` (as the admin; ``None`` removes one) and
        wait until the manager's watch has them."""
        change = {"metadata": {"annotations": annotations}}
        self.admin.patch(f"/api/v1/nodes/{name}", json=change, headers=MERGE).raise_for_status()

        def has(node: dict[str, Any]) -> bool:
            now = node["metadata"].get("annotations") or {}
            return all(now.get(k) == v for k, v in annotations.items())

        self.watched_node(name, has, f"annotated {sorted(annotations)}")

    def sleep_a(self) -> None:
        """Let A's idle time pass its break-even; tick until the manager has put it to sleep."""
        self.step()
        self.clock.skew += 60.0
        self.tick_until(lambda: self.manager.phases[A].state == ASLEEP, "A asleep")
        eventually(lambda: self.machine(A) == "suspended" or None, 10.0, "A's machine suspended")


def create_pod(
    admin: httpx.Client, name: str, node: str | None, cpu: str,
    annotations: dict[str, str] | None = None, **spec: Any,
) -> None:  # fmt: skip
    """A bare pod (no controller: a workload pod) requesting ``cpu``, bound to ``node`` or
    pending, with ``annotations``."""
    containers = [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]
    pod_spec = {**({"nodeName": node} if node else {}), **spec, "containers": containers}
    meta = {"name": name, **({"annotations": annotations} if annotations else {})}
    documents.create_pod(admin, {"metadata": meta, "spec": pod_spec})


def make_world(
    plane: ControlPlane,
    up: Callable[..., NodeEmulator],
    admin: httpx.Client,
    sim: PduSimulator,
    ssh_node: Any,
    agents: dict[int, AgentStandIn],
    folder: Path,
    *,
    mode: str = "active",
    with_b: bool = False,
    lifecycle: bool = False,
    edit_inventory: Callable[[dict[str, Any]], None] | None = None,
    wake_time_s: float = 2.0,
) -> World:
    """Nodes up and Ready (the not-ready taint lifted: by the controller with ``lifecycle``,
    here otherwise), the server's workload pod, calibrations, the inventory (edited by
    ``edit_inventory`` before the manager reads it) and the manager, as its service account."""
    names = [A, SERVER, *([B] if with_b else [])]
    emulated = {n: up(n, cpu="1" if n == SERVER else "4", period_s=1.0) for n in names}
    for name in names:
        if not lifecycle:
            remove_taint(admin, name, NOT_READY)
        eventually(lambda n=name: NOT_READY not in {
            t["key"] for t in admin.get(f"/api/v1/nodes/{n}").json()["spec"].get("taints") or []
        } or None, 30.0, f"{name} without the not-ready taint")  # fmt: skip
    create_pod(admin, "db", SERVER, "1")
    calibrate(folder, A, wake_time_s=wake_time_s)
    calibrate(folder, B, wake_energy_j=90.0, wake_time_s=wake_time_s)
    calibrate(folder, SERVER, wake_energy_j=None)
    kubeconfig = plane.kubeconfig(MANAGER_ACCOUNT)
    data = inventory_data(sim, ssh_node, kubeconfig=kubeconfig, agent_url=agents[1].url)
    if with_b:
        data["nodes"][B] = {**data["nodes"][A], "mac": sim.mac(2), "outlet": 2,
                            "agent_url": agents[2].url}  # fmt: skip
    if edit_inventory is not None:
        edit_inventory(data)
    records = Records()
    manager, _ = build(kubeconfig, data, folder, mode, records)
    kubelets = {n: Kubelet(sim, OUTLETS[n], emulated[n]) for n in names if n in OUTLETS}
    return World(manager, Clock(), kubelets, admin, records, sim, data)

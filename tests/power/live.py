"""Pieces of the live power manager's world for tests: the manager's settings and clock (real
time plus a skew the test can advance, so an idle stretch or a phase timeout need not be waited
for in real time), calibrations with measured power states, the manager built as ``eams power
manage`` builds it, a record sink, and node and pod documents for the tests that serve them
(``test_kube_adapters.py``, ``test_manage_cli.py``). The world on the real control plane is
:mod:`tests.power.kube_world`.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eams.actuators.inventory import PowerInventory, parse_inventory
from eams.calibrate.calfile import load_calibration, save_calibration
from eams.calibrate.powerstates.estimate import estimate
from eams.calibrate.powerstates.record import PowerStates, TransitionCost
from eams.scheduler.power.actuator import PowerActuator
from eams.scheduler.power.calibrations import read_folder
from eams.scheduler.power.kube_cache import ClusterCache
from eams.scheduler.power.kube_client import KubeClient
from eams.scheduler.power.kube_marker import KubeMarker
from eams.scheduler.power.kube_observer import KubeObserver
from eams.scheduler.power.manager import ManagerConfig, PowerManager
from eams.scheduler.power.policy import PolicyConfig, PowerPolicy
from tests.calibrate.powerstates.test_measure import line_calibration

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
POLICY = PolicyConfig(
    idle_before_sleep_s=0.0,
    min_awake_s=0.0,
    reserve_cores=0.0,
    min_awake=1,
    wake_after_s=0.0,
    cooldown_s=0.0,
    wake_margin=5.0,
)
"""Sleep an empty node as soon as its idle time beats the break-even; wake for any pending
pod at once; a wake may take 5 × its measured 2 s."""
MANAGER = ManagerConfig(agent_silent_s=0.5, restart_agent_after_s=0.5)


class Clock:
    """Real time plus ``skew`` (s)."""

    def __init__(self) -> None:
        self.skew = 0.0

    def __call__(self) -> float:
        return time.time() + self.skew


def calibrate(
    folder: Path, node: str, wake_energy_j: float | None = 60.0, wake_time_s: float = 2.0
) -> Path:
    """A calibration of ``node`` (40 W idle, 90 W full); with measured wol power states (3.4 W
    asleep, 2 s / 40 J suspend, ``wake_time_s`` / ``wake_energy_j`` wake; break-even 4 s at
    2 s) unless ``wake_energy_j`` is None. The simulator's nodes suspend in 1 s and wake in 2 s;
    a measurement from the command to the settled draw adds the command's own latency."""
    folder.mkdir(parents=True, exist_ok=True)
    path = line_calibration(folder / f"{node}.json", node)
    if wake_energy_j is None:
        return path
    e = wake_energy_j
    states = PowerStates(
        measured_at=NOW, method="wol", meter="snmp://***@pdu:161", outlet=1, repeats=3,
        p_suspend_w=estimate([3.4, 3.4, 3.4], 0.1),
        suspend=TransitionCost(time_s=estimate([2.0, 2.0, 2.0], 0.1),
                               energy_j=estimate([40, 40, 40], 1)),
        wake=TransitionCost(time_s=estimate([wake_time_s] * 3, 0.1),
                            energy_j=estimate([e, e, e], 1)),
    )  # fmt: skip
    return save_calibration(load_calibration(path).with_power_states(states), path)


def node_doc(base: dict[str, Any], name: str, *, cpu: str = "4", taints=None) -> dict[str, Any]:
    """The real Node document renamed ``name``, ``cpu`` allocatable, its taints replaced when
    ``taints`` is given."""
    doc = copy.deepcopy(base)
    doc["metadata"]["name"] = name
    doc["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = name
    doc["status"]["allocatable"]["cpu"] = cpu
    if taints is not None:
        doc["spec"]["taints"] = taints
    return doc


def ready_as(doc: dict[str, Any], ready: bool) -> dict[str, Any]:
    """``doc`` with its Ready condition set."""
    doc = copy.deepcopy(doc)
    for condition in doc["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "True" if ready else "False"
    return doc


def workload_pod(name: str, node: str | None, cpu: str, **spec: Any) -> dict[str, Any]:
    """A ReplicaSet's pod requesting ``cpu``: bound to ``node`` (Running) or pending."""
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if node is None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "lastTransitionTime": "2026-12-01T09:00:00Z"}
        ]  # fmt: skip
    return {
        "metadata": {
            "name": name, "namespace": "default", "uid": f"uid-{name}",
            "creationTimestamp": "2026-12-01T09:00:00Z",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                 "uid": "uid-rs", "controller": True}],
        },
        "spec": {
            **({"nodeName": node} if node else {}),
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
        "status": status,
    }  # fmt: skip


HOUND = [{"key": "type", "operator": "Equal", "value": "hound", "effect": "NoSchedule"}]
"""The toleration of the real node's ``type=hound:NoSchedule`` taint."""


@dataclass
class Records:
    """A record sink keeping what it is given."""

    items: list = field(default_factory=list)

    def submit(self, record) -> bool:
        self.items.append(record)
        return True

    def reasons(self, node: str) -> list[str]:
        return [r.reason for r in self.items if r.node == node]


def build(
    kubeconfig: Path,
    inventory: dict[str, Any],
    calibrations: Path,
    mode: str,
    records: Records | None = None,
) -> tuple[PowerManager, PowerInventory]:
    """The live manager on the API server of ``kubeconfig`` (what ``eams power manage``
    builds)."""
    inv = parse_inventory(inventory, Path("."), "power.yaml")
    client = KubeClient(kubeconfig)
    manager = PowerManager(
        PowerPolicy(POLICY),
        KubeObserver(ClusterCache(client).start(), inv, read_folder(calibrations)),
        KubeMarker(client),
        PowerActuator(inv, client.node),
        recorder=records,
        mode=mode,  # type: ignore[arg-type]
        config=MANAGER,
    )
    return manager, inv

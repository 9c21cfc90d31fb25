"""The live power manager end to end on the real control plane, without a controller-manager
(:mod:`tests.power.kube_world`; the node-lifecycle controller's part is in
``test_manager_on_kube.py``): the cordon, taint and annotations it patches as its own service
account, ``systemctl`` over a real sshd, magic packets and power states in the PDU simulator,
stand-in agents that answer while their machine runs; the market's wakes (issue 34) with the
extender's requests written as it writes them, and once end to end with the real kube-scheduler
and the extender process."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from eams.kube.names import (
    ASLEEP_TAINT,
    POWER_REASON_ANNOTATION,
    POWER_STATE_ANNOTATION,
    WAKE_REQUEST_ANNOTATION,
    WORK_ANNOTATION,
)
from eams.kube.wakerequest import WakeRequest
from eams.meter.simulator import PduSimulator
from eams.scheduler.power.policy_fleet import ASLEEP, AWAKE, WAKING
from tests.actuators.conftest import AgentStandIn
from tests.power.kube_world import SERVER, A, B, World, create_pod, make_world
from tests.servers.kube_control_plane import eventually
from tests.servers.kube_documents import clear
from tests.servers.kube_extender import KubeExtender, TelemetryFeeder
from tests.servers.kube_scheduler import shipped_config, with_market_wakes

pytestmark = pytest.mark.integration

EXTENDER_ACCOUNT = "kube-system/eams-scheduler"


@pytest.fixture
def agents(sim: PduSimulator) -> Iterator[dict[int, AgentStandIn]]:
    """Stand-in agents of the outlet-1 and outlet-2 machines."""
    made = {outlet: AgentStandIn(sim, outlet) for outlet in (1, 2)}
    try:
        yield made
    finally:
        for agent in made.values():
            agent.close()


@pytest.fixture
def admin(control_plane) -> Iterator[httpx.Client]:
    with control_plane.client() as client:
        yield client
        clear(client, ())


@pytest.fixture
def world(control_plane, emulated_nodes, admin, sim, node1, agents, tmp_path: Path):
    """``world(**make_world options)`` on this module's control plane."""

    worlds: list[World] = []

    def made(**options) -> World:
        worlds.append(make_world(control_plane, emulated_nodes, admin, sim, node1, agents,
                                 tmp_path / "calibration", **options))  # fmt: skip
        return worlds[-1]

    yield made
    for w in worlds:
        w.close()


def version(w: World, name: str) -> tuple[str, str]:
    """What the manager may patch of node ``name`` (its spec and annotations; the status
    changes with every heartbeat)."""
    node = w.node(name)
    return json.dumps(node["spec"]), json.dumps(node["metadata"].get("annotations"))


def test_active_cordons_and_taints_before_the_sleep_and_releases_only_when_back(
    world, node1
) -> None:
    w = world()
    before = version(w, A)
    w.step()  # empty since now: not yet past its break-even
    assert node1.calls() == [] and version(w, A) == before
    w.clock.skew += 60.0
    w.step()
    # the actuator's safety check refuses a node that is not cordoned and tainted: the
    # suspend went out, so the mark came first
    assert node1.calls() == ["--no-block suspend"]
    node = w.node(A)
    assert node["spec"]["unschedulable"] is True and w.taint_keys(A) == {ASLEEP_TAINT}
    assert node["metadata"]["annotations"][POWER_STATE_ANNOTATION] == "suspending"
    assert node["metadata"]["annotations"][POWER_REASON_ANNOTATION].startswith(
        "idle-past-break-even"
    )
    w.tick_until(lambda: w.manager.phases[A].state == ASLEEP, "A asleep")
    assert w.machine(A) in ("suspending", "suspended")  # its agent went silent
    w.pending_pod("job", "2")

    def still_marked_while_down() -> None:
        if w.machine(A) != "running":
            assert ASLEEP_TAINT in w.taint_keys(A)

    w.tick_until(lambda: w.manager.phases[A].state == AWAKE, "A back",
                 each=still_marked_while_down)  # fmt: skip
    assert w.machine(A) == "running"
    node = w.node(A)
    assert ASLEEP_TAINT not in w.taint_keys(A) and not node["spec"].get("unschedulable")
    assert node["metadata"]["annotations"][POWER_STATE_ANNOTATION] == "awake"
    assert node["metadata"]["annotations"][POWER_REASON_ANNOTATION].startswith("re-registered")
    assert w.records.reasons(A) == ["idle-past-break-even", "pending-unfit", "re-registered"]
    assert [(r.action, r.result) for r in w.records.items[:2]] == [("wol", "ok"), ("wol", "ok")]
    assert SERVER not in {r.node for r in w.records.items}  # the k3s server never sleeps
    assert w.manager.metrics.wakes_confirmed._value.get() == 1


def test_shadow_mode_records_but_patches_switches_and_sends_nothing(world, node1, sim) -> None:
    w = world(mode="shadow", with_b=True)
    w.mark_asleep(B)  # asleep already: the pending pod would wake it
    versions = {n: version(w, n) for n in (A, B)}
    w.step()
    w.clock.skew += 60.0
    w.pending_pod("job", "2", nodeSelector={"kubernetes.io/hostname": B})  # fits no awake node
    for _ in range(3):
        w.step()
    time.sleep(3.0)  # a packet would have woken it by now (its wake takes 2 s)
    assert {n: version(w, n) for n in (A, B)} == versions  # not one patch
    assert node1.calls() == []
    assert w.machine(A) == "running" and w.machine(B) == "suspended"
    assert [(r.node, r.reason, r.mode, r.result) for r in w.records.items] == [
        (B, "pending-unfit", "shadow", None),
        (A, "idle-past-break-even", "shadow", None),
    ]  # once each while the decision stands, not at every tick
    assert w.manager.phases[A].state == AWAKE and w.manager.phases[B].state == ASLEEP


def test_a_wake_that_never_gets_ready_makes_the_node_suspect_and_wakes_the_next(world, sim) -> None:
    def bogus_mac(data) -> None:
        data["nodes"][A]["mac"] = "02:00:00:00:00:99"  # its packets reach no machine

    w = world(with_b=True, edit_inventory=bogus_mac)
    for name in (A, B):
        w.mark_asleep(name)
    w.pending_pod("job", "2")
    w.step()  # A is the cheaper wake (60 J against 90 J)
    assert w.manager.phases[A].state == WAKING and w.manager.phases[B].state == ASLEEP
    w.clock.skew += 30.0  # past 5 × its 2 s wake
    w.step()
    assert w.manager.phases[A].suspect and w.manager.phases[A].failed_wakes == 1
    assert w.manager.phases[A].state == ASLEEP
    assert w.manager.phases[B].state == WAKING  # the next node, in the same tick
    w.tick_until(lambda: w.manager.phases[B].state == AWAKE, "B back")
    assert w.annotations(A)[POWER_STATE_ANNOTATION] == "asleep-suspect"
    assert ASLEEP_TAINT in w.taint_keys(A)  # still kept off: it never came back
    assert ASLEEP_TAINT not in w.taint_keys(B)
    assert w.machine(A) == "suspended" and w.machine(B) == "running"
    assert w.records.reasons(A) == ["pending-unfit", "wake-timeout"]
    assert w.manager.metrics.failed_wakes.labels(A)._value.get() == 1


def test_never_sleeps_a_node_with_pods_that_are_not_daemonsets(world, node1, shared_data) -> None:
    """The real node's 11 pods (5 DaemonSet, 6 ReplicaSet, from the reference data), bound to
    A with their owners and requests."""
    w = world()
    real = json.loads((shared_data / "k8s" / "honeycomb_pods.json").read_text())["items"]
    for pod in real:
        meta, spec = pod["metadata"], pod["spec"]
        doc = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": meta["name"], "namespace": "default",
                            "ownerReferences": meta.get("ownerReferences", [])},
               "spec": {"nodeName": A, "containers": [
                   {"name": c["name"], "image": c["image"], "resources": c.get("resources", {})}
                   for c in spec["containers"]]}}  # fmt: skip
        w.admin.post("/api/v1/namespaces/default/pods", json=doc).raise_for_status()
    w.watched_pods(lambda keys: len(keys) == len(real) + 1)  # and the server's pod
    observed = w.manager.observer.observe(w.clock())
    assert observed.fleet.pods.tolist() == [6, 1]  # DaemonSet pods do not count
    before = version(w, A)
    for _ in range(3):
        w.step()
        w.clock.skew += 1000.0
    assert version(w, A) == before and node1.calls() == []
    assert w.machine(A) == "running"


def test_a_woken_node_that_stays_notready_gets_its_k3s_agent_restarted(world, node1, sim) -> None:
    w = world()
    w.mark_asleep(A)
    w.kubelets[A].alive = False  # the kubelet does not come back by itself
    w.pending_pod("job", "2")
    w.tick_until(lambda: "restart k3s-agent" in node1.calls(), "k3s agent restarted")
    assert w.manager.phases[A].state == WAKING and ASLEEP_TAINT in w.taint_keys(A)
    assert node1.calls().count("restart k3s-agent") == 1  # once per wake
    w.kubelets[A].alive = True  # the restarted kubelet reports Ready
    w.tick_until(lambda: w.manager.phases[A].state == AWAKE, "A back")
    assert ASLEEP_TAINT not in w.taint_keys(A)
    assert node1.calls().count("restart k3s-agent") == 1


def wake_request(node: str, *pods: str) -> dict[str, str | None]:
    """The annotation the extender sets on ``node`` for ``pods`` (``namespace/name``)."""
    return {WAKE_REQUEST_ANNOTATION: WakeRequest(node, pods, time.time()).annotation()}


def test_a_market_wake_request_wakes_exactly_its_node_and_the_release_removes_it(
    world, caplog
) -> None:
    """The extender's request (here set as the extender's watch sets it: a merge patch of the
    node) names B, the dearer wake (90 J against A's 60 J: the manager alone wakes A, see
    below): one tick wakes B and only B, by a magic packet into the PDU simulator (the
    machines here are its emulated ones). A's malformed request is ignored with one warning
    and stops no tick; B's release removes B's request."""
    w = world(with_b=True)
    for name in (A, B):
        w.mark_asleep(name)
    w.annotate(A, {WAKE_REQUEST_ANNOTATION: '{"pods": "default/job"}'})
    w.annotate(B, wake_request(B, "default/job"))
    w.pending_pod("job", "2")
    with caplog.at_level(logging.WARNING, "eams.power.manager"):
        w.step()
        assert w.manager.phases[B].state == WAKING and w.manager.phases[A].state == ASLEEP
        w.step()  # the pod is B's while B wakes: A stays asleep
    assert w.manager.phases[A].state == ASLEEP
    assert w.records.reasons(B) == ["market-bid"] and w.records.reasons(A) == []
    warned = [r.getMessage() for r in caplog.records if "wake request ignored" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith(f"power manager: {A}:")
    w.tick_until(lambda: w.manager.phases[B].state == AWAKE, "B back")
    assert w.machine(B) == "running" and w.machine(A) == "suspended"
    assert WAKE_REQUEST_ANNOTATION not in w.annotations(B)
    assert w.annotations(B)[POWER_STATE_ANNOTATION] == "awake"
    assert w.annotations(A)[WAKE_REQUEST_ANNOTATION] == '{"pods": "default/job"}'  # not released


def test_a_failed_market_wake_sends_the_pod_on_and_a_suspect_node_is_not_woken_for_a_request(
    world,
) -> None:
    """B's magic packets reach no machine: the market's wake of B times out, B turns suspect
    and loses its request, and the pod goes to the next node (A) in the same tick. A request
    put back on the suspect B (a stale writer) does not wake it within its backoff."""

    def bogus_mac(data) -> None:
        data["nodes"][B]["mac"] = "02:00:00:00:00:99"

    w = world(with_b=True, edit_inventory=bogus_mac)
    for name in (A, B):
        w.mark_asleep(name)
    w.annotate(B, wake_request(B, "default/job"))
    w.pending_pod("job", "2")
    w.step()
    assert w.manager.phases[B].state == WAKING and w.manager.phases[A].state == ASLEEP
    w.clock.skew += 30.0  # past 5 × its 2 s wake
    w.step()
    assert w.manager.phases[B].suspect and w.manager.phases[A].state == WAKING
    assert w.annotations(B)[POWER_STATE_ANNOTATION] == "asleep-suspect"
    assert WAKE_REQUEST_ANNOTATION not in w.annotations(B)
    w.annotate(B, wake_request(B, "default/job"))
    w.tick_until(lambda: w.manager.phases[A].state == AWAKE, "A back")
    assert w.manager.phases[B].state == ASLEEP and w.machine(B) == "suspended"
    assert w.records.reasons(B) == ["market-bid", "wake-timeout"]
    assert w.records.reasons(A) == ["pending-unfit", "re-registered"]


def test_end_to_end_a_pod_waits_for_the_asleep_node_the_market_prices_best_and_binds_there(
    world, control_plane, kube_scheduler, tmp_path: Path
) -> None:
    """Issue 34 end to end: the real kube-scheduler with the shipped configuration plus the
    extender's ``/filter`` (market wakes are opt-in: ``with_market_wakes``), the extender
    process (``--watch``, active, as its shipped service account) and the live manager, on the
    same calibrations. B is awake and runs a pod, A asleep; both 40 → 90 W, A waking in a
    measured 30 s (the simulator's machine takes 2 s, but tick, restart, kubelet and agent took
    over 20 s on a machine busy with the whole suite: 30 s leaves the extender's 2 × wake-time
    patience room for that). While B's headroom is open, a pod of an hour's work binds on B at
    once: no wait, no wake. With B's headroom low (its gate nearly shut), the next pod is held,
    the extender writes A's wake request, one tick wakes exactly A (``market-bid``), its
    release requeues the pod and it binds on A."""
    w = world(with_b=True, wake_time_s=30.0)
    create_pod(w.admin, "running", B, "1")  # B is busy: it stays awake
    w.mark_asleep(A)
    root = tmp_path / "e2e"
    kubeconfig = control_plane.kubeconfig(EXTENDER_ACCOUNT)
    extender = KubeExtender(root, kubeconfig, tmp_path / "calibration", root / "record")
    feeder = TelemetryFeeder(extender.url)
    hour = {WORK_ANNOTATION: "3600"}

    def bound(name: str) -> str | None:
        answer = w.admin.get(f"/api/v1/namespaces/default/pods/{name}")
        return (answer.json().get("spec") or {}).get("nodeName")

    try:
        root.mkdir()
        extender.start()
        feeder.start()
        feeder.set(B, 0.6)
        kube_scheduler(
            with_market_wakes(shipped_config(kubeconfig, extender.url)), "eams-scheduler"
        )
        eventually(extender.ready, 30.0, "the extender's /readyz")
        create_pod(w.admin, "near", None, "1", hour, schedulerName="eams-scheduler")
        assert eventually(lambda: bound("near"), 30.0, "near bound") == B
        w.step()
        assert w.manager.phases[A].state == ASLEEP
        assert WAKE_REQUEST_ANNOTATION not in w.annotations(A)
        feeder.set(B, 0.1)
        create_pod(w.admin, "far", None, "1", hour, schedulerName="eams-scheduler")
        w.tick_until(lambda: w.manager.phases[A].state == WAKING, "the market's wake of A")
        request = json.loads(w.annotations(A)[WAKE_REQUEST_ANNOTATION])
        assert request["pods"] == ["default/far"] and bound("far") is None
        assert w.records.reasons(A) == ["market-bid"]

        def reporting() -> None:  # A's agent reports once its machine runs
            if w.machine(A) == "running" and A not in feeder.headroom:
                feeder.set(A, 0.6)

        w.tick_until(lambda: w.manager.phases[A].state == AWAKE, "A back", each=reporting)
        assert eventually(lambda: bound("far"), 30.0, "far bound") == A
        assert WAKE_REQUEST_ANNOTATION not in w.annotations(A)
        assert w.records.reasons(B) == [] and w.manager.phases[B].state == AWAKE
        lines = ('eams_extender_market_wakes_total{event="asked"} 1.0',
                 'eams_extender_market_wakes_total{event="released"} 1.0',
                 # the request written, then removed once over (the manager's release, too)
                 'eams_extender_wake_request_patches_total{result="ok"} 2.0')  # fmt: skip
        eventually(lambda: all(line in extender.metrics() for line in lines), 10.0, "metrics")
        metrics = extender.metrics()
        assert 'event="failed"' not in metrics and 'event="withdrawn"' not in metrics
    finally:
        feeder.stop()
        extender.stop()

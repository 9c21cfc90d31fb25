"""AR-5 for the gate integration, on the real kube-apiserver 1.36 with the shipped RBAC: the
extender's account creates and renews the Lease ``kube-system/eams-market``
(:func:`eams.kube.lease.renew_lease`), the fallback's account reads it but cannot write it, and
:class:`~eams.scheduler.extender.fallback.GateFallback` leaves gated pods alone while the Lease
is renewed and releases them unpinned — only the market's gate — once it has lapsed. The same
with the real kube-scheduler and the extender process killed: ``test_extender_e2e.py``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from eams.kube.client import coordination_api, core_api, load_configuration
from eams.kube.lease import LEASE_DURATION_S, renew_lease
from eams.kube.names import MARKET_GATE, MARKET_LEASE
from eams.scheduler.extender.fallback import GateFallback
from tests.servers.kube_control_plane import ControlPlane, eventually

pytestmark = pytest.mark.integration  # a real kube-apiserver

EXTENDER = "kube-system/eams-scheduler"
FALLBACK = "kube-system/eams-gate-fallback"
NAMESPACE, NAME = MARKET_LEASE.split("/")
PODS = "/api/v1/namespaces/default/pods"


def apis(plane: ControlPlane, who: str) -> tuple[Any, Any]:
    core = core_api(load_configuration(plane.kubeconfig(who)))
    return core, coordination_api(core)


def gated_pod(name: str, gates: list[str], scheduler: str = "eams-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "schedulingGates": [{"name": gate} for gate in gates],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


@pytest.fixture
def renewing(control_plane: ControlPlane) -> Iterator[threading.Event]:
    """The extender's account renews the Lease every second until the event is set."""
    _, coordination = apis(control_plane, EXTENDER)
    stop = threading.Event()

    def beat() -> None:
        while True:
            renew_lease(coordination, NAMESPACE, NAME, "test-extender")
            if stop.wait(1.0):
                return

    renew_lease(coordination, NAMESPACE, NAME, "test-extender")
    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    yield stop
    stop.set()
    thread.join()


def test_the_extender_renews_the_lease_and_the_fallback_may_only_read_it(
    control_plane: ControlPlane,
) -> None:
    _, extender = apis(control_plane, EXTENDER)
    renew_lease(extender, NAMESPACE, NAME, "holder-1")  # created, or renewed if there
    first = extender.read_namespaced_lease(NAME, NAMESPACE).spec
    time.sleep(0.01)
    renew_lease(extender, NAMESPACE, NAME, "holder-1")
    second = extender.read_namespaced_lease(NAME, NAMESPACE).spec
    assert second.holder_identity == "holder-1"
    assert second.lease_duration_seconds == LEASE_DURATION_S
    assert second.renew_time > first.renew_time
    _, fallback = apis(control_plane, FALLBACK)
    assert fallback.read_namespaced_lease(NAME, NAMESPACE).spec.renew_time == second.renew_time
    with pytest.raises(Exception) as refused:
        renew_lease(fallback, NAMESPACE, NAME, "not-the-extender")
    assert getattr(refused.value, "status", None) == 403


def test_gated_pods_wait_while_the_lease_is_renewed_and_go_unpinned_once_it_lapses(
    control_plane: ControlPlane, renewing: threading.Event
) -> None:
    core, coordination = apis(control_plane, FALLBACK)
    keeper = GateFallback(core, coordination, MARKET_LEASE, "eams-scheduler")
    with control_plane.client() as admin:
        for pod in (
            gated_pod("market", [MARKET_GATE]),
            gated_pod("two-gates", ["example.com/quota", MARKET_GATE]),
            gated_pod("other-gate", ["example.com/quota"]),
            gated_pod("other-profile", [MARKET_GATE], scheduler="default-scheduler"),
        ):
            admin.post(PODS, json=pod).raise_for_status()

        def gates(name: str) -> list[str]:
            spec = admin.get(f"{PODS}/{name}").json()["spec"]
            assert "affinity" not in spec, f"{name} was pinned"
            return [g["name"] for g in spec.get("schedulingGates") or []]

        deadline = time.monotonic() + LEASE_DURATION_S + 1.5
        while time.monotonic() < deadline:  # renewed all along: nothing released
            assert keeper.tick() == 0
            time.sleep(0.25)
        assert gates("market") == [MARKET_GATE]

        renewing.set()  # the extender stops renewing
        stopped = time.monotonic()
        released = eventually(lambda: keeper.tick() or None, 10, "the fallback's release")
        lapse_s = time.monotonic() - stopped
        print(f"\nfallback released {released} pods {lapse_s:.2f} s after the last renewal")
        assert LEASE_DURATION_S - 1.0 <= lapse_s <= LEASE_DURATION_S + 1.5
        assert released == 2 and keeper.released == 2
        assert gates("market") == []
        assert gates("two-gates") == ["example.com/quota"]  # another controller's gate stays
        assert gates("other-gate") == ["example.com/quota"]
        assert gates("other-profile") == [MARKET_GATE]  # not the extender's pod
        assert keeper.tick() == 0  # nothing left to release
        admin.delete(PODS, params={"gracePeriodSeconds": 0})

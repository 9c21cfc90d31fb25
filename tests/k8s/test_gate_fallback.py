"""AR-5 for the gate integration, on the real kube-apiserver 1.36 with the shipped RBAC: the
extender's account creates, renews and lets go of the Lease ``kube-system/eams-market``
(:mod:`eams.kube.lease`), the fallback's account reads it but cannot write it, and
:class:`~eams.scheduler.extender.fallback.GateFallback` leaves gated pods alone while the Lease
is renewed and releases them unpinned — only the market's gate, oldest first — once it has
lapsed or been let go, releases a pod held past its backstop age whatever the Lease says, leaves
a pod that changed since its list as it is, and refuses to start without the rights it needs.
The same with the real kube-scheduler and the extender process killed: ``test_extender_e2e.py``;
the extender's own renewals (:class:`~eams.scheduler.extender.heartbeat.Heartbeat`):
``tests/extender/test_heartbeat.py``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from eams.kube.client import coordination_api, core_api, load_configuration
from eams.kube.lease import LEASE_DURATION_S, read_lease_spec, release_lease, renew_lease
from eams.kube.names import MARKET_GATE, MARKET_LEASE
from eams.scheduler.extender.errors import ExtenderConfigError
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


def renewed_once(plane: ControlPlane) -> tuple[Any, GateFallback]:
    """The Lease renewed once by the extender's account (its CoordinationV1Api, returned) and
    a fallback acting as its own account."""
    _, extender = apis(plane, EXTENDER)
    renew_lease(extender, NAMESPACE, NAME, "test-extender")
    core, coordination = apis(plane, FALLBACK)
    return extender, GateFallback(core, coordination, MARKET_LEASE, "eams-scheduler")


@pytest.fixture(autouse=True)
def no_pods_left(control_plane: ControlPlane) -> Iterator[None]:
    """Each test's pods deleted after it, whatever it ended with."""
    yield
    with control_plane.client() as admin:
        admin.delete(PODS, params={"gracePeriodSeconds": 0}).raise_for_status()


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
    _, fallback = apis(control_plane, FALLBACK)
    renew_lease(extender, NAMESPACE, NAME, "holder-1")  # created, or renewed if there
    first = read_lease_spec(fallback, NAMESPACE, NAME)
    time.sleep(0.01)
    renew_lease(extender, NAMESPACE, NAME, "holder-1")
    second = read_lease_spec(fallback, NAMESPACE, NAME)
    assert first is not None and second is not None
    assert second["holderIdentity"] == "holder-1"
    assert second["leaseDurationSeconds"] == LEASE_DURATION_S
    assert second["renewTime"] > first["renewTime"]
    release_lease(extender, NAMESPACE, NAME)  # a clean stop lets it go
    assert read_lease_spec(fallback, NAMESPACE, NAME)["holderIdentity"] == ""
    with pytest.raises(Exception) as refused:
        renew_lease(fallback, NAMESPACE, NAME, "not-the-extender")
    assert getattr(refused.value, "status", None) == 403
    with pytest.raises(Exception) as refused:
        release_lease(fallback, NAMESPACE, NAME)
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

        renewing.set()  # the extender stops renewing (its last renewal within the second before)
        stopped = time.monotonic()
        released = eventually(lambda: keeper.tick() or None, 10, "the fallback's release")
        lapse_s = time.monotonic() - stopped
        print(f"\nfallback released {released} pod {lapse_s:.2f} s after the renewals stopped")
        assert LEASE_DURATION_S - 1.0 <= lapse_s <= LEASE_DURATION_S + 1.5
        assert released == 1 and keeper.released == 1
        assert gates("market") == []
        # a pod another controller's gate holds is not the market's yet (the extender's rule)
        assert gates("two-gates") == ["example.com/quota", MARKET_GATE]
        assert gates("other-gate") == ["example.com/quota"]
        assert gates("other-profile") == [MARKET_GATE]  # not the extender's pod
        assert keeper.tick() == 0  # nothing left to release


def test_a_lease_let_go_releases_at_once_and_a_pod_changed_since_its_list_is_left_alone(
    control_plane: ControlPlane,
) -> None:
    extender, keeper = renewed_once(control_plane)
    assert keeper.tick() == 0
    with control_plane.client() as admin:
        admin.post(PODS, json=gated_pod("older", [MARKET_GATE])).raise_for_status()
        time.sleep(1.1)  # creationTimestamp counts whole seconds
        for name in ("changed", "newer"):
            admin.post(PODS, json=gated_pod(name, [MARKET_GATE])).raise_for_status()
        listed = {p["metadata"]["name"]: p for p in keeper._held_pods()}
        assert list(listed) == ["older", "changed", "newer"]  # oldest first, then by name
        label = {"metadata": {"labels": {"touched": "yes"}}}  # as the extender's own write would
        merge = {"Content-Type": "application/merge-patch+json"}
        admin.patch(f"{PODS}/changed", json=label, headers=merge).raise_for_status()
        assert keeper._release_one(listed["changed"]) == "changed"  # 409: left as it is
        spec = admin.get(f"{PODS}/changed").json()["spec"]
        assert [g["name"] for g in spec["schedulingGates"]] == [MARKET_GATE]

        release_lease(extender, NAMESPACE, NAME)  # a clean stop: no wait for the duration
        assert keeper.tick() == 3 and keeper.lapsed
        for name in ("older", "changed", "newer"):
            spec = admin.get(f"{PODS}/{name}").json()["spec"]
            assert not spec.get("schedulingGates") and "affinity" not in spec


def test_a_pod_held_past_the_backstop_is_released_while_the_lease_holds(
    control_plane: ControlPlane, renewing: threading.Event
) -> None:
    core, coordination = apis(control_plane, FALLBACK)
    keeper = GateFallback(core, coordination, MARKET_LEASE, "eams-scheduler", stuck_after_s=2.0)
    with control_plane.client() as admin:
        admin.post(PODS, json=gated_pod("stuck", [MARKET_GATE])).raise_for_status()
        created = time.monotonic()
        released = eventually(lambda: keeper.tick() or None, 10, "the backstop's release")
        held_s = time.monotonic() - created
        assert released == 1 and not keeper.lapsed  # the Lease held all along
        # first seen at most 1 s (half the age) after its creation, released at the first list
        # 2 s after that: within twice the age, plus the lists' and the host's delays
        assert 2.0 <= held_s <= 2 * 2.0 + 1.5, held_s
        assert not admin.get(f"{PODS}/stuck").json()["spec"].get("schedulingGates")


def test_the_fallback_refuses_to_start_without_the_rights_it_needs(
    control_plane: ControlPlane,
) -> None:
    # --lease changed without the RBAC: the fallback's account may read eams-market alone
    core, coordination = apis(control_plane, FALLBACK)
    keeper = GateFallback(core, coordination, "kube-system/other", "eams-scheduler")
    expected = "cannot read lease kube-system/other: forbidden: check the fallback's RBAC"
    with pytest.raises(ExtenderConfigError, match=expected):
        keeper.check_access()
    GateFallback(core, coordination, MARKET_LEASE, "eams-scheduler").check_access()


def test_a_backlog_of_gated_pods_is_released_oldest_first_over_several_connections(
    control_plane: ControlPlane,
) -> None:
    extender, keeper = renewed_once(control_plane)
    release_lease(extender, NAMESPACE, NAME)  # let go: lapsed at the first read
    count = 200
    with control_plane.client() as admin:
        for i in range(count):
            admin.post(PODS, json=gated_pod(f"backlog-{i:03d}", [MARKET_GATE])).raise_for_status()
        started = time.monotonic()
        released = keeper.tick()
        took_s = time.monotonic() - started
        print(f"\nfallback: a backlog of {count} gated pods released in {took_s:.2f} s "
              f"({count / took_s:.0f} pods/s, list included)")  # fmt: skip
        assert released == count and keeper.tick() == 0
        listed = admin.get(PODS).json()["items"]
        assert not any(p["spec"].get("schedulingGates") for p in listed)

"""The market prices the wake (issue 34): through the extender's HTTP interface (in-process
ASGI, as every extender test), calibrations with measured sleep states, nodes put to sleep the
way the power manager marks them (taint ``eams.io/asleep``, annotation ``eams.io/power-state``).

The fleet: ``busy``, awake and running pods (hungry: 80 → 300 W on 8 cores), and asleep
``frugal`` (40 → 120 W) and ``spare`` (50 → 140 W), both waking in 9 s for 100 J and drawing
3 W asleep. A 1-core pod of an hour's work bids on ``busy`` 3,600 core-s / (27.5 W × 3,600 s)
≈ 0.036 before the headroom gate; on ``frugal`` (10 W of its line + 37 W over its sleep floor
for the hour, + 100 J) ≈ 0.021 × 3,600/3,609. So the pod waits for ``frugal`` once ``busy``'s
headroom gate is about half closed (σ < 0.58), and never while it is open (headroom 0.6).
``busy``'s cap (280 W) is under its full load: the study's gate, not the one reconciled with
packing (``bids.gate_midpoint``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eams.calibrate.calfile import load_calibration, save_calibration
from eams.calibrate.powerstates.estimate import estimate
from eams.calibrate.powerstates.record import PowerStates, TransitionCost
from eams.kube.names import ASLEEP_TAINT, POWER_STATE_ANNOTATION, WORK_ANNOTATION
from eams.kube.wakerequest import WakeRequest
from eams.scheduler.extender.decisions import record_settings
from eams.scheduler.extender.nodes import NodeCache
from eams.scheduler.extender.table import NodeTable
from eams.scheduler.extender.wakes import HOLD_REASON
from eams.scheduler.record import Placement, Query, Wake, read_records
from eams.scheduler.record.explain import explain_pod, render_pod
from tests.extender.conftest import (
    args_names,
    node_object,
    pod_object,
    post_json,
    sample,
    write_calibration,
)
from tests.power.live import NOW

pytestmark = pytest.mark.anyio

WAKE_TIME_S = 9.0


def _measured(folder: Path, node: str, p_idle_w: float, p_max_w: float) -> None:
    """A line calibration with a measured suspend-to-RAM (wol): 3 W asleep, 9 s and 100 J to
    wake, 2 s and 40 J to suspend."""
    path = write_calibration(folder, node, p_idle_w, p_max_w)

    def cost(time_s: float, energy_j: float) -> TransitionCost:
        return TransitionCost(
            time_s=estimate([time_s] * 3, 0.1), energy_j=estimate([energy_j] * 3, 1.0)
        )

    states = PowerStates(
        measured_at=NOW, method="wol", meter="snmp://pdu:161", outlet=1, repeats=3,
        p_suspend_w=estimate([3.0] * 3, 0.1), suspend=cost(2.0, 40.0),
        wake=cost(WAKE_TIME_S, 100.0),
    )  # fmt: skip
    save_calibration(load_calibration(path).with_power_states(states), path)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "sleep-states"
    out.mkdir()
    _measured(out, "busy", 80.0, 300.0)
    _measured(out, "frugal", 40.0, 120.0)
    _measured(out, "spare", 50.0, 140.0)
    write_calibration(out, "unmeasured", 20.0, 60.0)  # the cheapest line, but no sleep state
    return out


def asleep(name: str, state: str = "asleep", **labels: str) -> dict[str, Any]:
    """A node as the power manager leaves it asleep (cordon, taint, power-state annotation)."""
    node = node_object(name)
    node["metadata"]["labels"].update(labels)
    node["metadata"]["annotations"] = {POWER_STATE_ANNOTATION: state}
    node["spec"] = {
        "unschedulable": True,
        "taints": [{"key": ASLEEP_TAINT, "effect": "NoSchedule"}],
    }
    return node


def hour_pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    pod = pod_object(name, cpu="1")
    pod["metadata"]["annotations"] = {WORK_ANNOTATION: "3600"}
    pod["spec"].update(spec)
    return pod


async def start(make_client, clock, folder: Path, busy_headroom: float, *sleeping, **settings):
    """The extender (active, no window unless ``settings`` give one) with ``busy`` awake at
    ``busy_headroom`` and the nodes ``sleeping``; returns the client and the wake requests it
    sent."""
    settings = {"mode": "active", "window_ms": 0, "calibrations_dir": folder, **settings}
    client = await make_client(**settings)
    requests: list[WakeRequest] = []
    client.app.state.extender.on_wake_request = requests.append
    await post_json(client, "/nodes", {"items": [node_object("busy"), *sleeping]})
    busy = sample("busy", clock() - 1.0, busy_headroom, power_cap_w=280.0, utilisation=0.7)
    await post_json(client, "/telemetry", {"samples": [busy]})
    return client, requests


async def filter_(client, pod: dict[str, Any], names: list[str]) -> dict[str, Any]:
    response = await post_json(client, "/filter", args_names(pod, names))
    assert response.status_code == 200
    return response.json()


async def test_a_pod_waits_for_the_asleep_node_it_is_cleared_onto_and_binds_there(
    make_client, clock, folder, tmp_path: Path
) -> None:
    record = record_settings(tmp_path / "record")
    client, requests = await start(make_client, clock, folder, 0.1, asleep("frugal"), record=record)
    held = await filter_(client, hour_pod(), ["busy"])
    assert held["NodeNames"] == [] and held["FailedNodes"] == {"busy": HOLD_REASON}
    assert requests == [WakeRequest("frugal", ("default/p",), clock())]
    again = await filter_(client, hour_pod(), ["busy"])  # asked again while it wakes: held
    assert again["NodeNames"] == [] and len(requests) == 1
    clock.now_s += WAKE_TIME_S  # the manager woke it: released, Ready, reporting
    await post_json(client, "/nodes", {"items": [node_object("frugal")]})
    lagging = await filter_(client, hour_pod(), ["busy"])  # kube-scheduler's cache lags
    assert lagging["NodeNames"] == [] and requests[-1].pods == ("default/p",)
    idle = sample("frugal", clock() - 0.5, 0.6, power_cap_w=150.0, utilisation=0.01)
    await post_json(client, "/telemetry", {"samples": [idle]})
    woken = await filter_(client, hour_pod(), ["busy", "frugal"])
    assert woken["NodeNames"] == ["frugal"] and woken["FailedNodes"] == {"busy": HOLD_REASON}
    assert requests[-1].pods == ()  # the request is over: no wake for a pod that is placed
    metrics = (await client.get("/metrics")).text
    assert 'eams_extender_market_wakes_total{event="asked"} 1.0' in metrics
    assert 'eams_extender_market_wakes_total{event="released"} 1.0' in metrics
    client.app.state.extender.decisions.recorder.flush()
    (line,) = read_records(tmp_path / "record", Query(pod="default/p")).records
    assert isinstance(line, Wake) and (line.node, line.event) == ("frugal", "asked")
    assert line.wake_bid is not None and line.awake_bid is not None
    assert line.wake_bid > line.awake_bid and line.wait_s == WAKE_TIME_S
    assert line.wake_energy_j == 100.0
    text = render_pod(explain_pod([line], "p"))
    assert "held for frugal (asleep); its wake asked" in text and "no binding on record" in text


async def test_a_pod_never_waits_when_an_awake_node_is_the_better_price(
    make_client, clock, folder
) -> None:
    client, requests = await start(make_client, clock, folder, 0.6, asleep("frugal"))
    answer = await filter_(client, hour_pod(), ["busy"])
    assert answer["NodeNames"] == ["busy"] and answer["FailedNodes"] == {} and requests == []
    # half-closed gate (σ(25·0.005) = 0.53): the hour's pod still waits, a 20 s pod loses a
    # third of its bid to the 9 s wait (20/29) and goes to busy at once
    client, requests = await start(make_client, clock, folder, 0.23, asleep("frugal"))
    short = hour_pod("short")
    short["metadata"]["annotations"][WORK_ANNOTATION] = "20"
    assert (await filter_(client, short, ["busy"]))["NodeNames"] == ["busy"] and requests == []
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == []
    assert [r.node for r in requests] == ["frugal"]


async def test_a_failed_wake_sends_the_pod_to_the_next_best_node(
    make_client, clock, folder
) -> None:
    client, requests = await start(
        make_client, clock, folder, 0.1, asleep("frugal"), asleep("spare")
    )
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == []
    assert [r.node for r in requests] == ["frugal"]
    await post_json(client, "/nodes", {"items": [asleep("frugal", "asleep-suspect")]})
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == []
    # frugal's request is over (its annotation goes), spare is the next best asleep node
    assert [(r.node, r.pods) for r in requests[1:]] == [
        ("frugal", ()),
        ("spare", ("default/p",)),
    ]
    clock.now_s += 2 * WAKE_TIME_S + 1.0  # spare never came back within twice its wake time
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == ["busy"]
    assert requests[-1] == WakeRequest("spare", (), requests[-2].at_s)
    metrics = (await client.get("/metrics")).text
    assert 'eams_extender_market_wakes_total{event="failed"} 2.0' in metrics


async def test_only_a_measured_node_the_pod_may_use_is_woken(make_client, clock, folder) -> None:
    unmeasured = asleep("unmeasured")
    picky = hour_pod("picky", nodeSelector={"disk": "ssd"})
    client, requests = await start(make_client, clock, folder, 0.1, unmeasured, asleep("frugal"))
    assert (await filter_(client, picky, ["busy"]))["NodeNames"] == ["busy"]  # no ssd asleep
    assert requests == []
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == []
    assert [r.node for r in requests] == ["frugal"]  # not the cheaper line without a sleep state
    suspending = asleep("spare", "suspending", disk="ssd")
    await post_json(client, "/nodes", {"items": [suspending]})
    assert (await filter_(client, picky, ["busy"]))["NodeNames"] == ["busy"]


async def test_shadow_mode_and_no_market_wakes_never_hold(make_client, clock, folder) -> None:
    for settings in ({"mode": "shadow"}, {"mode": "active", "market_wakes": False}):
        client = await make_client(window_ms=0, calibrations_dir=folder, **settings)
        await post_json(client, "/nodes", {"items": [node_object("busy"), asleep("frugal")]})
        busy = sample("busy", clock() - 1.0, 0.1, power_cap_w=280.0, utilisation=0.7)
        await post_json(client, "/telemetry", {"samples": [busy]})
        assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == ["busy"]


async def test_a_held_pod_is_released_as_soon_as_kube_scheduler_offers_its_node(
    make_client, clock, folder
) -> None:
    """kube-scheduler's cache may see the node released before the extender's watch does: the
    node among the candidates is enough (else the pod would stay held, and no later cluster
    event need come to requeue it)."""
    client, requests = await start(make_client, clock, folder, 0.1, asleep("frugal"))
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == []
    clock.now_s += 1.0  # still "waking" in the extender's view, but offered
    answer = await filter_(client, hour_pod(), ["busy", "frugal"])
    assert answer["NodeNames"] == ["frugal"] and requests[-1].pods == ()


# The batch window (issue 33's contended band, eams-batch+pm held 3,091-3,370 of 7,254 pods for a
# wake, eams+pm 255-280): the window clears a pod before kube-scheduler asks about it, and leaves
# its herding reservation on the node it cleared it onto; a 1-core pod's on busy is 27.5 W of its
# 280 W cap (-0.098 of headroom). The default floor is 0.05.


async def test_an_asleep_node_is_not_promised_to_more_pods_than_it_has_room_for(
    make_client, clock, folder
) -> None:
    """frugal has 2 CPUs: two one-CPU pods are held for it, the third finds no room left there
    and goes to busy (the better price was frugal's, as for the first two); once the first
    two are placed, frugal has room again."""
    client, requests = await start(make_client, clock, folder, 0.1, asleep("frugal"))
    small = asleep("frugal")
    small["status"] = node_object("frugal", cpu="2")["status"]
    await post_json(client, "/nodes", {"items": [small]})
    for name in ("a", "b"):
        assert (await filter_(client, hour_pod(name), ["busy"]))["NodeNames"] == []
    assert requests[-1].pods == ("default/a", "default/b")
    third = await filter_(client, hour_pod("c"), ["busy"])
    assert third["NodeNames"] == ["busy"] and requests[-1].pods == ("default/a", "default/b")
    again = await filter_(client, hour_pod("a"), ["busy"])  # a held pod's own room stays its
    assert again["NodeNames"] == []
    wakes = client.app.state.extender.wakes
    for name in ("a", "b"):
        wakes.forget(f"default/{name}")  # bound elsewhere, or deleted
    assert (await filter_(client, hour_pod("d"), ["busy"]))["NodeNames"] == []


async def _cleared(client, pod: dict[str, Any]) -> None:
    """The pod announced (the pod watch's ``/pending``) and its window closed before
    kube-scheduler asks about it."""
    await post_json(client, "/pending", {"items": [pod]})
    client.app.state.extender.batcher.clear_pending()


async def test_a_pod_its_window_cleared_onto_an_awake_node_does_not_bid_against_itself(
    make_client, clock, folder
) -> None:
    """busy at headroom 0.30: the single-pod path places the pod there (σ(25·0.075) = 0.87).
    Its own reservation counted, busy would be at 0.20 (σ = 0.36) and the pod held for
    frugal."""
    client, requests = await start(
        make_client, clock, folder, 0.30, asleep("frugal"), window_ms=200
    )
    await _cleared(client, hour_pod())
    assert client.app.state.extender.herd.held_by("default/p")[0] == "busy"
    answer = await filter_(client, hour_pod(), ["busy"])
    assert answer["NodeNames"] == ["busy"] and answer["FailedNodes"] == {} and requests == []


async def test_a_held_pod_leaves_no_reservation_on_the_awake_node_its_window_chose(
    make_client, clock, folder
) -> None:
    """busy at headroom 0.10: the window clears pod a onto busy (frugal's last sample, from
    before it slept, is too old to bid on), the wake market then holds it for frugal (the
    better price). Its reservation left on busy (0.10 − 0.098 < the floor) would keep busy off
    for pod b, which no asleep node admits, though a will not land on busy while it waits."""
    client, requests = await start(
        make_client, clock, folder, 0.10, asleep("frugal"), window_ms=200
    )
    extender = client.app.state.extender
    ssd = node_object("busy")
    ssd["metadata"]["labels"]["disk"] = "ssd"
    await post_json(client, "/nodes", {"items": [ssd]})
    slept = sample("frugal", clock() - 300.0, 0.6, power_cap_w=150.0, utilisation=0.0)
    await post_json(client, "/telemetry", {"samples": [slept]})
    await _cleared(client, hour_pod("a"))
    assert extender.herd.held_by("default/a")[0] == "busy"
    assert (await filter_(client, hour_pod("a"), ["busy"]))["NodeNames"] == []
    assert [r.node for r in requests] == ["frugal"]
    picky = hour_pod("b", nodeSelector={"disk": "ssd"})
    await _cleared(client, picky)
    answer = await filter_(client, picky, ["busy"])
    assert answer["NodeNames"] == ["busy"] and answer["FailedNodes"] == {}
    assert extender.herd.held_by("default/a") is None


async def test_a_window_reserves_no_idle_power_on_an_awake_empty_node(
    make_client, clock, folder
) -> None:
    """spare is awake and empty, its reading shows its 50 W idle (cap 120 W: headroom 0.58);
    busy's gate is shut (headroom 0.10). The window clears pod a onto spare: its reservation is
    a 1-core pod's dynamic power, 90 W / 8 = 11.25 W (−0.094 of headroom). With spare's idle
    50 W counted again (−0.51), pod b saw spare at 0.07, its gate shut (σ(25·(0.07 − 0.225))
    = 0.02), and was held for asleep frugal; the single-pod path, which reserves nothing,
    places it on spare."""
    client, requests = await start(
        make_client, clock, folder, 0.10, asleep("frugal"), window_ms=200
    )
    extender = client.app.state.extender
    await post_json(client, "/nodes", {"items": [node_object("spare")]})
    idle = sample("spare", clock() - 1.0, 1.0 - 50.0 / 120.0, power_cap_w=120.0, utilisation=0.0)
    await post_json(client, "/telemetry", {"samples": [idle]})
    await _cleared(client, hour_pod("a"))
    node, reserved_w = extender.herd.held_by("default/a")
    assert node == "spare" and reserved_w == pytest.approx(90.0 / 8, rel=1e-6)
    answer = await filter_(client, hour_pod("b"), ["busy", "spare"])
    assert answer["NodeNames"] == ["busy", "spare"] and requests == []


async def test_pods_one_window_cleared_onto_a_node_do_not_floor_each_other_there(
    make_client, clock, folder
) -> None:
    """spare (awake, drawing 135 W of its 150 W cap: headroom 0.10) is the better price for two
    one-core pods; one window clears both onto it, each reserving 11.25 W (−0.075). Counting
    the other's reservation, each pod saw spare under the floor (0.025 < 0.05) and, with busy's
    gate shut, was held for asleep frugal. The clearing filled spare with both; a pod outside
    it still finds spare under the floor."""
    client, requests = await start(
        make_client, clock, folder, 0.10, asleep("frugal"), window_ms=200
    )
    extender = client.app.state.extender
    await post_json(client, "/nodes", {"items": [node_object("spare")]})
    full = sample("spare", clock() - 1.0, 0.10, power_cap_w=150.0, utilisation=0.9)
    await post_json(client, "/telemetry", {"samples": [full]})
    await post_json(client, "/pending", {"items": [hour_pod("a"), hour_pod("b")]})
    extender.batcher.clear_pending()
    assert [extender.herd.held_by(f"default/{p}")[0] for p in "ab"] == ["spare", "spare"]
    for name in "ab":
        answer = await filter_(client, hour_pod(name), ["busy", "spare"])
        assert answer["NodeNames"] == ["busy", "spare"] and answer["FailedNodes"] == {}
    assert requests == []
    other = await filter_(client, hour_pod("c"), ["busy", "spare"])
    assert "spare" in other["FailedNodes"]


async def test_a_held_pod_is_not_cleared_again_by_the_next_window(
    make_client, clock, folder
) -> None:
    """busy at headroom 0.10: pod a, first seen at its ``/filter``, is held for frugal there
    (the better price) but stayed in the pending batch, and the window that closed next
    cleared it onto busy (the clearing knows nothing of the floor), its reservation
    (0.10 − 0.098 < the floor 0.05) keeping busy off for pod b, which no asleep node admits
    and which was held in turn (traced in issue 33's band at 1,000 nodes: 2,236 of the
    reservations flooring the one awake candidate of a pod held for a wake were of pods
    already held). A held pod waits for its wake, not for a clearing; once its node is
    offered it is cleared there at its ``/filter``: with one node left kube-scheduler binds it
    without a ``/prioritize``, and before it would have bound with no clearing (no record
    line) and no herding reservation on the node it lands on."""
    record = record_settings(folder.parent / "record")
    client, requests = await start(
        make_client, clock, folder, 0.10, asleep("frugal"), window_ms=200, record=record
    )
    extender = client.app.state.extender
    ssd = node_object("busy")
    ssd["metadata"]["labels"]["disk"] = "ssd"
    await post_json(client, "/nodes", {"items": [ssd]})
    assert (await filter_(client, hour_pod("a"), ["busy"]))["NodeNames"] == []
    assert [r.node for r in requests] == ["frugal"]
    extender.batcher.clear_pending()  # the window closes
    assert extender.herd.held_by("default/a") is None
    picky = hour_pod("b", nodeSelector={"disk": "ssd"})
    await _cleared(client, picky)
    answer = await filter_(client, picky, ["busy"])
    assert answer["NodeNames"] == ["busy"] and answer["FailedNodes"] == {}
    assert (await filter_(client, hour_pod("a"), ["busy"]))["NodeNames"] == []  # still held
    clock.now_s += WAKE_TIME_S  # frugal woke: released and offered
    await post_json(client, "/nodes", {"items": [node_object("frugal")]})
    woken = await filter_(client, hour_pod("a"), ["busy", "frugal"])
    assert woken["NodeNames"] == ["frugal"]
    assert extender.herd.held_by("default/a")[0] == "frugal"
    extender.decisions.flush()  # the lines its clearings queued
    extender.decisions.recorder.flush()
    lines = read_records(folder.parent / "record", Query(pod="default/a")).records
    assert [r.node for r in lines if isinstance(r, Wake)] == ["frugal"]
    assert [r.cleared_node for r in lines if isinstance(r, Placement)] == ["frugal"]


async def test_a_pod_whose_wake_failed_is_cleared_again_at_its_filter(
    make_client, clock, folder, tmp_path: Path
) -> None:
    """With a window: frugal's wake fails (``asleep-suspect``) and nothing else is asleep, so
    the pod goes to the awake candidates; it left the batch at its hold, so it is cleared at
    that ``/filter``, where its one candidate is bound without a ``/prioritize``."""
    record = record_settings(tmp_path / "record")
    client, requests = await start(
        make_client, clock, folder, 0.10, asleep("frugal"), window_ms=200, record=record
    )
    extender = client.app.state.extender
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == []
    assert extender.batcher.pending("default/p") is None
    await post_json(client, "/nodes", {"items": [asleep("frugal", "asleep-suspect")]})
    assert (await filter_(client, hour_pod(), ["busy"]))["NodeNames"] == ["busy"]
    assert [r.pods for r in requests] == [("default/p",), ()]
    assert extender.herd.held_by("default/p")[0] == "busy"
    extender.decisions.flush()  # the lines its clearings queued
    extender.decisions.recorder.flush()
    lines = read_records(tmp_path / "record", Query(pod="default/p")).records
    assert [r.cleared_node for r in lines if isinstance(r, Placement)] == ["busy"]


async def test_a_pod_whose_wake_failed_is_cleared_over_the_nodes_its_filter_passes(
    make_client, clock, folder
) -> None:
    """kube-scheduler offers busy and ``low``, which is under the headroom floor: ``/filter``
    passes busy alone, so the pod's clearing where its hold ends is over busy alone (it was
    over both: a clearing could put it on a node it cannot bind to, its reservation there)."""
    client, _ = await start(
        make_client, clock, folder, 0.10, asleep("frugal"), node_object("low"), window_ms=200
    )
    extender = client.app.state.extender
    floored = sample("low", clock() - 1.0, 0.01, power_cap_w=280.0, utilisation=0.9)
    await post_json(client, "/telemetry", {"samples": [floored]})
    assert (await filter_(client, hour_pod(), ["busy", "low"]))["NodeNames"] == []
    await post_json(client, "/nodes", {"items": [asleep("frugal", "asleep-suspect")]})
    assert (await filter_(client, hour_pod(), ["busy", "low"]))["NodeNames"] == ["busy"]
    row = extender.batcher.row("default/p")
    assert row is not None and row.source is not None
    assert row.source.candidates == frozenset({"busy"})


async def test_a_pod_announced_while_held_stays_out_of_the_batch(
    make_client, clock, folder
) -> None:
    """A held pod's watch update (``/pending``) does not put it back in the batch: the next
    window would clear it onto the awake node just refused to it, with a reservation there."""
    client, _ = await start(make_client, clock, folder, 0.10, asleep("frugal"), window_ms=200)
    extender = client.app.state.extender
    assert (await filter_(client, hour_pod("a"), ["busy"]))["NodeNames"] == []
    await post_json(client, "/pending", {"items": [hour_pod("a")]})
    assert extender.batcher.pending("default/a") is None
    extender.batcher.clear_pending()
    assert extender.herd.held_by("default/a") is None


async def test_a_window_never_clears_a_pod_onto_an_asleep_node(make_client, clock, folder) -> None:
    """busy's gate is nearly shut (headroom 0.05: σ(25·(0.05 − 0.225)) = 0.012, a bid of
    ≈ 0.00044); ``unmeasured`` is asleep and never reported, so on the awake model it is an
    empty node of unknown headroom (its gate at 0.10: 0.042) and the better bid (20 W idle
    + 5 W for the core: ≈ 0.0017). kube-scheduler never offers it (its ``eams.io/asleep``
    taint), and with no measured wake the wake market never holds a pod for it. Its window
    cleared the pod onto ``unmeasured`` anyway, left its herding reservation there, and the
    pod was cleared again at its ``/prioritize``. The window clears over the awake nodes: onto
    busy, the node it binds to; asleep nodes are priced by the wake market alone
    (``wakes.py``), which still holds an hour's pod for frugal once it sleeps."""
    client, requests = await start(
        make_client, clock, folder, 0.05, asleep("unmeasured"), window_ms=200
    )
    extender = client.app.state.extender
    await _cleared(client, hour_pod("a"))
    assert extender.batcher.row("default/a").node == "busy"
    assert extender.herd.held_by("default/a")[0] == "busy"
    answer = await filter_(client, hour_pod("a"), ["busy"])
    assert answer["NodeNames"] == ["busy"] and requests == []
    scores = await post_json(client, "/prioritize", args_names(hour_pod("a"), ["busy"]))
    assert scores.json() == [{"Host": "busy", "Score": 10}]
    registry = extender.metrics.registry
    assert registry.get_sample_value("eams_extender_reclearings_total") == 0.0
    await post_json(client, "/nodes", {"items": [asleep("frugal")]})
    await _cleared(client, hour_pod("b"))
    assert extender.batcher.row("default/b").node is None  # busy capped by a's reservation
    assert (await filter_(client, hour_pod("b"), ["busy"]))["NodeNames"] == []
    assert [r.node for r in requests] == ["frugal"]


def test_the_awake_names_follow_the_asleep_taint() -> None:
    """What a window clears over: one list object while no node sleeps, wakes, comes or goes
    (the market's column caches hold by identity), a new one as soon as one does."""
    nodes = NodeCache(NodeTable())
    nodes.learn([node_object("busy"), node_object("frugal")], "items")
    assert nodes.awake_names() is nodes.names()
    nodes.learn([asleep("frugal")], "items")
    awake = nodes.awake_names()
    assert awake == ["busy"] and nodes.awake_names() is awake
    nodes.learn([asleep("frugal", "waking")], "items")  # still tainted: not offered
    assert nodes.awake_names() is awake
    nodes.learn([node_object("spare")], "items")
    assert nodes.awake_names() == ["busy", "spare"]
    nodes.learn([node_object("frugal")], "items")  # released
    assert nodes.awake_names() == ["busy", "frugal", "spare"]
    nodes.learn([asleep("spare")], "items")
    nodes.forget("spare")
    assert nodes.awake_names() == ["busy", "frugal"]

"""Batch windows, the clearing table, shadow mode, the herding guard and headroom recovery."""

from __future__ import annotations

import numpy as np
import pytest

from eams.kube.pods import PodObject
from eams.kube.requests import PodRequest
from eams.scheduler.extender.batching import Batcher
from eams.scheduler.extender.pending import PendingPod, pending_pod
from eams.scheduler.extender.rows import Cleared, Columns
from eams.scheduler.extender.service import FILTER_REASON
from tests.extender.conftest import (
    args_names,
    eventually,
    node_object,
    pod_object,
    post_json,
    sample,
)

pytestmark = pytest.mark.anyio

NAMES = ["node-a", "node-b", "node-c"]


async def _cluster(client, clock, headroom: float = 0.6, cpu: str = "8") -> None:
    await post_json(client, "/nodes", {"items": [node_object(n, cpu=cpu) for n in NAMES]})
    samples = [sample(n, clock() - 1.0, headroom) for n in NAMES]
    await post_json(client, "/telemetry", {"samples": samples})


def _metric(text: str, name: str) -> float:
    line = next(
        line
        for line in text.splitlines()
        if line.startswith(name + " ") or line.startswith(name + "{")
    )
    return float(line.rsplit(" ", 1)[1])


async def test_announced_batch_clears_into_the_table(make_client, clock) -> None:
    client = await make_client(mode="active", window_ms=40)
    await _cluster(client, clock)
    # A bound pod takes 7 of node-a's 8 cores: the cheapest node has room for one 1-core pod.
    bound = pod_object("bound", cpu="7")
    bound["spec"]["nodeName"] = "node-a"
    pods = [pod_object(f"p{i}", cpu="1") for i in range(3)]
    assert (await post_json(client, "/pending", {"items": [bound, *pods]})).json() == {
        "accepted": 4
    }
    batcher = client.app.state.extender.batcher
    await eventually(lambda: all(batcher.row(f"default/p{i}") for i in range(3)))
    winners = []
    for pod in pods:
        answer = (await post_json(client, "/prioritize", args_names(pod, NAMES))).json()
        (cleared,) = answer  # only the cleared node: the one entry that decides
        assert cleared == {"Host": batcher.row(f"default/{pod['metadata']['name']}").node,
                           "Score": 10}  # fmt: skip
        winners.append(cleared["Host"])
    assert winners.count("node-a") == 1  # one slot, one pod
    metrics = (await client.get("/metrics")).text
    assert _metric(metrics, "eams_extender_clearings_total") == 1.0
    assert _metric(metrics, "eams_extender_batch_pods_sum") == 3.0
    assert 'eams_extender_fallbacks_total{reason="no_row"}' not in metrics
    assert 'eams_extender_node_price{node="node-a"}' in metrics
    # A finished pod reported on /pending frees its node.
    assert client.app.state.extender.nodes.used("node-a")[0] == 7000
    bound["status"]["phase"] = "Succeeded"
    await post_json(client, "/pending", {"items": [bound]})
    assert client.app.state.extender.nodes.used("node-a") == (0, 0, 0)


async def test_a_pod_another_gate_holds_joins_no_batch_from_pending(make_client, clock) -> None:
    """``POST /pending`` (the watch's HTTP twin) leaves out a pod another controller's
    scheduling gate holds, as the watch does, and takes it once that gate is lifted."""
    client = await make_client(mode="active", window_ms=40)
    await _cluster(client, clock)
    held = pod_object("queued", cpu="1")
    held["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    await post_json(client, "/pending", {"items": [held, pod_object("free", cpu="1")]})
    batcher = client.app.state.extender.batcher
    await eventually(lambda: batcher.row("default/free") is not None)
    assert batcher.row("default/queued") is None and not batcher.waiting("default/queued")
    held["spec"]["schedulingGates"] = []
    await post_json(client, "/pending", {"items": [held]})
    await eventually(lambda: batcher.row("default/queued") is not None)


async def test_prioritize_waits_for_the_window(make_client, clock) -> None:
    client = await make_client(mode="active", window_ms=60)
    await _cluster(client, clock)
    # Unannounced pod: prioritize itself opens a window and waits for it (≤ W + 50 ms).
    scores = (await post_json(client, "/prioritize", args_names(pod_object("late"), NAMES))).json()
    assert {e["Host"]: e["Score"] for e in scores}["node-a"] == 10
    metrics = (await client.get("/metrics")).text
    assert _metric(metrics, "eams_extender_clearings_total") == 1.0


def _rows(batch: list[PendingPod]) -> list[Cleared]:
    scores = np.array([10], dtype=np.int8)
    return [Cleared(p.key, "node-a", 0.0, 0.0, False, scores, Columns(["node-a"])) for p in batch]


def _pod(name: str) -> PendingPod:
    return PendingPod(f"default/{name}", PodRequest(100, 0), 1.0, "default", None)


async def test_asking_clears_the_batch_at_once_with_the_pods_not_reached_yet() -> None:
    # kube-scheduler asks about p0 long before W ends: nobody waits for the window; p0's batch
    # holds every pod announced so far (the ones the scheduler has not reached), p0 first.
    batches: list[list[str]] = []

    def clear(batch: list[PendingPod]) -> list[Cleared]:
        batches.append([p.key for p in batch])
        return _rows(batch)

    batcher = Batcher(10.0, 60.0, clear, clock=lambda: 0.0, max_batch_pods=3)
    for name in ("p1", "p2", "p0", "p3"):
        batcher.submit(_pod(name))
    assert batcher.clear_for("default/p0").node == "node-a"
    assert batches == [["default/p0", "default/p1", "default/p2"]]  # at most max_batch_pods
    assert batcher.row("default/p1") is not None and batcher.waiting("default/p3")
    assert batcher.clear_for("default/p1").node == "node-a" and len(batches) == 1  # from the row
    await batcher.close()


async def test_the_window_clears_pods_nobody_asked_about() -> None:
    batches: list[list[str]] = []

    def clear(batch: list[PendingPod]) -> list[Cleared]:
        batches.append([p.key for p in batch])
        return _rows(batch)

    batcher = Batcher(0.05, 60.0, clear, clock=lambda: 0.0)
    batcher.submit(_pod("p"))
    assert batches == []
    await eventually(lambda: bool(batches))
    assert batches == [["default/p"]] and batcher.row("default/p") is not None
    await batcher.close()


async def test_a_failing_clearing_leaves_no_row_and_the_pod_gets_its_single_pod_score(
    make_client, clock
) -> None:
    def broken(batch: list[PendingPod]) -> list[Cleared]:
        raise RuntimeError("engine bug")

    batcher = Batcher(0.01, 60.0, broken, clock=lambda: 0.0)
    batcher.submit(_pod("p"))
    assert batcher.clear_for("default/p") is None and not batcher.waiting("default/p")
    await batcher.close()
    client = await make_client(mode="active", window_ms=200)
    await _cluster(client, clock)
    client.app.state.extender.batcher._clear = broken
    scores = (await post_json(client, "/prioritize", args_names(pod_object("p"), NAMES))).json()
    assert {e["Host"]: e["Score"] for e in scores}["node-a"] == 10  # the single-pod bid
    metrics = (await client.get("/metrics")).text
    assert _metric(metrics, 'eams_extender_fallbacks_total{reason="no_row"}') == 1.0


async def test_shadow_mode_is_neutral_and_records(make_client, clock) -> None:
    client = await make_client(mode="shadow", window_ms=30, headroom_floor=0.3)
    await _cluster(client, clock)
    await post_json(client, "/telemetry", {"samples": [sample("node-b", clock(), 0.1)]})
    filtered = (await post_json(client, "/filter", args_names(pod_object("p"), NAMES))).json()
    assert filtered["NodeNames"] == NAMES and filtered["FailedNodes"] == {}
    scores = (await post_json(client, "/prioritize", args_names(pod_object("p"), NAMES))).json()
    assert scores == []  # no node listed: each gets what a 0 gets
    extender = client.app.state.extender
    await eventually(lambda: any(r["kind"] == "clearing" for r in extender.recommendations))
    recorded = (await client.get("/recommendations")).json()
    assert {"pod": "default/p", "kind": "filter", "would_filter": ["node-b"]}.items() <= recorded[
        0
    ].items()
    assert recorded[-1]["kind"] == "clearing" and recorded[-1]["node"] == "node-a"
    metrics = (await client.get("/metrics")).text
    assert _metric(metrics, 'eams_extender_filtered_nodes_total{mode="shadow"}') == 1.0
    # Shadow places nothing, so it reserves no headroom either.
    assert client.app.state.extender.herd.count("node-a") == 0


async def test_herding_guard_then_telemetry_catches_up(make_client, clock) -> None:
    client = await make_client(
        mode="active", window_ms=20, headroom_floor=0.3, recovery_margin=0.05, herd_settle_s=5.0
    )
    extender = client.app.state.extender
    await _cluster(client, clock, headroom=0.5, cpu="4")
    # A 4-core pod on a 4-core node-a (cheapest): expected (120 − 40) W, cap 200 W → −0.4.
    first = (
        await post_json(client, "/prioritize", args_names(pod_object("big", cpu="4"), NAMES))
    ).json()
    assert {e["Host"]: e["Score"] for e in first}["node-a"] == 10
    assert extender.herd.count("node-a") == 1
    second = (await post_json(client, "/filter", args_names(pod_object("next"), NAMES))).json()
    assert second["FailedNodes"] == {"node-a": FILTER_REASON}  # 0.5 − 0.4 < 0.3: not flooded
    assert extender.floor.below(clock()) == {"node-a"}
    # kube-scheduler binds it there: its reservation now counts toward the taint as well.
    bound = {**pod_object("big", cpu="4"), "status": {"phase": "Running"}}
    bound["spec"] = {**bound["spec"], "nodeName": "node-a"}
    await post_json(client, "/pending", {"items": [bound]})
    assert extender.floor.to_taint(clock()) == {"node-a"}
    # A sample measured before the settle time does not end the reservation...
    clock.now_s += 2.0
    await post_json(client, "/telemetry", {"samples": [sample("node-a", clock(), 0.5)]})
    assert extender.herd.count("node-a") == 1 and "node-a" not in extender.floor.recovered(clock())
    # ...one measured after it does: the node's own power now includes the pod.
    clock.now_s += 4.0
    await post_json(client, "/telemetry", {"samples": [sample("node-a", clock(), 0.45)]})
    assert extender.herd.count("node-a") == 0
    assert "node-a" in extender.floor.recovered(clock()) and not extender.floor.below(clock())
    assert not extender.floor.to_taint(clock())
    third = (await post_json(client, "/filter", args_names(pod_object("third"), NAMES))).json()
    assert third["NodeNames"] == NAMES


async def test_a_pods_own_reservation_does_not_filter_its_cleared_node(make_client, clock) -> None:
    # The demo under load (CI, 2 Dec): the batch cleared a pod onto mini-6 before its /filter
    # call, its reservation pushed mini-6 under the floor, /filter refused mini-6 and the pod
    # was bound elsewhere ("not honoured"). Its own reservation must not count against it.
    client = await make_client(mode="active", window_ms=20, headroom_floor=0.3, herd_settle_s=5.0)
    extender = client.app.state.extender
    await _cluster(client, clock, headroom=0.5, cpu="4")
    big = pod_object("big", cpu="4")
    first = (await post_json(client, "/prioritize", args_names(big, NAMES))).json()
    assert {e["Host"]: e["Score"] for e in first}["node-a"] == 10  # cleared and reserved there
    assert extender.floor.below(clock()) == {"node-a"}  # 0.5 − 0.4 < 0.3
    again = (await post_json(client, "/filter", args_names(big, NAMES))).json()
    assert again["NodeNames"] == NAMES and not again["FailedNodes"]
    other = (await post_json(client, "/filter", args_names(pod_object("next"), NAMES))).json()
    assert other["FailedNodes"] == {"node-a": FILTER_REASON}  # the floor still holds for others


async def test_a_pod_created_again_under_its_name_does_not_inherit_the_old_row(
    make_client, clock
) -> None:
    # A StatefulSet pod is deleted and created again as web-0 with a new UID (and here a size
    # that now fits): the old pod's clearing row (nothing fitted) must not answer for it.
    client = await make_client(mode="active", window_ms=30)
    await _cluster(client, clock)
    old = pod_object("web-0", cpu="64")
    scores = (await post_json(client, "/prioritize", args_names(old, NAMES))).json()
    assert scores == []  # no node scores: it fits nowhere
    new = pod_object("web-0", cpu="500m")
    new["metadata"]["uid"] = "uid-web-0-again"
    scores = (await post_json(client, "/prioritize", args_names(new, NAMES))).json()
    assert {e["Host"]: e["Score"] for e in scores}["node-a"] == 10
    assert _metric((await client.get("/metrics")).text, "eams_extender_clearings_total") == 2.0


async def test_a_pod_created_again_while_the_old_one_is_pending_is_read_whole(
    make_client, clock
) -> None:
    # The old web-0 was announced (the pod watch) and still waits for its window when the new
    # one, created again under its name before the watch said the old one was deleted, is
    # asked about by name: it must not be answered (or cleared) as the old pod.
    client = await make_client(mode="active", window_ms=1000)
    extender = client.app.state.extender
    await _cluster(client, clock)
    await post_json(client, "/pending", {"items": [pod_object("web-0", cpu="64")]})
    assert not extender.announced("default/web-0", "uid-web-0-again")
    assert extender.announced("default/web-0", None)
    new = pod_object("web-0", cpu="500m")
    new["metadata"]["uid"] = "uid-web-0-again"
    scores = (await post_json(client, "/prioritize", args_names(new, NAMES))).json()
    assert {e["Host"]: e["Score"] for e in scores}["node-a"] == 10
    assert _metric((await client.get("/metrics")).text, "eams_extender_clearings_total") == 1.0


async def test_a_node_whose_reading_turns_stale_is_no_longer_kept_off(make_client, clock) -> None:
    # node-b was under the floor; its agent then stops. A reading older than 15 s never keeps
    # a node off (AR-6): the floor lets it go without any new sample (the taint comes off).
    client = await make_client(mode="active", window_ms=0, headroom_floor=0.3)
    extender = client.app.state.extender
    await _cluster(client, clock, headroom=0.6)
    await post_json(client, "/telemetry", {"samples": [sample("node-b", clock(), 0.1)]})
    first = (await post_json(client, "/filter", args_names(pod_object("p1"), NAMES))).json()
    assert first["FailedNodes"] == {"node-b": FILTER_REASON}
    assert "node-b" not in extender.floor.recovered(clock())
    clock.now_s += 20.0  # every reading is now older than 15 s
    second = (await post_json(client, "/filter", args_names(pod_object("p2"), NAMES))).json()
    assert second["NodeNames"] == NAMES and "node-b" in extender.floor.recovered(clock())


@pytest.mark.parametrize("cpu", ["100m", "1", "3", "7"])
@pytest.mark.parametrize("headroom", [0.6, 0.15])
async def test_a_batch_of_one_clears_to_the_node_the_engine_picks(
    make_client, clock, cpu: str, headroom: float
) -> None:
    # One bidder: the engine's short_lists row clears it to its best bid (a node where its
    # slots fit), with no flow and no auction; the reference is that maximum, taken here.
    client = await make_client(mode="active", window_ms=50)
    await _cluster(client, clock, headroom=0.6, cpu="4")
    await post_json(client, "/telemetry", {"samples": [sample("node-a", clock(), headroom)]})
    extender = client.app.state.extender
    pod = pending_pod(PodObject.model_validate(pod_object("p", cpu=cpu)))
    snapshot = extender.market.snapshot([pod], NAMES, clock())
    clearing, scores = extender.market.solve(snapshot)
    fits = snapshot.node_arrays.slots >= snapshot.pod_arrays.slots[0]
    usable = snapshot.feasible[0] & fits & (snapshot.values[0] > 0)
    engine = int(clearing.assignment[0])
    if usable.any():
        assert clearing.method == "short_lists" and clearing.gap_bound in (None, 0.0)
        assert engine >= 0 and clearing.value == snapshot.values[0][usable].max()
        assert scores[0, engine] == 10 and (scores[0] == 10).sum() == 1
    else:  # nowhere to go: the engine clears nothing at once
        assert engine == -1 and (scores[0] == 10).sum() == 0
    assert {"7": False, "3": True}.get(cpu, True) == usable.any()


async def test_a_clearing_past_its_budget_serves_the_engines_certified_assignment(
    make_client, clock
) -> None:
    """``clearing_budget_ms`` bounds the /prioritize call a clearing runs in: a budget spent
    before the engine starts still gives every pod of the batch a feasible cleared node (the
    engine's greedy completion, certified), counted as ``reason="budget"``."""
    client = await make_client(mode="active", window_ms=40, clearing_budget_ms=1e-6)
    await _cluster(client, clock, cpu="2")
    pods = [pod_object(f"p{i}", cpu="1") for i in range(5)]
    await post_json(client, "/pending", {"items": pods})
    batcher = client.app.state.extender.batcher
    await eventually(lambda: all(batcher.row(f"default/p{i}") for i in range(5)))
    nodes = [batcher.row(f"default/p{i}").node for i in range(5)]
    assert None not in nodes
    assert max(nodes.count(n) for n in NAMES) <= 2  # 2 cores a node, 1-core pods
    metrics = (await client.get("/metrics")).text
    assert _metric(metrics, 'eams_extender_fallbacks_total{reason="budget"}') == 1.0

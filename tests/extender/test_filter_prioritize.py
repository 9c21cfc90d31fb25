"""Filter and prioritize behaviour: the hard floor, staleness, scoring, mode matching."""

from __future__ import annotations

import pytest

from eams.scheduler.extender.schemas import ExtenderFilterResult, HostPriorityList
from eams.scheduler.extender.service import FILTER_REASON
from tests.extender.conftest import (
    args_full,
    args_names,
    node_object,
    pod_object,
    post_json,
    sample,
)

pytestmark = pytest.mark.anyio

NAMES = ["node-a", "node-b", "node-c"]


async def _cluster(
    client, clock, headroom: dict[str, float | None], ages_s: dict[str, float] | None = None
) -> None:
    await post_json(client, "/nodes", {"items": [node_object(n) for n in NAMES]})
    ages_s = ages_s or {}
    samples = [sample(n, clock() - ages_s.get(n, 1.0), h) for n, h in headroom.items()]
    assert (await post_json(client, "/telemetry", {"samples": samples})).status_code == 202


async def test_low_headroom_node_is_filtered_with_a_stable_reason(make_client, clock) -> None:
    client = await make_client(mode="active", window_ms=0, headroom_floor=0.05)
    await _cluster(client, clock, {"node-a": 0.6, "node-b": 0.02, "node-c": 0.5})
    result = ExtenderFilterResult.model_validate_json(
        (await post_json(client, "/filter", args_names(pod_object("p"), NAMES))).content
    )
    assert result.NodeNames == ["node-a", "node-c"]
    assert result.FailedNodes == {"node-b": FILTER_REASON}
    assert result.FailedAndUnresolvableNodes == {} and result.Error == ""
    full = (
        await post_json(
            client, "/filter", args_full(pod_object("p"), [node_object(n) for n in NAMES])
        )
    ).json()
    assert [i["metadata"]["name"] for i in full["Nodes"]["items"]] == ["node-a", "node-c"]
    assert full["NodeNames"] is None


async def test_stale_telemetry_never_filters_but_ranks_lower(make_client, clock) -> None:
    pod = pod_object("p")
    fresh_client = await make_client(mode="active", window_ms=0)
    await _cluster(fresh_client, clock, {"node-a": 0.6, "node-b": 0.6, "node-c": 0.6})
    fresh = (await post_json(fresh_client, "/prioritize", args_names(pod, NAMES))).json()
    assert fresh[0] == {"Host": "node-a", "Score": 10}  # cheapest calibration, gate open
    # Same cluster, but node-a's and node-b's newest readings are 60 s old (AR-6: > 15 s);
    # node-b's even says it is nearly capped.
    client = await make_client(mode="active", window_ms=0, prioritize_answer="all")
    headroom = {"node-a": 0.6, "node-b": 0.02, "node-c": 0.6}
    await _cluster(client, clock, headroom, {"node-a": 60.0, "node-b": 60.0})
    result = (await post_json(client, "/filter", args_names(pod, NAMES))).json()
    assert result["NodeNames"] == NAMES and result["FailedNodes"] == {}  # stale: never filtered
    scores = (await post_json(client, "/prioritize", args_names(pod, NAMES))).json()
    stale = {e["Host"]: e["Score"] for e in scores}
    # ĥ = 0.6 − κ·(60 − 15 s) = 0.15 nearly closes node-a's gate: node-c now wins.
    assert stale["node-c"] == 10 and stale["node-a"] < 10 and stale["node-b"] == 0


async def test_unknown_node_passes_and_scores_zero(make_client, clock) -> None:
    client = await make_client(mode="active", window_ms=0, prioritize_answer="all")
    await _cluster(client, clock, {"node-a": 0.6, "node-b": 0.6, "node-c": 0.6})
    names = [*NAMES, "node-unknown"]
    assert (await post_json(client, "/filter", args_names(pod_object("p"), names))).json()[
        "NodeNames"
    ] == names
    entries = HostPriorityList.validate_json(
        (await post_json(client, "/prioritize", args_names(pod_object("p"), names))).content
    )
    scores = {e.Host: e.Score for e in entries}
    assert scores["node-unknown"] == 0
    assert scores["node-a"] == 10 and all(0 <= s <= 10 for s in scores.values())


async def test_pod_larger_than_every_node(make_client, clock) -> None:
    client = await make_client(mode="active", window_ms=50)
    await _cluster(client, clock, {"node-a": 0.6, "node-b": 0.6, "node-c": 0.6})
    huge = pod_object("huge", cpu="64", memory="1Ti")
    # Resource fit is the built-in NodeResourcesFit's job (AR-4): the extender does not filter.
    assert (await post_json(client, "/filter", args_names(huge, NAMES))).json()[
        "NodeNames"
    ] == NAMES
    scores = (await post_json(client, "/prioritize", args_names(huge, NAMES))).json()
    assert scores == []  # no node scores (none fits): none listed, each gets a 0
    metrics = (await client.get("/metrics")).text
    assert "eams_extender_clearings_total 1.0" in metrics


async def test_zero_nodes_and_five_thousand_nodes(make_client, clock) -> None:
    client = await make_client(mode="active", window_ms=0, prioritize_answer="all")
    await _cluster(client, clock, {"node-a": 0.6})
    empty = await post_json(client, "/filter", args_names(pod_object("p"), []))
    assert empty.status_code == 200 and empty.json()["NodeNames"] == []
    assert (await post_json(client, "/prioritize", args_names(pod_object("p"), []))).json() == []
    empty_full = (await post_json(client, "/filter", args_full(pod_object("p"), []))).json()
    assert empty_full["Nodes"] == {"metadata": {}, "items": []}
    many = [f"n{i:04d}" for i in range(5000)]
    # Names the extender has never heard of: it steps aside (issue 15) rather than score all 0.
    blind = await post_json(client, "/filter", args_names(pod_object("p"), many))
    assert blind.status_code == 503
    assert blind.json()["Error"] == (
        "eams: stepping aside: none of the 5000 candidate nodes is known"
    )
    await post_json(client, "/nodes", {"items": [node_object(n) for n in many]})
    big = await post_json(client, "/filter", args_names(pod_object("p"), many))
    assert big.status_code == 200 and big.json()["NodeNames"] == many
    objects = [node_object(n, cpu="3900m", memory="16318064Ki") for n in many]
    big_full = await post_json(client, "/prioritize", args_full(pod_object("p"), objects))
    assert big_full.status_code == 200
    assert [e["Host"] for e in big_full.json()] == many


async def test_quantities_in_the_full_grammar(make_client, clock) -> None:
    client = await make_client(mode="active", window_ms=0)
    await _cluster(client, clock, {"node-a": 0.6, "node-b": 0.6, "node-c": 0.6})
    for cpu, memory in (("100m", "1.5Gi"), ("1e3", "0.1Gi"), ("1", "107374182400m"), (".5", "1e3")):
        response = await post_json(
            client, "/prioritize", args_names(pod_object("p", cpu, memory), NAMES)
        )
        assert response.status_code == 200, (cpu, memory, response.text)
    bad = await post_json(client, "/filter", args_names(pod_object("p", "1K"), NAMES))
    assert bad.status_code == 400
    assert bad.json()["Error"].startswith(
        "Pod.spec.containers[0].resources.requests.cpu: invalid quantity"
    )
    bad_node = node_object("node-x", memory="12 Gi")
    response = await post_json(client, "/filter", args_full(pod_object("p"), [bad_node]))
    assert response.status_code == 400
    assert response.json()["Error"].startswith("Nodes.items[0].status.allocatable.memory")


async def test_a_duplicated_node_name_is_answered_once(make_client, clock) -> None:
    # kube-scheduler adds up the scores of a host listed twice (reference §2.2): answering a
    # duplicated name twice would give that node double weight.
    client = await make_client(mode="active", window_ms=0, prioritize_answer="all")
    await _cluster(client, clock, {"node-a": 0.6, "node-b": 0.02, "node-c": 0.6})
    names = ["node-a", "node-b", "node-a", "node-c", "node-b"]
    filtered = (await post_json(client, "/filter", args_names(pod_object("p"), names))).json()
    assert filtered["NodeNames"] == ["node-a", "node-c"]
    assert filtered["FailedNodes"] == {"node-b": FILTER_REASON}
    entries = (await post_json(client, "/prioritize", args_names(pod_object("p"), names))).json()
    assert [e["Host"] for e in entries] == ["node-a", "node-b", "node-c"]


@pytest.mark.parametrize("window_ms", [0.0, 50.0])
async def test_the_deciding_answer_lists_only_the_nodes_scoring_10(
    make_client, clock, window_ms: float
) -> None:
    # The default answer (issue 32): the entries of the full answer that score 10, in order.
    # kube-scheduler adds nothing for a node left out, and a 10 leads every 1-9 by weight x 10
    # points (1,300 shipped) > the in-tree total (1,200): the same node is bound either way.
    headroom = {"node-a": 0.6, "node-b": 0.3, "node-c": 0.6}
    answers = []
    for answer in ("all", "deciding"):
        client = await make_client(mode="active", window_ms=window_ms, prioritize_answer=answer)
        await _cluster(client, clock, headroom)
        pod = pod_object(f"p-{answer}")
        response = await post_json(client, "/prioritize", args_names(pod, NAMES))
        answers.append(HostPriorityList.validate_json(response.content))
    full, deciding = answers
    assert [e.Host for e in full] == NAMES and any(0 < e.Score < 10 for e in full)
    assert deciding == [e for e in full if e.Score == 10] != []


@pytest.mark.parametrize(("cap_w", "best"), [(144.0, "node-a"), (100.0, "node-c")])
async def test_a_node_filled_under_a_cap_its_full_load_cannot_reach_keeps_its_price(
    make_client, clock, cap_w: float, best: str
) -> None:
    """Issue 34: node-a (the cheapest, 40 → 120 W) is nearly full, headroom 0.17. With its
    cap 1.2× its full load (144 W), no pod can push it over: its gate stays open and it wins.
    With a cap under its full load (100 W), the study's gate (σ ≈ 0.2 at 0.17) prices it
    below node-c. The cap reaches the gate from the telemetry sample."""
    client = await make_client(mode="active", window_ms=0)
    await post_json(client, "/nodes", {"items": [node_object(n) for n in NAMES]})
    samples = [sample("node-a", clock() - 1.0, 0.17, power_cap_w=cap_w)]
    samples += [sample(n, clock() - 1.0, 0.6) for n in ("node-b", "node-c")]
    assert (await post_json(client, "/telemetry", {"samples": samples})).status_code == 202
    scores = (await post_json(client, "/prioritize", args_names(pod_object("p"), NAMES))).json()
    assert scores[0] == {"Host": best, "Score": 10}

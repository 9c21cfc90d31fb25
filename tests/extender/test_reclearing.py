"""A clearing's choice is among the nodes kube-scheduler offers when it asks for the scores.

Between a pod's clearing and its ``/prioritize`` the cleared node can leave kube-scheduler's
candidates: the extender's own ``/filter`` removed it (the floor, re-read since), an in-tree
filter or the floor's taint did, or the pod came back for another cycle. Scores from the old
row would then rank what is left without the clearing's choice among it, and the record would
judge the binding against a node never offered (a demo run of 3 Dec bound ``task-5625`` to
mini-1, the answer's best, against a record that said mini-6). The pod is cleared over the
offered nodes instead, and the binding is judged against that clearing.

In-process app over httpx's ASGI transport; the binding comes as kube-scheduler's bound pod
object through ``POST /pending`` (the pod watch's HTTP twin).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from eams.scheduler.extender.decisions import record_settings
from tests.extender.conftest import args_names, node_object, pod_object, post_json, sample

NAMES = ["node-a", "node-b", "node-c"]
pytestmark = pytest.mark.anyio


async def _cluster(make_client, clock, tmp_path) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    client = await make_client(mode="active", record=record_settings(tmp_path / "rec"))
    await post_json(client, "/nodes", {"items": [node_object(n) for n in NAMES]})
    samples = [sample(n, clock() - 1.0, 0.6) for n in NAMES]
    assert (await post_json(client, "/telemetry", {"samples": samples})).status_code == 202
    return client


async def _scores(client: httpx.AsyncClient, pod: dict[str, Any], names: list[str]) -> dict:
    answer = await post_json(client, "/prioritize", args_names(pod, names))
    assert answer.status_code == 200, answer.text
    return {e["Host"]: e["Score"] for e in answer.json()}


async def _records(client: httpx.AsyncClient, kinds: list[str]) -> list[dict[str, Any]]:
    """The pod's records once their kinds are ``kinds`` (the lines are built ≤ 0.25 s late)."""
    for _ in range(200):
        got = (await client.get("/decisions", params={"pod": "uid-p"})).json()["records"]
        if [r["kind"] for r in got] == kinds:
            return list(got)
        await asyncio.sleep(0.05)
    raise AssertionError(f"records never became {kinds}: {got}")


def _reclearings(client: httpx.AsyncClient) -> float | None:
    registry = client.app.state.extender.metrics.registry  # type: ignore[attr-defined]
    return registry.get_sample_value("eams_extender_reclearings_total")


async def _bind(client: httpx.AsyncClient, pod: dict[str, Any], node: str) -> None:
    bound = {**pod, "spec": {**pod["spec"], "nodeName": node}}
    assert (await post_json(client, "/pending", {"items": [bound]})).status_code < 300


@pytest.mark.parametrize("first_line_built", [True, False])
async def test_a_pod_whose_cleared_node_is_no_longer_offered_is_cleared_again(
    make_client, clock, tmp_path, first_line_built: bool
) -> None:
    """Cleared again whether the first clearing's line was already handed to the join or both
    lines are still queued (built ≤ 0.25 s late, together, when the binding comes between)."""
    client = await _cluster(make_client, clock, tmp_path)
    pod = pod_object("p")
    first = await _scores(client, pod, NAMES)
    chosen = max(first, key=first.__getitem__)
    assert first[chosen] == 10
    if first_line_built:
        (placed,) = await _records(client, ["placement"])  # its line handed to the join
        assert placed["cleared_node"] == chosen
    # the pod comes back without its cleared node among the candidates
    offered = [n for n in NAMES if n != chosen]
    again = await _scores(client, pod, offered)
    (now,) = again  # one node listed: a clearing's choice, not the best of what was left (≤ 9)
    assert now in offered and again[now] == 10
    assert _reclearings(client) == 1.0
    await _bind(client, pod, now)  # before the new line is built: the join waits for it
    first_line, second, bound = await _records(client, ["placement", "placement", "bound"])
    assert first_line["cleared_node"] == chosen
    assert second["cleared_node"] == now and bound["clearing_id"] == second["clearing_id"]
    assert bound["honoured"] is True and bound["scored"] is True
    assert {c["node"] for c in second["candidates"]} <= set(offered)


async def test_a_pending_pod_clears_over_the_nodes_prioritize_offers(
    make_client, clock, tmp_path
) -> None:
    """``/filter`` announced the pod with every node; ``/prioritize`` then offers fewer (its
    own answer or an in-tree filter removed one): the batch clears over those, once."""
    client = await _cluster(make_client, clock, tmp_path)
    pod = pod_object("p")
    kept = (await post_json(client, "/filter", args_names(pod, NAMES))).json()["NodeNames"]
    assert kept == NAMES
    best = await _scores(client, pod, NAMES[1:])
    offered_best = max(best, key=best.__getitem__)
    assert best[offered_best] == 10 and "node-a" not in best
    assert _reclearings(client) is None or _reclearings(client) == 0.0
    await _bind(client, pod, offered_best)
    placed, bound = await _records(client, ["placement", "bound"])
    assert placed["cleared_node"] == offered_best and bound["honoured"] is True

"""The emulated kube-scheduler cycle (``eams.scheduler.bench.kube_cycle``) and its Go-style
decoding of extender answers (``kube_wire``), against a real ``eams extender serve``.

No kube-scheduler can run here: the decoding follows kubernetes ``pkg/scheduler/extender.go``
and ``extender/v1/types.go`` as summarised in ``extender-protocol.md`` §1.1 and §2.2–2.3.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest

from eams.scheduler.bench.errors import ExtenderCallError
from eams.scheduler.bench.kube_cycle import (
    ExtenderConfig,
    KubeCycle,
    num_feasible_nodes_to_find,
)
from eams.scheduler.bench.kube_wire import decode_filter, decode_priorities
from tests.extender.conftest import node_object, pod_object, sample
from tests.servers.uvicorn import ExtenderServer

NAMES = ["node-a", "node-b", "node-c"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'[{"Host":"a","Score":3},{"Host":"b","Score":0}]', {"a": 3, "b": 0}),
        (b'[{"host":"a","SCORE":3}]', {"a": 3}),  # keys match case-insensitively
        (b'[{"Host":"a","Score":3},{"Host":"a","Score":4}]', {"a": 7}),  # listed twice: added
        (b'[{"Host":"a","Score":3,"Extra":[1]}]', {"a": 3}),  # unknown keys ignored
        (b"null", {}),
        (b"[]", {}),
    ],
)
def test_prioritize_answers_decode_as_go_decodes_them(body: bytes, expected: dict) -> None:
    assert decode_priorities(200, body) == expected


@pytest.mark.parametrize(
    "body",
    [
        b'[{"Host":"a","Score":7.0}]',  # a fraction cannot go into int64
        b'[{"Host":"a","Score":1e1}]',
        b'{"HostPriorityList":[]}',  # an object is not the bare array
        b'[{"Host":5,"Score":1}]',
        b'[{"Host":"a","Score":"7"}]',
        b"",
    ],
)
def test_prioritize_answers_go_cannot_decode_are_failures(body: bytes) -> None:
    with pytest.raises(ExtenderCallError):
        decode_priorities(200, body)


def test_filter_answers_follow_the_node_cache_capable_rules() -> None:
    sent = ["a", "b", "c"]
    ok = decode_filter(
        200, b'{"NodeNames":["a"],"FailedNodes":{"b":"x","c":"y"},'
        b'"FailedAndUnresolvableNodes":{"c":"y"},"Error":""}', sent
    )  # fmt: skip
    assert ok.passed == ["a"] and ok.failed == {"b": "x"} and ok.unresolvable == {"c": "y"}
    assert decode_filter(200, b'{"Nodes":null,"NodeNames":null}', sent).passed == []
    fallback = b'{"Nodes":{"items":[{"metadata":{"name":"b"}}]}}'
    assert decode_filter(200, fallback, sent).passed == ["b"]
    for status, body in (
        (200, b'{"NodeNames":["z"]}'),  # claims a node not in the input
        (200, b'{"NodeNames":["a"],"Error":"boom"}'),
        (503, b'{"Error":"eams: stepping aside"}'),
        (200, b'{"NodeNames":"a"}'),
    ):
        with pytest.raises(ExtenderCallError):
            decode_filter(status, body, sent)


def test_feasible_nodes_to_find_as_upstream() -> None:
    assert num_feasible_nodes_to_find(50) == 50
    assert num_feasible_nodes_to_find(1000) == 420  # reference §2.7
    assert num_feasible_nodes_to_find(5000) == 500
    assert num_feasible_nodes_to_find(6000) == 300
    assert num_feasible_nodes_to_find(1000, 100) == 1000


def test_the_config_entry_is_read_with_its_defaults() -> None:
    entry = {"urlPrefix": "http://127.0.0.1:9/eams/", "prioritizeVerb": "prioritize", "weight": 3}
    config = ExtenderConfig.from_entry(entry)
    assert config.filter_verb is None and config.http_timeout_s == 5.0
    assert not config.ignorable and not config.node_cache_capable
    assert config.path("prioritize") == "/eams/prioritize"


@pytest.fixture
def server(tmp_path: Path, calibrations_dir: Path):
    srv = ExtenderServer(
        tmp_path / "extender.log", mode="active", calibrations_dir=calibrations_dir, window_ms=200
    )
    srv.start()
    now_s = time.time()
    with httpx.Client(base_url=srv.url, timeout=10) as http:
        http.post("/nodes", json={"items": [node_object(n) for n in NAMES]}).raise_for_status()
        samples = [sample(n, now_s, 0.6) for n in NAMES]
        http.post("/telemetry", json={"samples": samples}).raise_for_status()
    yield srv
    srv.stop()


@pytest.mark.integration
def test_one_pod_at_a_time_through_a_live_extender(server: ExtenderServer) -> None:
    bound: list[tuple[str, str]] = []

    async def bind(pod: dict, node: str) -> None:
        bound.append((pod["metadata"]["name"], node))

    def in_tree(pod: dict, names: list[str]) -> dict[str, int]:
        return {"node-b": 1000}  # an in-tree spread the shipped weight outscores

    async def run(weight: int) -> KubeCycle:
        config = ExtenderConfig(
            f"http://127.0.0.1:{server.port}", filter_verb=None, weight=weight, http_timeout_s=1.0
        )
        cycle = KubeCycle(config, lambda: NAMES, in_tree_score=in_tree, bind=bind)
        for i in range(3):
            cycle.add(pod_object(f"w{weight}-{i}"))
        await cycle.run(3)
        cycle.close()
        return cycle

    strong = asyncio.run(run(130))
    assert not strong.failures
    assert [node for _, node in bound] == ["node-a"] * 3  # the cleared node, 10 × 130 × 10
    assert all(r.prioritize_s > 0 and r.filter_s == 0 for r in strong.records)
    bound.clear()
    weak = asyncio.run(run(1))  # 100 extender points cannot beat 1,000 in-tree ones
    assert [node for _, node in bound] == ["node-b"] * 3 and not weak.failures
    # The extender dies: prioritize fails, kube-scheduler places by its own scores (AR-5).
    server.kill()
    bound.clear()
    dead = asyncio.run(run(130))
    assert dead.failures["prioritize"] == 3 and [n for _, n in bound] == ["node-b"] * 3
    assert all(r.errors and r.errors[0].startswith("prioritize:") for r in dead.records)

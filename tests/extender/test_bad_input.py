"""Strict where a wrong answer would hurt, and never a 500 (reference §8.1; issue 6)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.extender.conftest import T0_S, args_names, node_object, pod_object, post_json, sample

pytestmark = pytest.mark.anyio

POSTS = ("/filter", "/prioritize", "/telemetry", "/nodes", "/pending")


@pytest.mark.parametrize("path", ["/filter", "/prioritize"])
@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b'{"Pod": {', "body: malformed JSON"),
        (b"", "body: malformed JSON"),
        (b"[]", "body: must be a JSON object"),
        (b'{"Pod": null, "NodeNames": ["a"]}', "Pod: missing or null"),
        (b'{"NodeNames": ["a"]}', "Pod: missing or null"),
        (b'{"Pod": {}, "Nodes": null, "NodeNames": null}', "Nodes, NodeNames: both null"),
        (b'{"Pod": {}, "NodeNames": "node-a"}', "NodeNames: Input should be a valid"),
        (b'{"Pod": {}, "NodeNames": [1, 2]}', "NodeNames[0]: Input should be a valid string"),
        (b'{"Pod": {"spec": {"containers": 5}}, "NodeNames": []}', "Pod.spec.containers"),
        (b'{"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}}', "Nodes.items[0].metadata.name"),
        (b'{"Pod": {}, "Nodes": {"metadata": {}, "items": null}}', "Nodes.items: must be a list"),
        (
            json.dumps(args_names(pod_object("p", cpu="-1"), ["node-a"])).encode(),
            "Pod.spec.containers[0].resources.requests.cpu: a resource amount must not be negative",
        ),
        (
            b'{"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "n"},'
            b' "status": {"allocatable": {"memory": "-1Gi"}}}]}}',
            "Nodes.items[0].status.allocatable.memory: a resource amount must not be negative",
        ),
    ],
)
async def test_bad_requests_are_400_with_a_reason(
    make_client, path: str, body: bytes, error: str
) -> None:
    client = await make_client(mode="active", window_ms=0)
    response = await client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert error in response.json()["Error"]


async def test_unknown_fields_are_ignored(make_client) -> None:
    client = await make_client(mode="active", window_ms=0)
    await post_json(client, "/nodes", {"items": [node_object("node-a")]})
    body = {**args_names(pod_object("p"), ["node-a"]), "Future": {"x": 1}}
    body["Pod"]["spec"]["newField"] = [1, 2]
    response = await post_json(client, "/filter", body)
    assert response.status_code == 200 and response.json()["NodeNames"] == ["node-a"]


async def test_oversized_body_is_413(make_client) -> None:
    client = await make_client(mode="active", window_ms=0, max_body_bytes=1000)
    body = args_names(pod_object("p"), [f"node-{i}" for i in range(200)])
    for path in POSTS:
        response = await post_json(client, path, body)
        assert response.status_code == 413, path
        assert "over the limit of 1000" in response.json()["Error"]

    async def chunks():  # no Content-Length: the limit holds while streaming
        for _ in range(20):
            yield b" " * 100

    response = await client.post("/filter", content=chunks())
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            {"samples": [{"node": "a", "measured_at_ns": 1, "power_cap_w": 100}, {"node": "b"}]},
            "samples[1].measured_at_ns",
        ),
        ({"samples": [{"node": "", "measured_at_ns": 1, "power_cap_w": 100}]}, "samples[0].node"),
        (
            {"samples": [{"node": "a", "measured_at_ns": 1, "power_cap_w": 0}]},
            "samples[0].power_cap_w",
        ),
        (
            {"samples": [{"node": "a", "measured_at_ns": 1, "power_cap_w": 9, "headroom": "x"}]},
            "samples[0].headroom",
        ),
        (
            {"samples": [{"node": "a", "measured_at_ns": 1, "power_cap_w": 9, "source": "guess"}]},
            "samples[0]:",
        ),
        ({"sample": []}, 'body: must be an object {"samples"'),
        # An hour ahead (or seconds sent as ns x 1000): it would look fresh for an hour and,
        # being the newest, hide every real sample of that node until then.
        ({"samples": [sample("a", T0_S + 3600.0, 0.5)]}, "samples[0].measured_at_ns: 3.6e+03 s"),
    ],
)
async def test_bad_telemetry_names_index_and_key_and_stores_nothing(
    make_client, body, error
) -> None:
    client = await make_client(mode="active", window_ms=0)
    response = await post_json(client, "/telemetry", body)
    assert response.status_code == 400 and error in response.json()["Error"]
    assert "eams_extender_telemetry_nodes 0.0" in (await client.get("/metrics")).text


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "Pod",
                    "Nodes",
                    "NodeNames",
                    "items",
                    "metadata",
                    "name",
                    "spec",
                    "containers",
                    "resources",
                    "requests",
                    "cpu",
                    "samples",
                    "node",
                ]
            )
            | st.text(max_size=5),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=st.sampled_from(POSTS),
    body=st.one_of(st.binary(max_size=64), JSONISH.map(lambda v: json.dumps(v).encode())),
)
async def test_garbage_never_gets_a_500(make_client, path: str, body: bytes) -> None:
    client = await make_client(mode="active", window_ms=0)
    response = await client.post(path, content=body)
    assert response.status_code in (200, 202, 400), (response.status_code, response.text)
    assert isinstance(response.json(), dict | list)


async def test_internal_failures_fail_open(make_client, monkeypatch) -> None:
    client = await make_client(mode="active", window_ms=0)
    await post_json(client, "/nodes", {"items": [node_object("node-a")]})
    extender = client.app.state.extender

    def broken(*_args, **_kwargs):
        raise RuntimeError("injected fault")

    # The only way to provoke a bug on purpose: replace the floor's and the market's views.
    monkeypatch.setattr(extender.floor, "below", broken)
    monkeypatch.setattr(extender.market, "view", broken)
    filtered = await post_json(client, "/filter", args_names(pod_object("p"), ["node-a", "node-b"]))
    assert filtered.status_code == 200 and filtered.json()["NodeNames"] == ["node-a", "node-b"]
    prioritized = await post_json(client, "/prioritize", args_names(pod_object("p"), ["node-a"]))
    assert prioritized.status_code == 200 and prioritized.json() == []
    monkeypatch.setattr(extender, "readiness", broken)
    guarded = await client.get("/readyz")
    assert guarded.status_code == 503 and "internal error" in guarded.json()["Error"]
    metrics = (await client.get("/metrics")).text
    assert 'eams_extender_errors_total{kind="internal",path="/filter"} 1.0' in metrics
    assert 'eams_extender_errors_total{kind="internal",path="/readyz"} 1.0' in metrics


@pytest.mark.parametrize("path", ["/filter", "/prioritize"])
async def test_every_bad_field_of_a_request_is_named(make_client, path: str) -> None:
    client = await make_client(mode="active", window_ms=0)
    body = {"Pod": {"spec": {"containers": 5, "priority": "high"}}, "NodeNames": [1, "b", 2]}
    response = await post_json(client, path, body)
    assert response.status_code == 400
    error = response.json()["Error"]
    for expected in (
        "Pod.spec.containers: Input should be a valid list",
        "Pod.spec.priority: Input should be a valid integer",
        "NodeNames[0]: Input should be a valid string",
        "NodeNames[2]: Input should be a valid string",
    ):
        assert expected in error


async def test_every_bad_field_of_a_listed_pod_or_list_is_named(make_client) -> None:
    client = await make_client(mode="active", window_ms=0)
    good = pod_object("fine")
    bad = {"metadata": {"name": 5}, "spec": {"containers": 5}}
    response = await post_json(client, "/pending", {"items": [good, bad]})
    assert response.status_code == 400
    error = response.json()["Error"]
    assert "items[1].metadata.name: Input should be a valid string" in error
    assert "items[1].spec.containers: Input should be a valid list" in error
    response = await post_json(client, "/nodes", {"metadata": 1, "items": 2})
    assert response.status_code == 400
    error = response.json()["Error"]
    assert "metadata: Input should be an object" in error
    assert "items: Input should be a valid array" in error

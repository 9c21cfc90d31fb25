"""The decision record wired into the extender (issue 19), through real HTTP.

``eams extender serve --watch --record FILE`` runs as its own uvicorn process and lists and
watches the real kube-apiserver 1.36 (``tests/servers/kube_control_plane.py``, one per module)
as its service account ``kube-system/eams-scheduler`` (the shipped RBAC: a missing ``patch``
on pods fails the annotations). The test plays kube-scheduler: creates a pending pod, calls
``/prioritize`` names-only with the pod as the server has it, as the shipped config does,
binds it (``pods/binding``), and then reads the record back over ``GET /decisions`` and from
the file, and the ``eams.io/*`` annotations from the pod on the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from eams.scheduler.extender.decisions import record_settings
from eams.scheduler.record import read_records
from eams.scheduler.record.errors import RecordConfigError
from eams.scheduler.record.reader import Query
from tests.extender.conftest import args_names, node_object, pod_object, sample, write_calibration
from tests.servers.kube_control_plane import ControlPlane
from tests.servers.kube_documents import clear, create_node, create_pod
from tests.servers.uvicorn import ExtenderServer

NAMES = ["node-a", "node-b", "node-c"]
ACCOUNT = "kube-system/eams-scheduler"  # the extender's service account (deploy/k3s/rbac.yaml)
PODS = "/api/v1/namespaces/default/pods"
pytestmark = pytest.mark.anyio


async def _until(check: Any, timeout_s: float = 45.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = await check()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def _serve(
    tmp_path: Path, mode: str, plane: ControlPlane, admin: httpx.Client
) -> ExtenderServer:
    cal = tmp_path / "cal"
    cal.mkdir()
    for i, name in enumerate(NAMES):
        write_calibration(cal, name, 40.0 + 10 * i, 150.0 + 20 * i)
        create_node(admin, node_object(name, cpu="4"))
    server = ExtenderServer(tmp_path / "extender.log", mode=mode, calibrations_dir=cal)
    server.env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig(ACCOUNT))}
    server.env.pop("KUBERNETES_SERVICE_HOST", None)  # never an in-cluster account
    server.argv += ["--watch", "--record", str(tmp_path / "record" / "decisions.jsonl")]
    server.argv += ["--record-max-file-bytes", "65536"]
    await asyncio.to_thread(server.start)
    return server


def _metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.parametrize("mode", ["active", "shadow"])
async def test_every_decision_is_on_record_with_its_outcome_and_annotations(
    tmp_path: Path, mode: str, control_plane: ControlPlane
) -> None:
    with control_plane.client() as admin:
        server = None
        try:
            server = await _serve(tmp_path, mode, control_plane, admin)
            async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
                headroom = {"node-a": 0.6, "node-b": 0.02, "node-c": 0.4}  # node-b: under floor
                samples = [sample(n, time.time(), h) for n, h in headroom.items()]
                (await http.post("/telemetry", json={"samples": samples})).raise_for_status()
                await _until(lambda: _ready(http))
                create_pod(admin, pod_object("job-1"))
                pod = admin.get(f"{PODS}/job-1").json()  # as kube-scheduler sends it
                answer = await _prioritized(http, pod)
                scores = {e["Host"]: e["Score"] for e in answer}
                if mode == "active":
                    (chosen,) = scores  # only the cleared node is listed
                    assert scores[chosen] == 10
                else:
                    assert scores == {}  # shadow answers neutrally: no node listed, each 0
                    chosen = "node-c"  # kube-scheduler's default placement, whatever it is
                _bind(admin, "job-1", chosen)

                async def on_record() -> Any:
                    got = (await http.get("/decisions", params={"pod": "default/job-1"})).json()
                    kinds = [r["kind"] for r in got["records"]]
                    return got["records"] if "bound" in kinds else None

                records = await _until(on_record)
                annotated = await _until(lambda: _annotated(admin, "job-1"))
                # a pod kube-scheduler binds without asking for scores (one node alone passed
                # its filters): cleared by its window, never offered, so neither honoured nor not
                create_pod(admin, pod_object("job-2"))

                bound: list[str] = []

                async def unscored() -> Any:
                    got = (await http.get("/decisions", params={"pod": "default/job-2"})).json()
                    kinds = [r["kind"] for r in got["records"]]
                    if kinds == ["placement"] and not bound:
                        _bind(admin, "job-2", "node-c")  # once: the server refuses another
                        bound.append("node-c")
                    return got["records"] if "bound" in kinds else None

                job2 = {r["kind"]: r for r in await _until(unscored)}
                await _until(lambda: _annotated(admin, "job-2"))

                async def both_patched() -> str | None:
                    text = (await http.get("/metrics")).text
                    series = 'eams_extender_annotation_patches_total{outcome="ok"}'
                    return text if _metric(text, series) == 2.0 else None

                metrics = await _until(both_patched)
        finally:
            if server is not None:
                server.stop()
            clear(admin, NAMES)

    placement = next(r for r in records if r["kind"] == "placement")
    bound = next(r for r in records if r["kind"] == "bound")
    assert placement["mode"] == mode and placement["batch_pods"] == 1
    uid = pod["metadata"]["uid"]  # the server's
    assert placement["pod"] == {"namespace": "default", "name": "job-1", "uid": uid}
    assert placement["clearing_id"] and placement["method"] == "short_lists"
    cleared = placement["cleared_node"]
    assert cleared == "node-a"  # the most headroom on the cheapest calibration
    if mode == "active":
        assert cleared == chosen
    assert placement["price"] == 0.0 and placement["bid"] > 0
    certificate = placement["certificate"]
    assert certificate["kind"] in ("exact", "j_epsilon", "gap_bound")
    assert certificate["bound"] is not None and certificate["value"] == pytest.approx(
        placement["bid"], rel=1e-5
    )
    candidates = {c["node"]: c for c in placement["candidates"]}
    assert placement["candidates"][0]["node"] == cleared
    for node in ("node-a", "node-c"):
        entry = candidates[node]
        assert entry["bid"] > 0 and entry["price"] == 0.0
        assert entry["headroom"] == pytest.approx(headroom[node], rel=1e-5)
        assert 0 <= entry["age_s"] < 30 and 0 < entry["gate"] <= 1
    assert candidates["node-a"]["score"] == 10  # what active answers (shadow: would have)
    gated = {g["node"]: g["reason"] for g in placement["gated"]}
    assert gated == {"node-b": "headroom_floor"} and placement["gated_counts"] == {
        "headroom_floor": 1
    }
    assert placement["candidates_total"] == 3 and placement["stale_after_s"] == 15.0
    honoured = chosen == cleared
    assert bound["bound_node"] == chosen and bound["cleared_node"] == cleared
    assert bound["honoured"] is honoured and bound["clearing_id"] == placement["clearing_id"]
    assert bound["scored"] is True  # kube-scheduler asked (/prioritize) after the clearing
    assert (job2["bound"]["scored"], job2["bound"]["honoured"]) == (False, None)
    assert job2["bound"]["cleared_node"] == job2["placement"]["cleared_node"] is not None
    not_scored = f'eams_record_bindings_total{{honoured="not_scored",mode="{mode}"}}'
    assert _metric(metrics, not_scored) == 1.0
    label = "yes" if honoured else "no"
    series = f'eams_record_bindings_total{{honoured="{label}",mode="{mode}"}}'
    assert _metric(metrics, series) == 1.0
    assert _metric(metrics, 'eams_extender_annotation_patches_total{outcome="ok"}') == 2.0
    for part in ("lines", "join", "writer", "annotator"):  # each measured where it ran
        assert _metric(metrics, f'eams_record_cpu_seconds_total{{part="{part}"}}') > 0, part
    annotations = annotated["metadata"]["annotations"]  # job-1 as the server has it now
    assert (
        annotations["eams.io/cleared-node"] == cleared and annotated["spec"]["nodeName"] == chosen
    )
    assert annotations["eams.io/mode"] == mode and float(annotations["eams.io/clearing-price"]) == 0
    # the same lines in the file, as eams explain reads them
    on_file = read_records(tmp_path / "record", Query(pod="default/job-1")).records
    assert [type(r).__name__.lower() for r in on_file] == [r["kind"] for r in records]


async def _ready(http: httpx.AsyncClient) -> bool:
    return (await http.get("/readyz")).status_code == 200


async def _prioritized(http: httpx.AsyncClient, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """/prioritize as kube-scheduler sends it (``nodeCacheCapable``: names only)."""
    response = await http.post(
        "/prioritize",
        content=json.dumps(args_names(pod, NAMES)),
        headers={"Content-Type": "application/json"},
    )
    response.raise_for_status()
    return list(response.json())


def _bind(admin: httpx.Client, name: str, node: str) -> None:
    """What kube-scheduler does once it has chosen: ``POST pods/NAME/binding``."""
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
    admin.post(f"{PODS}/{name}/binding", json=binding).raise_for_status()


async def _annotated(admin: httpx.Client, name: str) -> dict[str, Any] | None:
    """The pod ``name`` as the server has it, once the extender's annotations are on it."""
    pod = admin.get(f"{PODS}/{name}").json()
    annotations = pod["metadata"].get("annotations") or {}
    return pod if "eams.io/cleared-node" in annotations else None


async def test_the_record_on_the_http_twin_in_shadow_mode_without_an_api_server(
    tmp_path: Path,
) -> None:
    """Without ``--watch``: ``POST /nodes`` and ``POST /pending`` feed it; the bound pod posted
    to ``/pending`` joins the record; the annotations have no API to go to (counted)."""
    cal = tmp_path / "cal"
    cal.mkdir()
    for name in NAMES:
        write_calibration(cal, name, 50.0, 200.0)
    server = ExtenderServer(tmp_path / "extender.log", mode="shadow", calibrations_dir=cal)
    server.argv += ["--record", str(tmp_path / "rec")]
    await asyncio.to_thread(server.start)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            await http.post("/nodes", json={"items": [node_object(n) for n in NAMES]})
            samples = [sample(n, time.time(), 0.5) for n in NAMES]
            await http.post("/telemetry", json={"samples": samples})
            pod = pod_object("p1")
            await http.post("/pending", json={"items": [pod]})
            answer = await http.post("/prioritize", json=args_names(pod, NAMES))
            assert answer.json() == []  # shadow: no node listed, each gets a 0
            bound = {**pod, "spec": {**pod["spec"], "nodeName": "node-b"}}
            await http.post("/pending", json={"items": [bound]})

            async def joined() -> Any:
                got = (await http.get("/decisions", params={"pod": "uid-p1"})).json()
                return [r["kind"] for r in got["records"]] == ["placement", "bound"] and got

            got = await _until(joined)
            bad = await http.get("/decisions")
            metrics = (await http.get("/metrics")).text
    finally:
        server.stop()
    placement, bound_record = got["records"]
    assert placement["mode"] == "shadow" and bound_record["bound_node"] == "node-b"
    assert bound_record["honoured"] is (placement["cleared_node"] == "node-b")
    assert bad.status_code == 400
    assert _metric(metrics, 'eams_extender_annotation_patches_total{outcome="no_api"}') == 1.0
    assert (tmp_path / "rec" / "decisions.jsonl").exists()


def test_record_path_is_a_file_of_its_prefix_or_a_folder(tmp_path: Path) -> None:
    named = record_settings(tmp_path / "placements.jsonl", max_file_age_s=60.0)
    assert (named.folder, named.prefix, named.max_file_age_s) == (tmp_path, "placements", 60.0)
    folder = record_settings(tmp_path / "rec")
    assert (folder.folder, folder.prefix) == (tmp_path / "rec", "decisions")
    with pytest.raises(RecordConfigError, match="max_total_bytes"):
        record_settings(tmp_path / "rec", max_file_bytes=4096, max_total_bytes=5000)
    with pytest.raises(RecordConfigError, match="prefix 'bad-name'"):
        record_settings(tmp_path / "bad-name.jsonl")

"""Health, readiness, metrics, telemetry ingest, settings and the calibration folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eams.scheduler.extender.app import OFF_LOOP_BYTES, STORE_CHUNK
from eams.scheduler.extender.calibrations import load_calibrations
from eams.scheduler.extender.errors import ExtenderConfigError
from eams.scheduler.extender.settings import Settings
from tests.extender.conftest import node_object, post_json, sample, write_calibration

pytestmark = pytest.mark.anyio

METRIC_NAMES = (
    "eams_extender_request_duration_seconds",
    "eams_extender_errors_total",
    "eams_extender_clearings_total",
    "eams_extender_auction_rounds",
    "eams_extender_batch_pods",
    "eams_extender_clearing_duration_seconds",
    "eams_extender_fallbacks_total",
    "eams_extender_reservations_moved_total",
    "eams_extender_node_price",
    "eams_extender_filtered_nodes_total",
    "eams_extender_headroom_recoveries_total",
    "eams_extender_telemetry_samples_total",
    "eams_extender_telemetry_nodes",
    "eams_extender_calibrated_nodes",
    "eams_extender_node_p_idle_watts",
    "eams_extender_node_p_max_watts",
    "eams_extender_node_speed_ratio",
    "eams_extender_ready",
    "eams_extender_recommendations_total",
    "eams_extender_taint_patches_total",
    "eams_extender_wake_request_patches_total",
    "eams_extender_market_wakes_total",
    "eams_extender_stepped_aside_total",
    "eams_extender_watch_up",
    "eams_extender_watch_failures_total",
)


async def test_ready_only_with_calibrations_and_telemetry(
    make_client, clock, tmp_path: Path
) -> None:
    bare = await make_client(calibrations_dir=None)
    assert (await bare.get("/healthz")).json() == {"status": "ok"}
    answer = await bare.get("/readyz")
    assert answer.status_code == 503
    assert [m.split(" (")[0] for m in answer.json()["missing"]] == [
        "no calibration loaded",
        "no telemetry received yet",
        "no node known yet",
    ]

    client = await make_client()
    await post_json(client, "/nodes", {"items": [node_object("node-a")]})
    assert (await client.get("/readyz")).json()["missing"] == [
        "no telemetry received yet (agents POST /telemetry)"
    ]
    accepted = await post_json(
        client,
        "/telemetry",
        {"samples": [sample("node-a", clock(), 0.5), sample("node-b", clock(), None)]},
    )
    assert accepted.status_code == 202 and accepted.json() == {"accepted": 2}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"ready": True, "missing": []}
    assert "eams_extender_ready 1.0" in (await client.get("/metrics")).text


async def test_older_samples_do_not_replace_newer_ones(make_client, clock) -> None:
    client = await make_client()
    await post_json(client, "/telemetry", {"samples": [sample("node-a", clock(), 0.5)]})
    await post_json(client, "/telemetry", {"samples": [sample("node-a", clock() - 30, 0.1)]})
    assert client.app.state.extender.telemetry.latest("node-a").headroom == 0.5


async def test_metrics_are_prometheus_text_with_the_documented_names(make_client) -> None:
    client = await make_client()
    await client.get("/healthz")
    response = await client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    for name in METRIC_NAMES:
        assert f"# TYPE {name} " in response.text, name
    assert (
        'eams_extender_request_duration_seconds_count{code="200",path="/healthz"} 1.0'
        in response.text
    )
    readme = (
        Path(__file__).resolve().parents[2] / "scheduler" / "extender" / "README.md"
    ).read_text()
    for name in METRIC_NAMES:
        assert f"`{name}" in readme, f"{name} is not documented for the dashboards"


async def test_metrics_publish_each_calibration(make_client) -> None:
    text = (await (await make_client()).get("/metrics")).text
    assert "eams_extender_calibrated_nodes 3.0" in text
    # P_idle / P_max are the fitted line's ends: within a watt of the lines written.
    for node, p_idle_w, p_max_w in (("node-a", 40, 120), ("node-b", 80, 300), ("node-c", 60, 200)):
        idle = float(text.split(f'eams_extender_node_p_idle_watts{{node="{node}"}} ')[1].split()[0])
        peak = float(text.split(f'eams_extender_node_p_max_watts{{node="{node}"}} ')[1].split()[0])
        assert abs(idle - p_idle_w) < 1 and abs(peak - p_max_w) < 1
        assert f'eams_extender_node_speed_ratio{{node="{node}"}} 1.0' in text


def test_settings_collect_every_problem() -> None:
    with pytest.raises(ExtenderConfigError) as caught:
        Settings(
            mode="loud",
            window_ms=-1,
            slot_milli=0,
            headroom_floor=1.5,
            calibrations_dir=Path("/nonexistent"),
        )
    message = str(caught.value)
    for key in ("mode:", "window_ms:", "slot_milli:", "headroom_floor:", "calibrations_dir:"):
        assert key in message


def test_calibration_folder_errors_name_the_file(tmp_path: Path) -> None:
    write_calibration(tmp_path, "node-a", 40.0, 120.0)
    (tmp_path / "node-a.partial.json").write_text("{}")  # an unfinished sweep: skipped
    (tmp_path / "notes.txt").write_text("ignored")
    assert list(load_calibrations(tmp_path)) == ["node-a"]
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ExtenderConfigError, match=r"broken\.json"):
        load_calibrations(tmp_path)
    (tmp_path / "broken.json").unlink()
    copy = (tmp_path / "node-a.json").read_text()
    (tmp_path / "node-a-copy.json").write_text(copy)
    with pytest.raises(
        ExtenderConfigError,
        match=r"calibrations_dir: .*node-a-copy\.json and node-a\.json both calibrate",
    ):
        load_calibrations(tmp_path)


async def test_a_large_telemetry_batch_is_decoded_off_the_loop_and_stored_whole(
    make_client, clock
) -> None:
    # Over OFF_LOOP_BYTES: decoded in a worker thread, stored STORE_CHUNK samples at a time
    # (a 35 MB batch decoded on the loop held every /filter for 3 s).
    client = await make_client(mode="active", window_ms=0)
    count = 2 * STORE_CHUNK + 7
    samples = [sample(f"n{i}", clock() - 1.0, 0.5) for i in range(count)]
    body = {"samples": samples}
    assert len(json.dumps(body)) > OFF_LOOP_BYTES
    bad = {"samples": [*samples[:-1], {**samples[-1], "power_cap_w": -1}]}
    refused = await post_json(client, "/telemetry", bad)
    assert refused.status_code == 400
    assert refused.json()["Error"].startswith(f"samples[{count - 1}].power_cap_w")
    assert len(client.app.state.extender.telemetry) == 0
    response = await post_json(client, "/telemetry", body)
    assert response.status_code == 202 and response.json() == {"accepted": count}
    assert len(client.app.state.extender.telemetry) == count

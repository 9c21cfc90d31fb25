"""The extender through a real uvicorn server on loopback, started by ``eams extender serve``."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from eams.cli import main
from eams.scheduler.extender.schemas import ExtenderFilterResult, HostPriorityList
from tests.extender.conftest import args_full, args_names, node_object, pod_object, sample
from tests.servers.uvicorn import ExtenderServer

pytestmark = pytest.mark.integration


@pytest.fixture
def server(tmp_path: Path, calibrations_dir: Path):
    srv = ExtenderServer(
        tmp_path / "extender.log", mode="active", calibrations_dir=calibrations_dir, window_ms=50
    )
    srv.start()
    yield srv
    srv.stop()


def test_served_over_a_socket(server: ExtenderServer) -> None:
    import time

    names = ["node-a", "node-b", "node-c"]
    with httpx.Client(base_url=server.url, timeout=5.0) as http:
        assert http.get("/readyz").status_code == 503
        now_s = time.time()
        assert (
            http.post(
                "/telemetry", json={"samples": [sample(n, now_s, 0.6) for n in names]}
            ).status_code
            == 202
        )
        assert http.get("/readyz").json()["missing"] == [
            "no node known yet (no watch list, no POST /nodes)"
        ]
        assert (
            http.post("/nodes", json={"items": [node_object(n) for n in names]}).status_code == 202
        )
        assert http.get("/readyz").json() == {"ready": True, "missing": []}
        nodes = [node_object(n) for n in names]
        full = http.post("/filter", json=args_full(pod_object("p1"), nodes))
        assert ExtenderFilterResult.model_validate_json(full.content).Nodes.items == nodes
        scores = HostPriorityList.validate_json(
            http.post("/prioritize", json=args_names(pod_object("p1"), names)).content
        )
        assert {s.Host: s.Score for s in scores}["node-a"] == 10
        garbage = http.post(
            "/prioritize", content=b"\x00\xff{", headers={"Content-Type": "application/json"}
        )
        assert garbage.status_code == 400
        metrics = http.get("/metrics").text
        assert "eams_extender_clearings_total 1.0" in metrics


def test_bad_calibration_folder_is_one_line_and_exit_1(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "node-x.json").write_text("{broken")
    argv = ["eams", "extender", "serve", "--calibrations", str(tmp_path), "--port", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        main()  # the real entry point: EamsError → one line on stderr, exit 1
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("eams: error: calibrations_dir:") and "node-x.json" in err
    assert len(err.strip().splitlines()) == 1

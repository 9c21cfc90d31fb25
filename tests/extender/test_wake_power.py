"""The wake term charges the calibration's wake power, not the line's intercept (issue 16, 5).

Two empty nodes with the same cores, speed and slope (100 W from idle to full): node-a idles
at 40 W although the line through its loaded levels starts at 90 W (an idle step, as many
SPECpower servers show), node-b idles at 60 W on its line. Waking node-a costs 40 W for the
pod's runtime, node-b 60 W: the auction should wake node-a. Charging the intercepts (90 vs
60 W) picked node-b. Through the extender's HTTP interface (in-process ASGI, as every extender
test): calibration files from real fits, ``POST /telemetry``, ``POST /prioritize``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from eams.calibrate.calfile import Calibration, FitSummary, load_calibration, save_calibration
from eams.calibrate.fit import fit_linear
from tests.extender.conftest import args_names, node_object, pod_object, post_json, sample

pytestmark = pytest.mark.anyio

NAMES = ["node-a", "node-b"]
LEVELS = np.linspace(0.0, 1.0, 11)


def calibrate(folder: Path, node: str, intercept_w: float, idle_w: float) -> Calibration:
    """A calibration fitted to idle + ten loaded levels on ``intercept_w + 100 W · u``."""
    wobble_w = np.array([0.0, 0.3, -0.2, 0.1, -0.3, 0.2, 0.0, -0.1, 0.3, -0.2, 0.1])
    power_w = intercept_w + 100.0 * LEVELS + wobble_w
    power_w[0] = idle_w
    calibration = Calibration(
        node=node,
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
        meter="snmp://127.0.0.1:1161",
        outlet=1,
        fit=FitSummary.from_result(fit_linear(LEVELS, power_w)),
        p_active_idle_w=idle_w,
        speed=1.0,
    )
    save_calibration(calibration, folder / f"{node}.json")
    return load_calibration(folder / f"{node}.json")


async def test_an_empty_node_is_charged_its_measured_idle_for_waking(
    make_client, clock, tmp_path: Path
) -> None:
    folder = tmp_path / "wake"
    folder.mkdir()
    stepped = calibrate(folder, "node-a", intercept_w=90.0, idle_w=40.0)
    level = calibrate(folder, "node-b", intercept_w=60.0, idle_w=60.0)
    assert stepped.p_idle_w == pytest.approx(90.0, abs=0.5) and stepped.wake_power_w == 40.0
    assert level.p_idle_w == pytest.approx(60.0, abs=0.5) and level.wake_power_w == 60.0
    client = await make_client(mode="active", window_ms=0, calibrations_dir=folder)
    await post_json(client, "/nodes", {"items": [node_object(n) for n in NAMES]})
    idle = [sample(n, clock() - 1.0, 0.6, utilisation=0.01) for n in NAMES]  # both empty
    assert (await post_json(client, "/telemetry", {"samples": idle})).status_code == 202
    scores = (await post_json(client, "/prioritize", args_names(pod_object("p"), NAMES))).json()
    assert {e["Host"]: e["Score"] for e in scores}["node-a"] == 10, scores

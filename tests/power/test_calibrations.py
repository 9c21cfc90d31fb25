"""A calibration's figures as the power policy takes them, by the node's method, and the
calibrations folder (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eams.calibrate.calfile import load_calibration, save_calibration
from eams.calibrate.powerstates.estimate import estimate
from eams.calibrate.powerstates.figures import node_figures
from eams.calibrate.powerstates.record import PowerStates, TransitionCost
from eams.scheduler.power.calibrations import read_folder
from eams.scheduler.power.errors import ManagerConfigError
from tests.calibrate.powerstates.test_measure import line_calibration
from tests.power.live import NOW


def _cost(time_s: float, energy_j: float, ready_s: float | None = None) -> TransitionCost:
    ready = None if ready_s is None else estimate([ready_s] * 3, 0.1)
    return TransitionCost(
        time_s=estimate([time_s] * 3, 0.1),
        energy_j=estimate([energy_j] * 3, 1.0),
        kubernetes_ready_s=ready,
    )


def _states(method: str) -> PowerStates:
    return PowerStates(
        measured_at=NOW, method=method, meter="snmp://***@pdu:161", outlet=1, repeats=3,
        p_off_w=estimate([1.5] * 3, 0.1), p_suspend_w=estimate([3.0] * 3, 0.1),
        suspend=_cost(2.0, 40.0), wake=_cost(4.0, 100.0, ready_s=9.0),
        shutdown=_cost(6.0, 150.0), boot=_cost(30.0, 900.0),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        # wol: suspend-to-RAM and its wake, until Ready (9 s) rather than the agent (4 s)
        ("wol", (3.0, 9.0, 100.0, 2.0, 40.0)),
        # ssh: soft-off (P_off) and the boot; outlet: 0 W switched off, the same boot
        ("ssh", (1.5, 30.0, 900.0, 6.0, 150.0)),
        ("outlet", (0.0, 30.0, 900.0, 6.0, 150.0)),
    ],
)
def test_the_sleep_state_follows_the_method(tmp_path: Path, method, expected) -> None:
    cal = load_calibration(line_calibration(tmp_path / "n.json")).with_power_states(_states(method))
    figures = node_figures(cal)
    keys = ("sleep_power_w", "wake_time_s", "wake_energy_j", "suspend_time_s", "suspend_energy_j")
    assert tuple(figures[k] for k in keys) == pytest.approx(expected)
    assert (figures["p_idle_w"], figures["p_max_w"]) == pytest.approx((40.0, 90.0), abs=0.5)


def test_an_unmeasured_node_has_no_sleep_state(tmp_path: Path) -> None:
    figures = node_figures(load_calibration(line_calibration(tmp_path / "n.json")))
    assert figures["sleep_power_w"] is None and figures["wake_energy_j"] is None


def test_the_folder_skips_partial_sweeps_and_refuses_a_node_twice(tmp_path: Path) -> None:
    line_calibration(tmp_path / "a.json", "a")
    (tmp_path / "b.partial.json").write_text("{not json")
    assert set(read_folder(tmp_path)) == {"a"}
    save_calibration(load_calibration(tmp_path / "a.json"), tmp_path / "again.json")
    with pytest.raises(
        ManagerConfigError, match=r"a\.json and again\.json both calibrate node 'a'"
    ):
        read_folder(tmp_path)
    (tmp_path / "again.json").unlink()
    (tmp_path / "bad.json").write_text("[]")
    with pytest.raises(ManagerConfigError, match=r"bad\.json"):
        read_folder(tmp_path)

"""Schema 2: power states in the calibration file, their estimates and bounds (no network)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from eams.calibrate.calfile import load_calibration, save_calibration
from eams.calibrate.errors import CalibrationFileError
from eams.calibrate.powerstates.estimate import estimate
from eams.calibrate.powerstates.record import PowerStates, TransitionCost
from eams.calibrate.powerstates.trace import PowerTrace, Sample
from tests.calibrate.powerstates.test_measure import line_calibration

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _states(method: str = "wol") -> PowerStates:
    cost = TransitionCost(time_s=estimate([2.0, 2.1, 1.9], 0.1), energy_j=estimate([60, 61, 59], 5))
    return PowerStates(
        measured_at=NOW, method=method, meter="snmp://***@pdu:161", outlet=1, repeats=3,
        p_off_w=estimate([1.0, 1.0, 1.0], 0.5), p_suspend_w=estimate([3.0, 3.0, 4.0], 0.5),
        wake=cost, boot=cost.model_copy(update={"energy_j": estimate([75, 74, 76], 5)}),
    )  # fmt: skip


def test_power_states_make_schema_2_and_round_trip(tmp_path: Path) -> None:
    path = line_calibration(tmp_path / "n.json")
    cal = load_calibration(path)
    assert cal.schema_version == 1 and "power_states" not in json.loads(path.read_text())
    assert cal.sleep_power_w is None and cal.wake_energy_j is None
    updated = cal.with_power_states(_states())
    save_calibration(updated, path)
    loaded = load_calibration(path)
    assert loaded == updated and loaded.schema_version == 2
    assert loaded.fit == cal.fit  # everything else kept
    assert loaded.sleep_power_w == pytest.approx(10 / 3) and loaded.wake_energy_j == 60.0


@pytest.mark.parametrize(
    ("method", "sleep_w", "wake_j"), [("ssh", 1.0, 75.0), ("outlet", 0.0, 75.0)]
)
def test_sleep_power_and_wake_energy_follow_the_method(method, sleep_w, wake_j) -> None:
    states = _states(method)
    assert (states.sleep_power_w, states.wake_energy_j) == (sleep_w, wake_j)


def test_a_schema_1_file_with_power_states_is_refused(tmp_path: Path) -> None:
    path = line_calibration(tmp_path / "n.json")
    data = json.loads(save_calibration(load_calibration(path).with_power_states(_states()), path)
                      .read_text())  # fmt: skip
    data["schema_version"] = 1
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationFileError, match=r"power_states needs schema_version 2, not 1"):
        load_calibration(path)


def test_an_estimate_holds_its_value_and_needs_three_repeats() -> None:
    same = estimate([2.0, 2.0, 2.0], 0.5)
    assert same.ci95 == (1.5, 2.5) and same.spread == 0.0
    spread = estimate([1.0, 2.0, 3.0], 0.0)
    assert spread.ci95 == pytest.approx((2 - 4.303 / np.sqrt(3), 2 + 4.303 / np.sqrt(3)), rel=1e-3)
    with pytest.raises(ValueError, match="at least 3"):
        estimate([1.0, 2.0], 0.1)


def test_the_energy_bound_holds_a_step_between_readings() -> None:
    """A step from 3 W to 30 W at an instant the readings do not see: the trapezoid sum errs
    by at most the bound, wherever the step falls between two readings."""
    for step_at in np.linspace(1.01, 1.99, 9):
        trace = PowerTrace(meter=None, outlet=1, lag_s=0.0)  # type: ignore[arg-type]
        for t in np.arange(0.0, 5.0, 1.0):
            power = 3.0 if t < step_at else 30.0
            trace.samples.append(Sample(t, t + 0.01, power, below_floor=True))
        truth = 3.0 * (step_at - 0.5) + 30.0 * (4.5 - step_at)
        energy, bound = trace.energy_j(0.5, 4.5)
        assert abs(energy - truth) <= bound
        assert bound < 30.0 * 4.0  # below the trivial bound (the highest draw all along)

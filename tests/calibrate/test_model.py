"""LinearPowerModel (the study's §5.1 line) and PowerCurve (the line with the idle step):
vectorised, refusing impossible values."""

import numpy as np
import pytest

from eams.calibrate.errors import ModelError
from eams.calibrate.model import LinearPowerModel, PowerCurve


def test_power_is_the_line_for_scalars_and_arrays() -> None:
    model = LinearPowerModel(p_idle_w=20.0, p_max_w=65.0)
    assert model.power_w(0.0) == 20.0
    assert model.power_w(1.0) == 65.0
    assert isinstance(model.power_w(0.5), float)
    grid = np.array([[0.0, 0.25], [0.5, 1.0]])
    np.testing.assert_allclose(model.power_w(grid), [[20.0, 31.25], [42.5, 65.0]])
    assert model.dynamic_w == 45.0


def test_unknown_utilisation_gives_unknown_power() -> None:
    out = LinearPowerModel(10.0, 30.0).power_w([0.5, np.nan])
    assert out[0] == 20.0 and np.isnan(out[1])


@pytest.mark.parametrize("u", [-0.1, 1.5, 50.0])
def test_utilisation_outside_unit_interval_is_refused(u: float) -> None:
    with pytest.raises(ModelError, match="outside"):
        LinearPowerModel(10.0, 30.0).power_w([0.2, u])


@pytest.mark.parametrize(
    ("p_idle", "p_max", "match"),
    [(float("nan"), 30.0, "finite"), (-1.0, 30.0, "negative"), (40.0, 30.0, "below")],
)
def test_impossible_models_are_refused(p_idle: float, p_max: float, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        LinearPowerModel(p_idle, p_max)


LINE = LinearPowerModel(p_idle_w=63.0, p_max_w=150.0)


def test_the_curve_without_a_step_is_exactly_the_line() -> None:
    curve = PowerCurve(LINE)
    grid = np.linspace(0.0, 1.0, 101)
    assert not curve.stepped
    assert np.array_equal(curve.power_w(grid), LINE.power_w(grid))
    assert curve.power_w(0.3) == LINE.power_w(0.3) and isinstance(curve.power_w(0.3), float)
    assert curve.p_max_w == LINE.p_max_w


def test_a_stepped_curve_runs_from_active_idle_to_the_line_at_u1_and_is_the_line_above() -> None:
    curve = PowerCurve(LINE, p_active_idle_w=50.0, u_step=0.1)
    assert curve.power_w(0.0) == 50.0
    assert curve.power_w(0.1) == pytest.approx(LINE.power_w(0.1))
    assert curve.power_w(0.05) == pytest.approx((50.0 + LINE.power_w(0.1)) / 2)
    above = np.linspace(0.1, 1.0, 50)
    np.testing.assert_array_equal(curve.power_w(above), LINE.power_w(above))
    out = curve.power_w([0.02, np.nan])
    assert out[0] < LINE.power_w(0.02) and np.isnan(out[1])
    with pytest.raises(ModelError, match="outside"):
        curve.power_w([0.05, 1.2])


def test_the_sensitivities_rebuild_the_power_and_match_finite_differences() -> None:
    u = np.array([0.0, 0.03, 0.1, 0.4, 1.0])
    h = 1e-3

    def power(p_idle: float, p_max: float, active: float) -> np.ndarray:
        return PowerCurve(LinearPowerModel(p_idle, p_max), active, 0.1).power_w(u)

    d_idle, d_max, d_active = PowerCurve(LINE, 50.0, 0.1).sensitivities(u)
    np.testing.assert_allclose(63.0 * d_idle + 150.0 * d_max + 50.0 * d_active, power(63, 150, 50))
    for got, bumped in (
        (d_idle, (power(63 + h, 150, 50) - power(63 - h, 150, 50))),
        (d_max, (power(63, 150 + h, 50) - power(63, 150 - h, 50))),
        (d_active, (power(63, 150, 50 + h) - power(63, 150, 50 - h))),
    ):
        np.testing.assert_allclose(got, bumped / (2 * h), atol=1e-9)
    assert np.isnan(PowerCurve(LINE).sensitivities(np.nan)[2])


@pytest.mark.parametrize(
    ("active", "u1", "match"),
    [(50.0, None, "both"), (200.0, 0.1, "at most"), (50.0, 0.0, "outside"), (-1.0, 0.1, "≥ 0")],
)
def test_impossible_curves_are_refused(active: float, u1: float | None, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        PowerCurve(LINE, p_active_idle_w=active, u_step=u1)

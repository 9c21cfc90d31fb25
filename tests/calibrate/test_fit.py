"""The robust line fit: known lines, noise, outliers, interval coverage, curvature, the idle
step, refusals."""

import csv

import numpy as np
import pytest

from eams.calibrate.errors import FitError
from eams.calibrate.fit import fit_linear, fit_linear_batch

P_IDLE, P_MAX = 20.0, 65.0


def _line(u: np.ndarray) -> np.ndarray:
    return P_IDLE + (P_MAX - P_IDLE) * u


def test_exact_line_is_recovered() -> None:
    u = np.linspace(0, 1, 11)
    result = fit_linear(u, _line(u))
    assert result.p_idle_w == pytest.approx(P_IDLE, abs=1e-9)
    assert result.p_max_w == pytest.approx(P_MAX, abs=1e-9)
    assert result.r2 == pytest.approx(1.0)
    assert result.n_points == 11 and result.n_levels == 11
    assert result.linear_ok
    assert result.p_active_idle_w == pytest.approx(P_IDLE)


def test_noisy_line_has_intervals_of_the_ordinary_size() -> None:
    rng = np.random.default_rng(7)
    u = np.repeat(np.linspace(0, 1, 6), 4)
    result = fit_linear(u, _line(u) + rng.normal(0, 1.0, u.size))
    # Ordinary least squares at σ = 1 W: se(P_idle) = se(P_max) ≈ 0.38 W here, so the 95 %
    # half-width is ≈ 0.8 W; a robust fit of clean data should be close to that.
    for (lo, hi), truth in ((result.p_idle_ci95_w, P_IDLE), (result.p_max_ci95_w, P_MAX)):
        assert 0.4 < (hi - lo) / 2 < 1.6
        assert abs((lo + hi) / 2 - truth) < 1.5
    assert 0.5 < result.rmse_w < 1.5
    assert [lv.n_points for lv in result.levels] == [4] * 6
    assert sum(lv.error_w * lv.n_points for lv in result.levels) == pytest.approx(
        -sum(result.residuals_w), abs=1e-6
    )


def test_a_bad_reading_does_not_move_the_line() -> None:
    rng = np.random.default_rng(3)
    u = np.linspace(0, 1, 11)
    power = _line(u) + rng.normal(0, 0.5, u.size)
    clean = fit_linear(u, power)
    power[4] += 150.0  # a meter glitch
    power[9] = 0.5 * power[9]
    robust = fit_linear(u, power)
    assert robust.weights[4] == 0.0 and robust.weights[9] == 0.0
    assert robust.p_idle_w == pytest.approx(clean.p_idle_w, abs=0.5)
    assert robust.p_max_w == pytest.approx(clean.p_max_w, abs=0.5)
    assert robust.p_idle_ci95_w[0] < P_IDLE < robust.p_idle_ci95_w[1]
    assert robust.levels[4].weight == 0.0
    ordinary = np.polyfit(u, power, 1)
    assert abs(ordinary[1] - P_IDLE) > 2 * abs(robust.p_idle_w - P_IDLE)


@pytest.mark.parametrize(
    ("levels", "replicates", "lowest"), [(4, 1, 0.93), (6, 1, 0.91), (11, 1, 0.93), (11, 3, 0.93)]
)
def test_interval_coverage_is_near_95_percent(levels: int, replicates: int, lowest: float) -> None:
    rng = np.random.default_rng(levels * 10 + replicates)
    trials = 3000
    u = np.tile(np.repeat(np.linspace(0, 1, levels), replicates), (trials, 1))
    batch = fit_linear_batch(u, _line(u) + rng.normal(0, 1.0, u.shape))
    for ci, truth in ((batch.p_idle_ci_w, P_IDLE), (batch.p_max_ci_w, P_MAX)):
        coverage = np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
        # 3000 trials: binomial standard error 0.4 %. At 5–6 points the robust intervals are
        # measured a little narrow (93 %), as documented in eams.calibrate.fit.
        assert lowest <= coverage <= 0.97, coverage
    # Two tests at a nominal 1 % each on a true line: curvature (measured 0.03–0.5 %) and the
    # idle step (0.9–2.3 %: the robust intervals are a little narrow at 5–6 points, above).
    assert np.mean(batch.linear_ok) > 0.97


@pytest.mark.parametrize("levels", [5, 6, 11])
def test_an_idle_level_far_off_the_line_does_not_move_it_and_is_called_a_step(levels: int) -> None:
    """Idle 60 W above the line (the point of highest leverage): the line is the loaded
    levels', and the idle level is reported as a step, not rejected as a bad reading."""
    rng = np.random.default_rng(levels)
    u = np.tile(np.linspace(0, 1, levels), (500, 1))
    power = _line(u) + rng.normal(0, 1.0, u.shape)
    power[:, 0] += 60.0
    batch = fit_linear_batch(u, power)
    assert np.median(np.abs(batch.p_idle_w - P_IDLE)) < 1.0
    assert np.median(np.abs(batch.p_max_w - P_MAX)) < 1.0
    assert np.mean(batch.idle_stepped) > 0.9
    assert np.all(batch.linear_ok[batch.idle_stepped] == False)  # noqa: E712
    assert np.median(batch.idle_step_w) == pytest.approx(60.0, abs=2.0)


def test_three_wild_points_of_eleven_do_not_break_it() -> None:
    # SPECpower row 85 of the shared table: 832, 882, 943 W where ~100 W belongs (a typo).
    u = np.linspace(0, 1, 11)
    power = _line(u)
    power[:3] += 800.0
    result = fit_linear(u, power)
    assert result.p_idle_w == pytest.approx(P_IDLE, abs=1e-6)
    assert result.weights[:3] == (0.0, 0.0, 0.0)


def test_batch_and_single_fits_agree_and_nan_marks_missing() -> None:
    rng = np.random.default_rng(5)
    u = np.linspace(0, 1, 8)
    power = _line(u) + rng.normal(0, 1, 8)
    single = fit_linear(u[:7], power[:7])
    batch = fit_linear_batch(np.vstack([u, u]), np.vstack([power, np.append(power[:7], np.nan)]))
    assert batch.n_points.tolist() == [8, 7]
    assert batch.p_idle_w[1] == pytest.approx(single.p_idle_w)
    assert batch.p_max_ci_w[1] == pytest.approx(single.p_max_ci95_w)


def test_a_bent_curve_is_flagged_and_explained() -> None:
    u = np.repeat(np.linspace(0, 1, 11), 3)
    rng = np.random.default_rng(11)
    power = 20 + 80 * np.sqrt(u) + rng.normal(0, 0.5, u.size)  # concave, like many servers
    result = fit_linear(u, power)
    assert not result.linear_ok
    assert result.curvature_p_value is not None and result.curvature_p_value < 0.01
    assert "wrong model" in result.linear_reason and "concave" in result.linear_reason


def test_tiny_significant_curvature_is_not_material() -> None:
    u = np.repeat(np.linspace(0, 1, 11), 20)
    rng = np.random.default_rng(2)
    power = 20 + 45 * u - 1.0 * u * u + rng.normal(0, 0.05, u.size)
    result = fit_linear(u, power)
    assert result.curvature_p_value is not None and result.curvature_p_value < 0.01
    assert result.linear_ok and "within 5 %" in result.linear_reason


def test_three_levels_are_fitted_but_curvature_is_not_tested() -> None:
    result = fit_linear([0.0, 0.5, 1.0, 1.0], [20.0, 42.0, 65.0, 65.5])
    assert result.curvature_p_value is None and "Not tested" in result.linear_reason


def test_wake_power_prefers_measured_idle() -> None:
    u = np.array([0.0, 0.1, 0.3, 0.5, 0.7, 1.0])
    power = np.array([12.0, 30.0, 36.0, 42.0, 48.0, 57.0])  # steps up from idle
    payload = fit_linear(u, power).to_json()
    assert payload["p_active_idle_w"] == 12.0 and payload["wake_power_w"] == 12.0
    assert "measured active idle 12.0 W" in payload["wake_power_note"]
    assert payload["p_idle_w"] > 20


def test_an_idle_step_is_named_with_its_size_and_the_idle_is_kept() -> None:
    """A server whose active idle sits far below the line through its loaded levels (the
    SPECpower pattern): not a straight line, with a sentence naming the step and its size."""
    u = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    noise_w = np.array([0.0, 0.4, -0.3, 0.2, -0.5, 0.1, 0.3, -0.2, 0.4, -0.4, 0.2])
    power = 90.0 + 100.0 * u + noise_w
    power[0] = 50.0
    result = fit_linear(u, power)
    assert not result.linear_ok
    assert result.linear_reason.startswith(
        "A straight line is the wrong model at idle: the measured active idle 50.0 W sits "
    )
    assert "below the line through the loaded levels" in result.linear_reason
    assert result.idle_step_w == pytest.approx(-40.0, abs=1.0)
    assert result.idle_step_p_value is not None and result.idle_step_p_value < 1e-6
    assert result.p_idle_w == pytest.approx(90.0, abs=1.0)  # the loaded levels' line
    assert result.p_active_idle_w == 50.0
    payload = result.to_json()
    assert payload["wake_power_w"] == 50.0 and payload["idle_step_w"] == result.idle_step_w


def test_an_idle_on_the_line_is_used_by_it_and_says_so() -> None:
    rng = np.random.default_rng(4)
    u = np.linspace(0, 1, 11)
    result = fit_linear(u, _line(u) + rng.normal(0, 0.5, u.size))
    assert result.linear_ok and result.levels[0].weight == 1.0
    assert "within that line's uncertainty there: the line uses it" in result.linear_reason


def test_the_idle_level_can_be_named_when_its_utilisation_is_not_zero() -> None:
    """A sweep measures utilisation: its idle level is rarely at u = 0 exactly."""
    u = np.array([0.02, 0.1, 0.3, 0.5, 0.7, 1.0])
    power = np.array([12.0, 30.0, 36.0, 42.0, 48.0, 57.0])
    named = fit_linear(u, power, idle=[True, False, False, False, False, False])
    assert named.p_active_idle_w == 12.0 and not named.linear_ok
    unnamed = fit_linear(u, power)
    assert unnamed.p_active_idle_w is None and unnamed.idle_step_w is None


def test_specpower_servers_idle_is_never_thrown_away(shared_data) -> None:
    """Every SPECpower_ssj2008 server of the shared data: an idle point the line does not use
    is always a step verdict (never a silent weight 0), and a step is never called linear."""
    levels = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
    us, ps = [], []
    with (shared_data / "specpower/specpower_load_power_table_2023_extract.csv").open() as f:
        for row in csv.DictReader(f):
            ops = np.array([float(row[f"ssj_ops_{lv}pct"]) for lv in levels])
            us.append(np.concatenate([[0.0], ops / ops[-1]]))
            watts = [float(row[f"watts_{lv}pct"]) for lv in levels]
            ps.append([float(row["watts_active_idle"]), *watts])
    batch = fit_linear_batch(np.array(us), np.array(ps))
    unused = batch.weights[:, 0] == 0.0
    assert np.array_equal(unused, batch.idle_stepped)
    assert not np.any(batch.linear_ok & batch.idle_stepped)
    # Before (issue 16): 81 of 707 idle points had weight 0 with no word said, 99 servers with a
    # significant and material step were called straight lines.
    assert batch.idle_stepped.sum() > 80


@pytest.mark.parametrize(
    ("u", "power", "kwargs", "match"),
    [
        ([0, 0.5, np.nan, 1], [1, 2, 3, 4], {}, r"point 2, column 'utilization': nan"),
        ([0, 0.5, 0.7, 1], [1, np.inf, 3, 4], {}, r"point 1, column 'power_w'"),
        ([0, 50, 70, 100], [1, 2, 3, 4], {}, r"point 1, column 'utilization': 50 is outside"),
        ([0, 0.5, 1], [0.0, 40.0, 60.0], {"outlet": 4}, r"outlet 4: 1 of 3 .*point 0"),
        ([0, 0.5, 1], [45.0, 60.0, 80.0], {"floor_w": 50, "outlet": 2}, r"outlet 2: .*floor of 50"),
    ],
)
def test_bad_points_are_refused_naming_point_and_column(
    u: list, power: list, kwargs: dict, match: str
) -> None:
    with pytest.raises(FitError, match=match):
        fit_linear(u, power, **kwargs)


def test_two_levels_are_refused() -> None:
    with pytest.raises(FitError, match="only 2 distinct level"):
        fit_linear([0, 0, 1, 1], [10, 11, 30, 31])


def test_two_levels_left_after_rejection_give_unknown_not_zero_uncertainty() -> None:
    # A saturated node: three levels at u = 1.0, two a hair below, one of them off.
    u = [0.99754, 0.99756, 1.0, 1.0, 1.0]
    result = fit_linear(u, [179.8, 179.8001, 180.0, 180.0, 180.0])
    assert result.p_idle_ci95_w is None and result.p_max_ci95_w is None
    assert result.to_json()["p_idle_ci95_w"] is None


def test_meter_resolution_bounds_the_intervals_from_below() -> None:
    # A 1 W meter reading a steady 80.4 + 100·u W: every level rounds the same way, the points
    # lie exactly on a line 0.4 W off, and scatter alone would claim certainty.
    u = np.linspace(0, 1, 5)
    readings = np.round(80.4 + 100 * u)
    blind = fit_linear(u, readings)
    assert not blind.p_idle_ci95_w[0] <= 80.4 <= blind.p_idle_ci95_w[1]
    aware = fit_linear(u, readings, resolution_w=1.0)
    assert aware.p_idle_ci95_w[0] <= 80.4 <= aware.p_idle_ci95_w[1]
    assert aware.p_max_ci95_w[0] <= 180.4 <= aware.p_max_ci95_w[1]

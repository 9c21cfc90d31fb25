"""EnergyModel: the study's §5.1 marginal energy, its terms and its broadcasting."""

import numpy as np
import pytest

from eams.calibrate.energy import EnergyModel
from eams.calibrate.model import LinearPowerModel


def _two_nodes() -> EnergyModel:
    # the study's worked example: 32-core nodes A (140 W range, speed 1), B (220 W, speed 1.5)
    return EnergyModel(
        p_idle_w=np.array([100.0, 100.0]),
        p_max_w=np.array([240.0, 320.0]),
        cores=np.array([32.0, 32.0]),
        speed=np.array([1.0, 1.5]),
    )


def test_worked_example_is_63_vs_66_kj_exactly() -> None:
    model = _two_nodes()
    busy = np.array([False, False])
    assert model.runtime_s(3600.0).tolist() == [3600.0, 2400.0]
    assert model.marginal_energy_j(4.0, 3600.0, busy).tolist() == [63_000.0, 66_000.0]


def test_an_empty_node_also_pays_its_idle_power_for_the_runtime() -> None:
    model = _two_nodes()
    woken = model.marginal_energy_j(4.0, 3600.0, np.array([True, False]))
    assert woken.tolist() == [63_000.0 + 100.0 * 3600.0, 66_000.0]
    assert model.wake_power_w(np.array([True, False])).tolist() == [100.0, 0.0]
    assert model.added_power_w(4.0, np.array([True, False])).tolist() == [117.5, 27.5]


def test_the_wake_term_charges_the_calibration_s_wake_power_not_the_intercept() -> None:
    """A node idling at 40 W below its line's 100 W intercept (an idle step) is charged 40 W
    for waking; the dynamic term still follows the line."""
    base = _two_nodes()
    model = EnergyModel(
        base.p_idle_w, base.p_max_w, base.cores, base.speed, np.array([40.0, 100.0])
    )
    assert model.wake_power_w(np.array([True, True])).tolist() == [40.0, 100.0]
    assert model.marginal_energy_j(4.0, 3600.0, np.array([True, False])).tolist() == [
        63_000.0 + 40.0 * 3600.0,
        66_000.0,
    ]
    assert model.dynamic_power_w(4.0).tolist() == base.dynamic_power_w(4.0).tolist()


def test_the_dynamic_term_is_the_jump_of_the_calibrated_line() -> None:
    """ΔP of a pod on a running node equals P(u + c/C) − P(u) of the node's fitted line."""
    line = LinearPowerModel(p_idle_w=55.0, p_max_w=131.0)
    model = EnergyModel(np.array([55.0]), np.array([131.0]), np.array([12.0]), np.array([1.0]))
    for u, c in [(0.0, 3.0), (0.25, 1.5), (0.5, 6.0)]:
        jump = line.power_w(u + c / 12.0) - line.power_w(u)
        assert model.dynamic_power_w(c)[0] == pytest.approx(jump, rel=1e-12)


def test_pods_against_nodes_broadcast_to_a_matrix() -> None:
    rng = np.random.default_rng(3)
    n, j = 7, 5
    p_idle = rng.uniform(40, 160, n)
    model = EnergyModel(
        p_idle,
        p_idle + rng.uniform(60, 300, n),
        rng.choice([8.0, 32.0], n),
        rng.uniform(0.7, 1.6, n),
    )
    empty = rng.random(n) < 0.5
    cores, reference_s = rng.choice([1.0, 2.0, 4.0], j), rng.uniform(60, 3600, j)
    matrix = model.marginal_energy_j(cores[:, None], reference_s[:, None], empty)
    assert matrix.shape == (j, n) and (matrix > 0).all()
    for k in range(j):  # each row is the one-pod call, bit for bit
        assert np.array_equal(matrix[k], model.marginal_energy_j(cores[k], reference_s[k], empty))
    runtime = model.runtime_s(reference_s[:, None])
    np.testing.assert_allclose(
        matrix, model.added_power_w(cores[:, None], empty) * runtime, rtol=1e-12
    )


def test_sleep_power_and_wake_energy_change_only_the_wake_term() -> None:
    """With P_sleep and E_wake (issue 13) an empty node adds P_idle − P_sleep while the pod
    runs, plus E_wake once; a busy node's ΔE is unchanged; NaN (not measured) is today's term."""
    base = _two_nodes()
    slept = EnergyModel(
        base.p_idle_w,
        base.p_max_w,
        base.cores,
        base.speed,
        p_sleep_w=np.array([3.0, np.nan]),
        wake_energy_j=np.array([450.0, np.nan]),
    )
    empty = np.array([True, True])
    assert slept.wake_power_w(empty).tolist() == [97.0, 100.0]
    assert slept.wake_cost_j(empty).tolist() == [450.0, 0.0]
    assert slept.marginal_energy_j(4.0, 3600.0, empty).tolist() == [
        63_000.0 + 97.0 * 3600.0 + 450.0,
        66_000.0 + 100.0 * 2400.0,
    ]
    busy = np.array([False, False])
    assert slept.marginal_energy_j(4.0, 3600.0, busy).tolist() == [63_000.0, 66_000.0]
    assert base.wake_cost_j(empty).tolist() == [0.0, 0.0]
    assert base.marginal_energy_j(4.0, 3600.0, empty).tolist() == [
        63_000.0 + 100.0 * 3600.0,
        66_000.0 + 100.0 * 2400.0,
    ]


def test_the_power_state_columns_broadcast_like_the_others() -> None:
    model = EnergyModel(
        np.array([10.0, 20.0]),
        np.array([30.0, 60.0]),
        np.array([4.0, 4.0]),
        np.array([1.0, 1.0]),
        p_sleep_w=np.array([1.0, 2.0]),
        wake_energy_j=np.array([5.0, 7.0]),
    )
    pods = np.array([[1.0], [2.0], [4.0]])  # (J, 1)
    result = model.marginal_energy_j(pods, np.array([[10.0], [10.0], [10.0]]), True)
    assert result.shape == (3, 2)
    assert result[0].tolist() == [20 / 4 * 10 + 9 * 10 + 5, 40 / 4 * 10 + 18 * 10 + 7]

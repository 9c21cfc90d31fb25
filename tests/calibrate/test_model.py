"""LinearPowerModel: the study's §5.1 line, vectorised, refusing impossible values."""

import numpy as np
import pytest

from eams.calibrate.errors import ModelError
from eams.calibrate.model import LinearPowerModel


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

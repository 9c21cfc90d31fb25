"""Fixtures of the wall-power tests: simulated runs with a known hidden truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.wallpower.synth import RunPlan, packed, simulate, spread, write_calibrations

# Run B consolidates load towards n1/n4 (the most efficient dynamic ranges): a packing scheduler.
PACKED = {"n1": 0.8, "n2": 0.5, "n3": 0.2, "n4": 0.9, "n5": 0.3, "n6": 0.3}


@pytest.fixture(scope="session")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Calibration files fitted to the hidden curves (a correctly calibrated fleet)."""
    return write_calibrations(tmp_path_factory.mktemp("cal"))


@pytest.fixture(scope="session")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, dict]:
    """Run A (spread at 50 %) and run B (packed), 60 s at 1 Hz: dirs and true energies (Wh)."""
    root = tmp_path_factory.mktemp("runs")
    truth_a = simulate(RunPlan(spread(0.5), duration_s=60), root / "a")
    truth_b = simulate(RunPlan(packed(PACKED), duration_s=60, seed=2), root / "b")
    return root / "a", root / "b", truth_a, truth_b

"""The public names of ``eams.calibrate.wallpower`` (its ``__all__``) are pinned."""

import eams.calibrate.wallpower as wallpower

PUBLIC = {
    "InfluxUnreachable",
    "NodeModel",
    "Run",
    "RunDataError",
    "RunMismatchError",
    "RunSpec",
    "RunSpecError",
    "SavingCheck",
    "WallPowerError",
    "check_runs",
    "load_fleet",
    "load_run",
    "parse_run_spec",
    "write_report",
}


def test_public_names_are_pinned_and_importable() -> None:
    assert set(wallpower.__all__) == PUBLIC
    assert all(getattr(wallpower, name) is not None for name in PUBLIC)
    assert issubclass(wallpower.RunSpecError, wallpower.WallPowerError)

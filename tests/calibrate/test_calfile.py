"""Calibration files: round trip, the contract's properties, and refusals naming the field."""

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from eams.calibrate.calfile import calibration_from_sweep, load_calibration, save_calibration
from eams.calibrate.errors import CalibrationFileError, FitError
from eams.calibrate.sweeprecord import SweepRecord
from tests.sweeps import sweep_record

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def _record(powers: dict[int, list[float]], floor_w: float | None = None) -> SweepRecord:
    return sweep_record(
        "mini-1",
        powers,
        started_at=T0,
        utilisation=lambda pct: 0.02 + 0.96 * pct / 100,
        bogo_ops_per_pct=18.0,
        meter="snmp://s3cret@127.0.0.1:16100",
        outlet=3,
        floor_w=floor_w,
    )


def _powers(p_idle: float = 9.0, p_max: float = 31.0) -> dict[int, list[float]]:
    rng = np.random.default_rng(1)
    return {
        pct: list(p_idle + (p_max - p_idle) * (0.02 + 0.96 * pct / 100) + rng.normal(0, 0.2, 3))
        for pct in (0, 20, 40, 60, 80, 100)
    }


def test_round_trip_keeps_everything_and_redacts_the_meter(tmp_path: Path) -> None:
    cal = calibration_from_sweep(
        _record(_powers()), created_at=T0, reference="mini-0", reference_bogo_ops_per_s=900.0
    )
    path = save_calibration(cal, tmp_path / "calibration" / "mini-1.json")
    text = path.read_text()
    assert "s3cret" not in text and "snmp://***@127.0.0.1:16100" in text
    loaded = load_calibration(path, expect_node="mini-1")
    assert loaded == cal
    assert loaded.schema_version == 1
    assert loaded.p_idle_w == pytest.approx(9.0, abs=0.6)
    assert loaded.p_max_w == pytest.approx(31.0, abs=0.6)
    assert loaded.p_idle_ci95_w[0] < loaded.p_idle_w < loaded.p_idle_ci95_w[1]
    assert loaded.model().power_w(1.0) == loaded.p_max_w
    assert loaded.speed == pytest.approx(1800.0 / 900.0)
    assert loaded.p_active_idle_w == pytest.approx(np.mean(_powers()[0]))
    assert loaded.wake_power_w == loaded.p_active_idle_w
    assert len(loaded.sweep.levels[2].samples) == 3
    assert loaded.sweep.levels[2].samples[0].read_at.tzinfo is not None


def test_own_reference_means_speed_one() -> None:
    cal = calibration_from_sweep(_record(_powers()), created_at=T0)
    assert cal.speed == 1.0 and cal.speed_reference.reference == "self"


def test_readings_under_the_floor_are_refused_naming_the_outlet() -> None:
    powers = {0: [0.0, 0.0], 50: [0.0, 0.0], 100: [60.0, 61.0]}  # an APC outlet under 50 W
    with pytest.raises(FitError, match=r"outlet 3: 2 of 3 .*level 0 %, level 50 %"):
        calibration_from_sweep(_record(powers, floor_w=50.0), created_at=T0)


def _saved(tmp_path: Path) -> tuple[Path, dict]:
    cal = calibration_from_sweep(_record(_powers()), created_at=T0)
    path = save_calibration(cal, tmp_path / "c.json")
    return path, json.loads(path.read_text())


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d["fit"].pop("p_max_w"), r"field 'fit.p_max_w': Field required"),
        (lambda d: d["fit"].update(p_max_w="lots"), r"field 'fit.p_max_w': Input should be"),
        (lambda d: d.update(schema_version=3), r"field 'schema_version': 3 is newer"),
        (lambda d: d.update(power_states={}), r"field 'power_states.measured_at': Field required"),
        (lambda d: d.update(schema_version=0), r"field 'schema_version'"),
        (lambda d: d.update(node=""), r"field 'node'"),
        (lambda d: d.update(surprise=1), r"field 'surprise': Extra inputs"),
        (lambda d: d["sweep"]["levels"][1].update(utilisation=1.7), r"sweep.levels.1.utilisation"),
        (lambda d: d.update(created_at="2026-11-29T09:00:00"), r"field 'created_at'.*timezone"),
        (lambda d: d.update(meter="http://pdu"), r"field 'meter'.*unknown scheme"),
    ],
)
def test_malformed_files_are_refused_naming_the_field(tmp_path: Path, edit, match: str) -> None:
    path, data = _saved(tmp_path)
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationFileError, match=match):
        load_calibration(path)


def test_every_malformed_field_is_named_in_one_message(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    data["fit"].pop("p_max_w")
    data["node"] = ""
    data["sweep"]["levels"][1]["utilisation"] = 1.7
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationFileError) as caught:
        load_calibration(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    for expected in (
        "field 'node': String should have at least 1 character",
        "field 'fit.p_max_w': Field required",
        "field 'sweep.levels.1.utilisation': Input should be less than or equal to 1",
    ):
        assert expected in message


def test_a_file_of_another_node_is_refused(tmp_path: Path) -> None:
    path, _ = _saved(tmp_path)
    with pytest.raises(CalibrationFileError, match=r"field 'node'.*'mini-1', not 'mini-2'"):
        load_calibration(path, expect_node="mini-2")


@pytest.mark.parametrize(
    ("content", "match"),
    [(None, "cannot read"), ("{not json", "not a JSON"), ("[1, 2]", "must be a JSON object")],
)
def test_unreadable_files_are_refused(tmp_path: Path, content: str | None, match: str) -> None:
    path = tmp_path / "c.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CalibrationFileError, match=match):
        load_calibration(path)


def test_a_busy_idle_level_is_not_active_idle() -> None:
    record = _record(_powers())
    busy = record.levels[0].model_copy(update={"utilisation": 0.35})
    cal = calibration_from_sweep(
        record.model_copy(update={"levels": [busy, *record.levels[1:]]}), created_at=T0
    )
    assert cal.p_active_idle_w is None
    assert cal.wake_power_w == cal.p_idle_w and "No measurement at u = 0" in cal.wake_power_note


def test_a_node_busy_with_other_work_is_named_as_the_reason() -> None:
    record = _record(_powers())
    saturated = [lv.model_copy(update={"utilisation": 1.0}) for lv in record.levels]
    with pytest.raises(FitError, match=r"node mini-1: .*only spanned 1.00–1.00 .*busy"):
        calibration_from_sweep(record.model_copy(update={"levels": saturated}), created_at=T0)


def test_loads_merged_at_saturation_are_named_as_other_work() -> None:
    # CI saw it with both cores busy: 0 % read 0.70, 50 % and 100 % both read 1.00 (span 0.30)
    record = _record({pct: _powers()[pct] for pct in (0, 60, 100)})
    merged = [
        lv.model_copy(update={"utilisation": 0.695652 if lv.commanded_pct == 0 else 1.0})
        for lv in record.levels
    ]
    with pytest.raises(FitError, match=r"spanned 0.70–1.00 .*3 loads measuring as 2: other work"):
        calibration_from_sweep(record.model_copy(update={"levels": merged}), created_at=T0)


def test_the_meter_resolution_is_read_from_the_samples() -> None:
    from eams.calibrate.calfile import reading_resolution_w

    assert reading_resolution_w(_record({0: [80.0, 81.0], 50: [130.0], 100: [180.0]})) == 1.0
    assert reading_resolution_w(_record({0: [80.0], 50: [80.0], 100: [80.0]})) is None


def test_loading_a_calibration_does_not_load_scipy() -> None:
    """The agent and the extender load calibrations; only fitting needs scipy (~76 MB)."""
    import subprocess
    import sys

    code = (
        "import sys; import eams.calibrate.calfile;"
        "print('scipy' in sys.modules, 'eams.calibrate.fit' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


SCHEMA1 = Path(__file__).parent / "schema1"
"""Schema-1 files written by eams before the fit result had one declaration (a FitResult
dataclass copied field by field into FitSummary): one from a sweep, one with unknown intervals."""


@pytest.mark.parametrize("name", ["swept.json", "unknown_intervals.json"])
def test_a_recorded_schema1_file_loads_and_saves_byte_for_byte(tmp_path: Path, name: str) -> None:
    recorded = SCHEMA1 / name
    saved = save_calibration(load_calibration(recorded), tmp_path / name)
    assert saved.read_bytes() == recorded.read_bytes()


def _layout(value: object) -> object:
    """The keys (in order) and value types of a JSON document, at every depth."""
    if isinstance(value, dict):
        return [(key, _layout(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_layout(item) for item in value]
    return type(value).__name__


def test_a_new_file_has_the_recorded_schema1_layout(tmp_path: Path) -> None:
    cal = calibration_from_sweep(
        _record(_powers()), created_at=T0, reference="mini-0", reference_bogo_ops_per_s=900.0
    )
    new = json.loads(save_calibration(cal, tmp_path / "new.json").read_text())
    assert _layout(new) == _layout(json.loads((SCHEMA1 / "swept.json").read_text()))
    assert new["fit"]["p_idle_w"] == pytest.approx(9.0, abs=0.6)


def test_the_file_keeps_the_fit_without_its_per_point_diagnostics() -> None:
    from eams.calibrate.fit import fit_linear
    from eams.calibrate.fitresult import FitResult, FitSummary

    result = fit_linear([0.0, 0.5, 1.0, 1.0], [10.0, 20.5, 30.0, 30.2])
    assert isinstance(result, FitSummary) and isinstance(result, FitResult)
    stored = FitSummary.from_result(result)
    assert type(stored) is FitSummary
    assert stored.model_dump() == result.model_dump(include=set(FitSummary.model_fields))
    assert len(result.residuals_w) == 4 and not hasattr(stored, "residuals_w")


def _stepped_powers() -> dict[int, list[float]]:
    """A SPECpower-shaped node: the loaded levels on 63 + 87·u W, active idle at 50 W."""
    powers = _powers(63.0, 150.0)
    powers[0] = list(50.0 + np.random.default_rng(2).normal(0, 0.2, 3))
    return powers


def test_a_node_idling_below_its_line_gets_the_stepped_curve() -> None:
    calibration = calibration_from_sweep(_record(_stepped_powers()), created_at=T0)
    assert not calibration.linear_ok and "wrong model at idle" in calibration.fit.linear_reason
    curve = calibration.model()
    u1 = 0.02 + 0.96 * 0.20  # the lowest loaded level's measured utilisation
    assert curve.stepped and curve.u_step == pytest.approx(u1)
    assert curve.power_w(0.0) == calibration.p_active_idle_w
    assert curve.power_w(u1) == pytest.approx(calibration.fit.model().power_w(u1))
    assert curve.power_w(0.6) == calibration.fit.model().power_w(0.6)
    assert calibration.p_idle_w == calibration.fit.p_idle_w  # P_idle stays the line's
    idle = np.array([s.power_w for s in calibration.sweep.levels[0].samples])
    assert calibration.p_active_idle_sd_w == pytest.approx(idle.std(ddof=1) / np.sqrt(3))


def test_a_node_on_its_line_and_a_file_without_its_sweep_keep_the_line() -> None:
    on_line = calibration_from_sweep(_record(_powers()), created_at=T0)
    assert not on_line.model().stepped
    assert on_line.model().power_w(0.0) == on_line.p_idle_w
    stepped = calibration_from_sweep(_record(_stepped_powers()), created_at=T0)
    no_sweep = stepped.model_copy(update={"sweep": None})
    assert not no_sweep.model().stepped and no_sweep.p_active_idle_sd_w is None
    assert no_sweep.model().power_w(0.0) == stepped.p_idle_w
